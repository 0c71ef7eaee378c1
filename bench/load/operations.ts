/** The GraphQL documents and message text more than one mode sends. */

/** A subscription the server's sockets start: its document, and the field its events arrive under. */
export interface Subscription {
  /** Takes `$id` (the session) and `$after`; the field's first selected field is `sequence`. */
  query: string;
  field: string;
}

export const SESSION_EVENTS: Subscription = {
  query: `subscription ($id: ID!, $after: Int) {
  sessionEvents(sessionId: $id, afterSequence: $after) {
    sequence __typename at
    ... on MessageAdded { index message { id role text tokenCount } }
    ... on MessageUpdated { appendText finished message { id generating } }
  }
}`,
  field: 'sessionEvents',
};

export const APPEND = `mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { session { messageCount } } }`;

/** The body of each message the load writes, so that rows and events have a realistic size. */
export const FILLER = 'lorem ipsum '.repeat(8);
