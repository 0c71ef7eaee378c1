// Every operation the explorer sends: typed by `npm run codegen` (explorer/generated/).
import { graphql } from '../generated/index.js';

export const SessionList = graphql(`
  query ExplorerSessions($first: Int!, $after: String, $titleContains: String) {
    sessions(first: $first, after: $after, titleContains: $titleContains) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          id
          title
          kind
          createdAt
          updatedAt
          messageCount
          activeTurn {
            id
          }
        }
      }
    }
  }
`);

export const SearchMessages = graphql(`
  query ExplorerSearch($query: String!, $first: Int, $after: String) {
    searchMessages(query: $query, first: $first, after: $after) {
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        highlight
        message {
          id
          index
          role
          createdAt
        }
        session {
          id
          title
          kind
        }
      }
    }
  }
`);

export const TurnFields = graphql(`
  fragment ExplorerTurn on Turn {
    id
    number
    status
    startedAt
    completedAt
    error
    usage {
      ...ExplorerUsage
    }
    agents {
      agentId
      status
      error
      usage {
        ...ExplorerUsage
      }
    }
    subSessions(first: 20) {
      edges {
        node {
          id
          title
          agentId
          messageCount
        }
      }
    }
  }
`);

export const UsageFields = graphql(`
  fragment ExplorerUsage on Usage {
    inputTokens
    outputTokens
    cacheReadTokens
    cacheWriteTokens
    totalTokens
    cost
    costSource
  }
`);

export const MessageFields = graphql(`
  fragment ExplorerMessage on Message {
    id
    index
    role
    text
    generating
    tokenCount
    agentId
    createdAt
    hidden
    hiddenReason
    redacted
    redaction {
      replacement
    }
    parts {
      __typename
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
          kind
          width
          height
          url
          sourceUrl
          providerFile {
            provider
            fileId
          }
        }
      }
      ... on ReasoningPart {
        text
        redacted
      }
      ... on ProviderPart {
        provider
        data
      }
    }
  }
`);

export const SessionView = graphql(`
  query ExplorerSession($id: ID!, $after: String) {
    session(id: $id) {
      id
      title
      kind
      createdAt
      messageCount
      forkIndex
      agentId
      parent {
        id
        title
      }
      parentTurn {
        id
        number
        session {
          id
          title
        }
      }
      root {
        id
      }
      ...ExplorerCosts
      messages(first: 200, after: $after) {
        pageInfo {
          hasNextPage
          endCursor
        }
        edges {
          node {
            ...ExplorerMessage
          }
        }
      }
      activeTurn {
        ...ExplorerTurn
      }
      turns(last: 5) {
        totalCount
        edges {
          node {
            ...ExplorerTurn
          }
        }
      }
    }
  }
`);

export const CostFields = graphql(`
  fragment ExplorerCosts on Session {
    usage {
      cost
      costSource
    }
    treeUsage {
      cost
      costSource
    }
  }
`);

/** The header's costs again, after a turn event. */
export const SessionCosts = graphql(`
  query ExplorerSessionCosts($id: ID!) {
    session(id: $id) {
      id
      ...ExplorerCosts
    }
  }
`);

/** How full the next context is, from stored counts (no payload built): what the gauge draws. */
export const ContextGauge = graphql(`
  query ExplorerGauge($id: ID!, $model: String, $maxTokens: Int, $format: ContextFormat) {
    session(id: $id) {
      id
      contextGauge(model: $model, maxTokens: $maxTokens, format: $format) {
        usedTokens
        maxTokens
        messageCount
        messagesUntilDrop
        byRole {
          system
          summary
          user
          assistant
          tool
          attachments
        }
      }
    }
  }
`);

export const SessionForks = graphql(`
  query ExplorerForks($id: ID!) {
    session(id: $id) {
      id
      title
      messageCount
      forkIndex
      usage {
        cost
        costSource
      }
      forks(first: 50) {
        edges {
          node {
            id
            title
            messageCount
            forkIndex
            usage {
              cost
              costSource
            }
          }
        }
      }
    }
  }
`);

export const ForkSession = graphql(`
  mutation ExplorerFork($input: ForkSessionInput!) {
    forkSession(input: $input) {
      session {
        id
        title
      }
      excludedMessage {
        id
        text
      }
    }
  }
`);

export const AppendMessage = graphql(`
  mutation ExplorerAppend($input: AppendMessagesInput!) {
    appendMessages(input: $input) {
      messages {
        id
      }
    }
  }
`);

export const AssembleContext = graphql(`
  mutation ExplorerAssemble($input: AssembleContextInput!) {
    assembleContext(input: $input) {
      format
      encoding
      tokenCount
      maxTokens
      truncated
      droppedMessageCount
      summaryIncluded
      elidedToolResultCount
      contextHash
      reusedPrefixTokens
      estimatedCost {
        inputCost
        cachedInputCost
        total
        currency
      }
      messages {
        kind
        role
        sourceIndex
        tokenCount
        text
      }
      decisions {
        index
        decision
        reason
      }
    }
  }
`);

export const SessionEvents = graphql(`
  subscription ExplorerEvents($sessionId: ID!, $afterSequence: Int) {
    sessionEvents(sessionId: $sessionId, afterSequence: $afterSequence) {
      __typename
      sequence
      ... on MessageAdded {
        message {
          ...ExplorerMessage
        }
      }
      ... on MessageUpdated {
        message {
          ...ExplorerMessage
        }
      }
      ... on TurnEvent {
        turn {
          ...ExplorerTurn
        }
      }
    }
  }
`);

// The read-only view of a share link (a `sgs_` token): only what a share token may select
// (src/schema/share-scope.ts): no parent, root, forks or sub-agent sessions, no mutation.
export const SharedTurnFields = graphql(`
  fragment ExplorerSharedTurn on Turn {
    id
    number
    status
    startedAt
    completedAt
    error
    usage {
      ...ExplorerUsage
    }
    agents {
      agentId
      status
      error
      usage {
        ...ExplorerUsage
      }
    }
  }
`);

export const SharedSessionView = graphql(`
  query ExplorerSharedSession($id: ID!, $after: String) {
    session(id: $id) {
      id
      title
      kind
      createdAt
      messageCount
      forkIndex
      agentId
      messages(first: 200, after: $after) {
        pageInfo {
          hasNextPage
          endCursor
        }
        edges {
          node {
            ...ExplorerMessage
          }
        }
      }
      activeTurn {
        ...ExplorerSharedTurn
      }
      turns(last: 5) {
        totalCount
        edges {
          node {
            ...ExplorerSharedTurn
          }
        }
      }
    }
  }
`);

export const SharedSessionEvents = graphql(`
  subscription ExplorerSharedEvents($sessionId: ID!, $afterSequence: Int) {
    sessionEvents(sessionId: $sessionId, afterSequence: $afterSequence) {
      __typename
      sequence
      ... on MessageAdded {
        message {
          ...ExplorerMessage
        }
      }
      ... on MessageUpdated {
        message {
          ...ExplorerMessage
        }
      }
      ... on TurnEvent {
        turn {
          ...ExplorerSharedTurn
        }
      }
    }
  }
`);
