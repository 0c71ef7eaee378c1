import { graphql } from '../generated/index.js';

// Typed documents shared by the integration tests; `npm run codegen` types them from schema.graphql.

export const MessageFields = graphql(`
  fragment MessageFields on Message {
    id
    index
    role
    text
    generating
    tokenCount
    agentId
    parts {
      __typename
      ... on TextPart {
        text
      }
      ... on ToolCallPart {
        callId
        name
        arguments
      }
      ... on ToolResultPart {
        callId
        content
        isError
      }
      ... on AttachmentPart {
        attachment {
          id
          name
          mimeType
          size
        }
      }
    }
  }
`);

export const CreateSession = graphql(`
  mutation CreateSession($input: CreateSessionInput!) {
    createSession(input: $input) {
      id
      title
      settings
      metadata
      messageCount
      forkIndex
      parent {
        id
      }
      root {
        id
      }
    }
  }
`);

export const AppendMessages = graphql(`
  mutation AppendMessages($input: AppendMessagesInput!) {
    appendMessages(input: $input) {
      session {
        id
        messageCount
      }
      messages {
        ...MessageFields
      }
    }
  }
`);

export const UpdateMessage = graphql(`
  mutation UpdateMessage($input: UpdateMessageInput!) {
    updateMessage(input: $input) {
      ...MessageFields
    }
  }
`);

export const UpdateSession = graphql(`
  mutation UpdateSession($input: UpdateSessionInput!) {
    updateSession(input: $input) {
      id
      title
      settings
      metadata
    }
  }
`);

export const DeleteSession = graphql(`
  mutation DeleteSession($input: DeleteSessionInput!) {
    deleteSession(input: $input) {
      deletedSessionIds
    }
  }
`);

export const ForkSession = graphql(`
  mutation ForkSession($input: ForkSessionInput!) {
    forkSession(input: $input) {
      session {
        id
        title
        forkIndex
        messageCount
        settings
        metadata
        depth
        parent {
          id
        }
        root {
          id
        }
      }
      excludedMessage {
        ...MessageFields
      }
    }
  }
`);

export const SessionMessages = graphql(`
  query SessionMessages($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
    session(id: $id) {
      id
      messageCount
      messages(first: $first, after: $after, last: $last, before: $before) {
        edges {
          cursor
          node {
            ...MessageFields
          }
        }
        pageInfo {
          hasNextPage
          hasPreviousPage
          startCursor
          endCursor
        }
      }
    }
  }
`);

export const SessionsList = graphql(`
  query SessionsList($first: Int, $after: String, $rootsOnly: Boolean, $parentId: ID, $messages: Int) {
    sessions(first: $first, after: $after, rootsOnly: $rootsOnly, parentId: $parentId) {
      totalCount
      edges {
        node {
          id
          title
          messageCount
          messages(first: $messages) {
            edges {
              node {
                id
                index
                text
              }
            }
          }
        }
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

export const NodeQuery = graphql(`
  query NodeQuery($id: ID!) {
    node(id: $id) {
      __typename
      id
      ... on Session {
        title
      }
      ... on Message {
        text
      }
    }
  }
`);

export const SessionGraph = graphql(`
  query SessionGraph($id: ID!) {
    session(id: $id) {
      id
      title
      forkIndex
      depth
      messageCount
      parent {
        id
      }
      root {
        id
      }
      ancestors {
        id
      }
      forkPointMessage {
        id
        index
      }
      forks(first: 50) {
        totalCount
        edges {
          node {
            id
            title
            forkIndex
          }
        }
      }
    }
  }
`);

// --- Forks and the session graph (test/integration/forks.test.ts, bench/) ---

export const SessionForkTree = graphql(`
  query SessionForkTree($id: ID!, $messages: Int, $forks: Int) {
    session(id: $id) {
      id
      messageCount
      forks(first: $forks) {
        totalCount
        edges {
          node {
            id
            title
            forkIndex
            depth
            forkPointMessage {
              id
              index
              role
            }
          }
        }
      }
      messages(first: $messages) {
        edges {
          node {
            id
            index
            role
            forks(first: 50) {
              totalCount
              edges {
                node {
                  id
                  title
                  forkIndex
                }
              }
            }
          }
        }
      }
    }
  }
`);

export const ForkPage = graphql(`
  query ForkPage($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
    session(id: $id) {
      id
      messageCount
      messages(first: $first, after: $after, last: $last, before: $before) {
        edges {
          node {
            id
            index
            role
            text
          }
        }
        pageInfo {
          hasNextPage
          hasPreviousPage
          startCursor
          endCursor
        }
      }
    }
  }
`);

export const ForkSessionIds = graphql(`
  mutation ForkSessionIds($input: ForkSessionInput!) {
    forkSession(input: $input) {
      session {
        id
      }
      excludedMessage {
        id
      }
    }
  }
`);

export const SessionEventsFeed = graphql(`
  subscription SessionEventsFeed($id: ID!, $after: Int) {
    sessionEvents(sessionId: $id, afterSequence: $after) {
      __typename
      sequence
    }
  }
`);
