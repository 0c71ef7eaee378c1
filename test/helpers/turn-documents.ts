import { graphql } from '../generated/index.js';

// Typed documents of the turn tests; `npm run codegen` types them from schema.graphql.

export const TurnFields = graphql(`
  fragment TurnFields on Turn {
    id
    number
    status
    error
    completedAt
    initiator {
      kind
      id
    }
    usage {
      inputTokens
      outputTokens
      cacheReadTokens
      cacheWriteTokens
      totalTokens
      cost
    }
    agents {
      agentId
      status
      error
      usage {
        inputTokens
        outputTokens
        totalTokens
        cost
      }
    }
  }
`);

export const StartTurn = graphql(`
  mutation StartTurn($input: StartTurnInput!) {
    startTurn(input: $input) {
      ...TurnFields
    }
  }
`);

export const ReportUsage = graphql(`
  mutation ReportUsage($input: ReportUsageInput!) {
    reportUsage(input: $input) {
      ...TurnFields
    }
  }
`);

export const CompleteAgent = graphql(`
  mutation CompleteAgent($input: CompleteAgentInput!) {
    completeAgent(input: $input) {
      ...TurnFields
    }
  }
`);

export const CancelTurn = graphql(`
  mutation CancelTurn($input: CancelTurnInput!) {
    cancelTurn(input: $input) {
      ...TurnFields
    }
  }
`);

export const HeartbeatTurn = graphql(`
  mutation HeartbeatTurn($input: HeartbeatTurnInput!) {
    heartbeatTurn(input: $input) {
      id
      status
    }
  }
`);

export const DeleteSession = graphql(`
  mutation DeleteSessionForTurns($input: DeleteSessionInput!) {
    deleteSession(input: $input) {
      deletedSessionIds
    }
  }
`);

export const ForkSession = graphql(`
  mutation ForkSessionForTurns($input: ForkSessionInput!) {
    forkSession(input: $input) {
      session {
        id
      }
    }
  }
`);

export const SessionUsage = graphql(`
  query SessionUsage($id: ID!) {
    session(id: $id) {
      activeTurn {
        id
        number
      }
      turns(first: 10) {
        totalCount
        edges {
          node {
            number
            status
          }
        }
      }
      usage {
        inputTokens
        outputTokens
        totalTokens
        cost
      }
      treeUsage {
        inputTokens
        totalTokens
      }
      usageByModel {
        model
        usage {
          inputTokens
          outputTokens
          cost
        }
      }
    }
  }
`);

export const TurnDetails = graphql(`
  query TurnDetails($id: ID!) {
    node(id: $id) {
      ... on Turn {
        ...TurnFields
        usageByModel {
          model
          usage {
            inputTokens
            outputTokens
            cacheReadTokens
            cacheWriteTokens
            cost
          }
        }
        messages(first: 10) {
          totalCount
          edges {
            node {
              index
              text
              turn {
                id
              }
            }
          }
        }
      }
    }
  }
`);
