// Worked examples for docs/api.md, one per mutation and subscription (`npm run docs` prints them
// under their field). test/integration/api-docs.test.ts runs every one, in this order, against a
// real app on a seeded session and expects exactly the response written here (any ID, time or hash
// standing for any other), so an example cannot rot.
//
// IDs in the variables are the placeholders below; the test swaps in the seeded rows' IDs.

/** A session holding the seeded conversation: USER, ASSISTANT, USER, ASSISTANT (indexes 0-3). */
export const SESSION_ID = 'U2Vzc2lvbjowMTk2ZjVjMi03YTEwLTdjM2UtOWIxYS0yZjZkMWU0YzhhMDE=';
/** An ASSISTANT message still being generated (in a session of its own). */
export const GENERATING_MESSAGE_ID = 'TWVzc2FnZTowMTk2ZjVjMi03YTJiLTdkNDAtOGM1NS05M2ExYjdlMGY0MTI=';

/** The ASSISTANT message at index 3 of the seeded conversation (the regenerateMessage example answers it again). */
export const ANSWER_MESSAGE_ID = 'TWVzc2FnZTowMTk2ZjVjMi03YTJiLTdkNDAtOGM1NS05M2ExYjdlMGY0MTQ=';

/** An attachment (in a session of its own) that the attachment example reads. */
export const ATTACHMENT_ID = 'QXR0YWNobWVudDowMTk2ZjVjMi03YjEwLTdjM2UtOWIxYS0yZjZkMWU0YzhhMDI=';
/** What the test seeds as that attachment. */
export const SEEDED_ATTACHMENT = {
  name: 'packing.md',
  mimeType: 'text/markdown',
  content: '# Packing for Lisbon\n- comfortable shoes (the hills!)\n- a light jacket for Sintra\n- sunscreen 🌞\n',
};

/** The turn the startTurn example starts (the test takes the real ID from that example's response). */
export const TURN_ID = 'VHVybjowMTk2ZjVjMi03YjAwLTdhYWEtOGJiYi0xYzJkM2U0ZjVhNmI=';

/** The message the appendMessages example appends (index 4); the transform examples name it. */
export const APPENDED_MESSAGE_ID = 'TWVzc2FnZTowMTk2ZjVjMi03YTJiLTdkNDAtOGM1NS05M2ExYjdlMGY0MTM=';
/** The USER message at index 2, returned as the forkSession example's excludedMessage. */
export const FORK_POINT_MESSAGE_ID = 'TWVzc2FnZTowMTk2ZjVjMi03YTJiLTdkNDAtOGM1NS05M2ExYjdlMGY0MTA=';

/** The session of the Kimi K2 transcript (call ids `functions.get_weather:0`, the tool `weather.lookup`), returned by its createSession example. */
export const KIMI_SESSION_ID = 'U2Vzc2lvbjowMTk2ZjVjMi03YzAwLTdjM2UtOWIxYS0yZjZkMWU0YzhhMDk=';
/** The share link the createShareLink example makes (revokeShareLink revokes it). */
export const SHARE_LINK_ID = 'U2hhcmVMaW5rOjAxOTZmNWMyLThkMDAtN2FhYS04YmJiLTFjMmQzZTRmNWE2ZA==';
/** Placeholders that stand for an ID a mutation example returns; later examples use it. */
export const RETURNED_IDS = [TURN_ID, APPENDED_MESSAGE_ID, FORK_POINT_MESSAGE_ID, KIMI_SESSION_ID, SHARE_LINK_ID];
/** How a share token shows in the examples (each run makes its own: `sgs_` and 32 random bytes, base64url). */
export const SHARE_TOKEN = 'sgs_Xq3v9TnR2kLpW8yZ0aBcD4eFgH6iJ1mNoPs5uVwY7z0';

/** The conversation the examples' session holds (the test seeds it with createSession). */
export const SEEDED_MESSAGES = [
  { role: 'USER', text: 'Plan a weekend in Lisbon.' },
  { role: 'ASSISTANT', text: 'Day 1: Alfama and the castle. Day 2: Belém and the riverside.' },
  { role: 'USER', text: 'Add a day trip to Sintra.' },
  { role: 'ASSISTANT', text: 'Day 3: Sintra by train from Rossio, Pena Palace in the morning.' },
];

const SUMMARY = 'The user wants a weekend in Lisbon: Alfama, the castle, Belém.';
/** How assembleContext frames a compaction summary. */
const EXTRACTED = { city: 'Lisbon', days: 3 };
const SUMMARY_TEXT = `Summary of the earlier conversation (messages 0-1):\n\n${SUMMARY}\n\n<extracted_context>{"city":"Lisbon","days":3}</extracted_context>`;
const KIMI_DECISION = (format: string) =>
  `Kept. In the ${format} payload: tool call id "functions.get_weather:0" sent as "functions_get_weather_0_79ac1aaa" (${format} call ids are 1-64 letters, digits, _ or -); tool name "weather.lookup" sent as "weather_lookup" (${format} tool names are 1-64 letters, digits, _ or -); tool call id "functions.get_weather:1" sent as "functions_get_weather_1_26c478f3" (${format} call ids are 1-64 letters, digits, _ or -).`;

export interface ApiExample {
  /** The root field shown: a field of Mutation or Subscription (every one has an example), or of Query. */
  field: string;
  kind: 'mutation' | 'subscription' | 'query';
  /** What the example does and what to notice (Markdown). */
  summary: string;
  document: string;
  variables: Record<string, unknown>;
  /** The response (for a subscription: the first event); IDs, times and hashes stand for any. */
  response: Record<string, unknown>;
  /** For a subscription: operations run on its session before subscribing, so it has an event to show. */
  before?: { document: string; variables: Record<string, unknown> }[];
}

const TURN_FIELDS = `id
    number
    status
    agents {
      agentId
      status
      usage {
        totalTokens
        cost
      }
    }
    usage {
      inputTokens
      outputTokens
      totalTokens
      cost
    }`;

export const EXAMPLES: ApiExample[] = [
  {
    field: 'createSession',
    kind: 'mutation',
    summary: 'Creates a root session with its first message. Title, settings and metadata are optional.',
    document: `mutation CreateSession($input: CreateSessionInput!) {
  createSession(input: $input) {
    id
    title
    messageCount
    settings
  }
}`,
    variables: {
      input: {
        title: 'Trip planning',
        settings: { model: 'gpt-4o' },
        messages: [{ role: 'USER', text: 'Plan a weekend in Lisbon.' }],
      },
    },
    response: {
      createSession: { id: SESSION_ID, title: 'Trip planning', messageCount: 1, settings: { model: 'gpt-4o' } },
    },
  },
  {
    field: 'appendMessages',
    kind: 'mutation',
    summary:
      'Appends messages at the end of a session, all or none. Each gets the next index; the payload returns them with the updated session.',
    document: `mutation AppendMessages($input: AppendMessagesInput!) {
  appendMessages(input: $input) {
    messages {
      id
      index
      role
      text
      tokenCount
    }
    session {
      messageCount
    }
  }
}`,
    variables: {
      input: { sessionId: SESSION_ID, messages: [{ role: 'USER', text: 'Which of the three days needs the best weather?' }] },
    },
    response: {
      appendMessages: {
        messages: [
          {
            id: APPENDED_MESSAGE_ID,
            index: 4,
            role: 'USER',
            text: 'Which of the three days needs the best weather?',
            tokenCount: 10,
          },
        ],
        session: { messageCount: 5 },
      },
    },
  },
  {
    field: 'updateMessage',
    kind: 'mutation',
    summary:
      'Streams text into a message that is still generating (`appendText`), and finishes it with `generating: false`. From then on the message is immutable.',
    document: `mutation UpdateMessage($input: UpdateMessageInput!) {
  updateMessage(input: $input) {
    id
    text
    generating
  }
}`,
    variables: { input: { messageId: GENERATING_MESSAGE_ID, appendText: 'Day 3, Sintra: the palace gardens.', generating: false } },
    response: {
      updateMessage: { id: GENERATING_MESSAGE_ID, text: 'Day 3, Sintra: the palace gardens.', generating: false },
    },
  },
  {
    field: 'updateSession',
    kind: 'mutation',
    summary: 'Renames a session and replaces its settings. Forks keep their own title and settings.',
    document: `mutation UpdateSession($input: UpdateSessionInput!) {
  updateSession(input: $input) {
    id
    title
    settings
    updatedAt
  }
}`,
    variables: { input: { sessionId: SESSION_ID, title: 'Lisbon, three days', settings: { model: 'gpt-4o', temperature: 0.3 } } },
    response: {
      updateSession: {
        id: SESSION_ID,
        title: 'Lisbon, three days',
        settings: { model: 'gpt-4o', temperature: 0.3 },
        updatedAt: '2026-11-23T12:00:00.000Z',
      },
    },
  },
  {
    field: 'compactSession',
    kind: 'mutation',
    summary:
      'Records a summary of messages [0, 2) with the structured context extracted beside it. The messages stay; from now on `assembleContext` sends the summary in their place, the extracted context after it as one escaped JSON section (see the next example). Forks made later inherit both.',
    document: `mutation CompactSession($input: CompactSessionInput!) {
  compactSession(input: $input) {
    id
    messageCount
    compaction {
      uptoIndex
      extractedContext
    }
  }
}`,
    variables: { input: { sessionId: SESSION_ID, uptoIndex: 2, summary: SUMMARY, extractedContext: EXTRACTED } },
    response: { compactSession: { id: SESSION_ID, messageCount: 5, compaction: { uptoIndex: 2, extractedContext: EXTRACTED } } },
  },
  {
    field: 'assembleContext',
    kind: 'mutation',
    summary:
      'Builds the context for the next model call in OpenAI chat format within 2,000 tokens: the compaction above replaces messages 0-1 by its summary, and `decisions` says what happened to each message and why. `payload` is what to send to the model.',
    document: `mutation AssembleContext($input: AssembleContextInput!) {
  assembleContext(input: $input) {
    tokenCount
    truncated
    summaryIncluded
    contextHash
    messages {
      kind
      role
      sourceIndex
      text
    }
    decisions {
      index
      decision
      reason
    }
    payload
  }
}`,
    variables: {
      input: { sessionId: SESSION_ID, format: 'OPENAI_CHAT', maxTokens: 2000, system: 'You are a travel planner.' },
    },
    response: {
      assembleContext: {
        tokenCount: 112,
        truncated: false,
        summaryIncluded: true,
        contextHash: '007e7efa7898028cc8c0bf716af128e3459f45a4c4f3a8758df325d90599e21a',
        messages: [
          { kind: 'SYSTEM', role: 'SYSTEM', sourceIndex: null, text: 'You are a travel planner.' },
          { kind: 'SUMMARY', role: 'SYSTEM', sourceIndex: null, text: SUMMARY_TEXT },
          { kind: 'MESSAGE', role: 'USER', sourceIndex: 2, text: 'Add a day trip to Sintra.' },
          { kind: 'MESSAGE', role: 'ASSISTANT', sourceIndex: 3, text: 'Day 3: Sintra by train from Rossio, Pena Palace in the morning.' },
          { kind: 'MESSAGE', role: 'USER', sourceIndex: 4, text: 'Which of the three days needs the best weather?' },
        ],
        decisions: [
          { index: 0, decision: 'SUMMARIZED', reason: 'Covered by the compaction of messages [0, 2).' },
          { index: 1, decision: 'SUMMARIZED', reason: 'Covered by the compaction of messages [0, 2).' },
          { index: 2, decision: 'KEPT', reason: 'Kept.' },
          { index: 3, decision: 'KEPT', reason: 'Kept.' },
          { index: 4, decision: 'KEPT', reason: 'Kept: the newest user message is always kept.' },
        ],
        payload: {
          messages: [
            { content: 'You are a travel planner.', role: 'system' },
            { content: SUMMARY_TEXT, role: 'system' },
            { content: 'Add a day trip to Sintra.', role: 'user' },
            { content: 'Day 3: Sintra by train from Rossio, Pena Palace in the morning.', role: 'assistant' },
            { content: 'Which of the three days needs the best weather?', role: 'user' },
          ],
        },
      },
    },
  },
  {
    field: 'forkSession',
    kind: 'mutation',
    summary:
      'Forks before the USER message at index 2 ("Add a day trip to Sintra."): the fork holds messages [0, 2), and the message at the cut comes back as `excludedMessage`, ready to edit and resend. Nothing is copied.',
    document: `mutation ForkSession($input: ForkSessionInput!) {
  forkSession(input: $input) {
    session {
      id
      title
      forkIndex
      messageCount
      parent {
        id
      }
    }
    excludedMessage {
      id
      index
      text
    }
  }
}`,
    variables: { input: { sessionId: SESSION_ID, messageIndex: 2 } },
    response: {
      forkSession: {
        session: {
          id: 'U2Vzc2lvbjowMTk2ZjVjMi04YjMxLTdlMDItYTRjNy01ZDllM2YxYjZjMjA=',
          title: 'Lisbon, three days (fork 1)',
          forkIndex: 2,
          messageCount: 2,
          parent: { id: SESSION_ID },
        },
        excludedMessage: {
          id: FORK_POINT_MESSAGE_ID,
          index: 2,
          text: 'Add a day trip to Sintra.',
        },
      },
    },
  },
  {
    field: 'regenerateMessage',
    kind: 'mutation',
    summary:
      '"Try another answer": forks before the ASSISTANT message at index 3, so the branch ends on the question it answered; append the new answer there and it becomes one of `alternatives` of the old one. Titles and cost as forkSession; another role is refused (`REGENERATE_NOT_ASSISTANT_MESSAGE`).',
    document: `mutation RegenerateMessage($input: RegenerateMessageInput!) {
  regenerateMessage(input: $input) {
    session {
      title
      forkIndex
      messageCount
      messages(last: 1) {
        edges {
          node {
            text
          }
        }
      }
    }
    excludedMessage {
      index
      role
    }
  }
}`,
    variables: { input: { messageId: ANSWER_MESSAGE_ID } },
    response: {
      regenerateMessage: {
        session: {
          title: 'Lisbon, three days (fork 2)',
          forkIndex: 3,
          messageCount: 3,
          messages: { edges: [{ node: { text: 'Add a day trip to Sintra.' } }] },
        },
        excludedMessage: { index: 3, role: 'ASSISTANT' },
      },
    },
  },
  {
    field: 'editMessage',
    kind: 'mutation',
    summary:
      '"Change my question": forks before the USER message at index 2 and appends its new version, in one call. The new version and the original are `alternatives` of each other (the forkSession example\'s branch has no message at index 2, so it adds none): what a "‹ 1 / 2 ›" switcher draws.',
    document: `mutation EditMessage($input: EditMessageInput!) {
  editMessage(input: $input) {
    session {
      title
      messageCount
    }
    message {
      index
      text
      alternatives(first: 10) {
        totalCount
        edges {
          node {
            text
            session {
              title
            }
          }
        }
      }
    }
  }
}`,
    variables: { input: { messageId: FORK_POINT_MESSAGE_ID, text: 'Add a day trip to Cascais instead.' } },
    response: {
      editMessage: {
        session: { title: 'Lisbon, three days (fork 3)', messageCount: 3 },
        message: {
          index: 2,
          text: 'Add a day trip to Cascais instead.',
          alternatives: {
            totalCount: 2,
            edges: [
              { node: { text: 'Add a day trip to Sintra.', session: { title: 'Lisbon, three days' } } },
              { node: { text: 'Add a day trip to Cascais instead.', session: { title: 'Lisbon, three days (fork 3)' } } },
            ],
          },
        },
      },
    },
  },
  {
    field: 'importSessions',
    kind: 'mutation',
    summary:
      'Imports a small export file (the JSON Lines of `GET /export/sessions/<id>`, docs/export-format.md): a header, one session with its two messages, and the end line. The session gets a new id in your workspace; its structure and timestamps are kept. Larger files go to `POST /import`, which streams them.',
    document: `mutation ImportSessions($input: ImportSessionsInput!) {
  importSessions(input: $input) {
    sessions {
      title
      kind
      messageCount
      createdAt
    }
  }
}`,
    variables: {
      input: {
        lines: [
          '{"type":"header","format":"session-graph/export","version":1,"exportedAt":"2026-11-29T12:00:00.000Z","sessionId":"0196f5c2-9000-7000-8000-000000000001","tree":false}',
          '{"type":"session","id":"0196f5c2-9000-7000-8000-000000000001","kind":"ROOT","title":"Porto, a weekend","settings":{},"metadata":{},"parentId":null,"rootId":"0196f5c2-9000-7000-8000-000000000001","ancestorIds":[],"depth":0,"forkIndex":null,"forkPointMessageId":null,"lineage":[],"parentTurnId":null,"parentMessageCount":null,"agentId":null,"messageCount":2,"compactionCount":0,"transformCount":0,"turnCount":0,"activeTurnId":null,"createdAt":"2026-11-01T09:00:00.000Z","updatedAt":"2026-11-01T09:01:00.000Z"}',
          '{"type":"message","id":"m1","sessionId":"0196f5c2-9000-7000-8000-000000000001","position":0,"role":"USER","parts":[{"type":"text","text":"Two days in Porto?"}],"toolCallIds":[],"toolResultIds":[],"generating":false,"tokensO200k":null,"tokensCl100k":null,"turnId":null,"agentId":null,"createdAt":"2026-11-01T09:00:00.000Z","updatedAt":"2026-11-01T09:00:00.000Z"}',
          '{"type":"message","id":"m2","sessionId":"0196f5c2-9000-7000-8000-000000000001","position":1,"role":"ASSISTANT","parts":[{"type":"text","text":"Day 1: Ribeira and the Douro."}],"toolCallIds":[],"toolResultIds":[],"generating":false,"tokensO200k":null,"tokensCl100k":null,"turnId":null,"agentId":null,"createdAt":"2026-11-01T09:01:00.000Z","updatedAt":"2026-11-01T09:01:00.000Z"}',
          '{"type":"end","sessions":1,"messages":2}',
        ].join('\n'),
      },
    },
    response: {
      importSessions: {
        sessions: [{ title: 'Porto, a weekend', kind: 'ROOT', messageCount: 2, createdAt: '2026-11-01T09:00:00.000Z' }],
      },
    },
  },
  {
    field: 'hideMessages',
    kind: 'mutation',
    summary:
      'Hides message 2 in the session: it stays in `messages` (flagged `hidden`), and `assembleContext` leaves it out with the decision `HIDDEN` and the reason. The fork made above does not see it: it was made before.',
    document: `mutation HideMessages($input: HideMessagesInput!) {
  hideMessages(input: $input) {
    messages {
      index
      hidden
      hiddenReason
    }
    session {
      messageCount
    }
  }
}`,
    variables: { input: { sessionId: SESSION_ID, messageIds: [FORK_POINT_MESSAGE_ID], reason: 'explored in a fork instead' } },
    response: {
      hideMessages: {
        messages: [{ index: 2, hidden: true, hiddenReason: 'explored in a fork instead' }],
        session: { messageCount: 5 },
      },
    },
  },
  {
    field: 'unhideMessages',
    kind: 'mutation',
    summary: 'Shows message 2 again: `assembleContext` considers it as before.',
    document: `mutation UnhideMessages($input: UnhideMessagesInput!) {
  unhideMessages(input: $input) {
    messages {
      index
      hidden
    }
  }
}`,
    variables: { input: { sessionId: SESSION_ID, messageIds: [FORK_POINT_MESSAGE_ID] } },
    response: { unhideMessages: { messages: [{ index: 2, hidden: false }] } },
  },
  {
    field: 'redactMessage',
    kind: 'mutation',
    summary:
      'Redacts message 4: `assembleContext` sends the replacement instead of its text, counted exactly (`redaction.tokenCount`), while `text` still reads the original, flagged `redacted`.',
    document: `mutation RedactMessage($input: RedactMessageInput!) {
  redactMessage(input: $input) {
    message {
      index
      text
      redacted
      redaction {
        replacement
        tokenCount
      }
    }
  }
}`,
    variables: { input: { messageId: APPENDED_MESSAGE_ID, replacement: 'The user asked about the weather.' } },
    response: {
      redactMessage: {
        message: {
          index: 4,
          text: 'Which of the three days needs the best weather?',
          redacted: true,
          redaction: { replacement: 'The user asked about the weather.', tokenCount: 7 },
        },
      },
    },
  },
  {
    field: 'unredactMessage',
    kind: 'mutation',
    summary: 'Lifts the redaction: `assembleContext` sends the original text again.',
    document: `mutation UnredactMessage($input: UnredactMessageInput!) {
  unredactMessage(input: $input) {
    message {
      index
      redacted
    }
  }
}`,
    variables: { input: { messageId: APPENDED_MESSAGE_ID } },
    response: { unredactMessage: { message: { index: 4, redacted: false } } },
  },
  {
    field: 'stripToolOutputs',
    kind: 'mutation',
    summary:
      'From now on every tool result of messages [0, 4) is sent as a stub (`[tool result elided: N characters]`), whatever `keepToolCallRounds` says; the messages themselves keep their results.',
    document: `mutation StripToolOutputs($input: StripToolOutputsInput!) {
  stripToolOutputs(input: $input) {
    id
    toolOutputsStrippedUpto
  }
}`,
    variables: { input: { sessionId: SESSION_ID, uptoIndex: 4 } },
    response: { stripToolOutputs: { id: SESSION_ID, toolOutputsStrippedUpto: 4 } },
  },
  {
    field: 'startTurn',
    kind: 'mutation',
    summary:
      'Starts the next turn of a session with the agents that will work on it. One turn is active per session at a time (`TURN_ALREADY_ACTIVE`); `turnId` is your key for the call: starting again with it returns the same turn, so a retry is safe.',
    document: `mutation StartTurn($input: StartTurnInput!) {
  startTurn(input: $input) {
    ${TURN_FIELDS}
    initiator {
      kind
      id
    }
  }
}`,
    variables: {
      input: {
        sessionId: SESSION_ID,
        agentIds: ['planner', 'writer'],
        initiator: { kind: 'USER', id: 'user-42' },
        turnId: 'lisbon-turn-1',
      },
    },
    response: {
      startTurn: {
        id: TURN_ID,
        number: 1,
        status: 'ACTIVE',
        agents: [
          { agentId: 'planner', status: 'ACTIVE', usage: { totalTokens: 0, cost: 0 } },
          { agentId: 'writer', status: 'ACTIVE', usage: { totalTokens: 0, cost: 0 } },
        ],
        usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0, cost: 0 },
        initiator: { kind: 'USER', id: 'user-42' },
      },
    },
  },
  {
    field: 'heartbeatTurn',
    kind: 'mutation',
    summary:
      'Tells the server an active turn is still being worked on. A turn with no usage report, message or heartbeat for `TURN_TIMEOUT_MS` (10 minutes by default) is failed by the server.',
    document: `mutation HeartbeatTurn($input: HeartbeatTurnInput!) {
  heartbeatTurn(input: $input) {
    id
    status
  }
}`,
    variables: { input: { turnId: TURN_ID } },
    response: { heartbeatTurn: { id: TURN_ID, status: 'ACTIVE' } },
  },
  {
    field: 'reportUsage',
    kind: 'mutation',
    summary:
      "Adds one model call's usage to its agent and its turn. `callId` makes a retried report a no-op; `model` lets usage be read per model (`usageByModel`). Usage reported after the turn ended still counts.",
    document: `mutation ReportUsage($input: ReportUsageInput!) {
  reportUsage(input: $input) {
    ${TURN_FIELDS}
    usageByModel {
      model
      usage {
        totalTokens
      }
    }
  }
}`,
    variables: {
      input: { turnId: TURN_ID, agentId: 'planner', callId: 'call-1', model: 'gpt-4o', inputTokens: 1200, outputTokens: 300, cost: 0.0045 },
    },
    response: {
      reportUsage: {
        id: TURN_ID,
        number: 1,
        status: 'ACTIVE',
        agents: [
          { agentId: 'planner', status: 'ACTIVE', usage: { totalTokens: 1500, cost: 0.0045 } },
          { agentId: 'writer', status: 'ACTIVE', usage: { totalTokens: 0, cost: 0 } },
        ],
        usage: { inputTokens: 1200, outputTokens: 300, totalTokens: 1500, cost: 0.0045 },
        usageByModel: [{ model: 'gpt-4o', usage: { totalTokens: 1500 } }],
      },
    },
  },
  {
    field: 'completeAgent',
    kind: 'mutation',
    summary:
      'One agent is done. When the last agent completes, the turn becomes `COMPLETED`, or `FAILED` if any agent failed (each agent keeps its error), exactly once whatever the concurrency. Here the writer is still working, so the turn stays active.',
    document: `mutation CompleteAgent($input: CompleteAgentInput!) {
  completeAgent(input: $input) {
    ${TURN_FIELDS}
  }
}`,
    variables: { input: { turnId: TURN_ID, agentId: 'planner', success: true } },
    response: {
      completeAgent: {
        id: TURN_ID,
        number: 1,
        status: 'ACTIVE',
        agents: [
          { agentId: 'planner', status: 'COMPLETED', usage: { totalTokens: 1500, cost: 0.0045 } },
          { agentId: 'writer', status: 'ACTIVE', usage: { totalTokens: 0, cost: 0 } },
        ],
        usage: { inputTokens: 1200, outputTokens: 300, totalTokens: 1500, cost: 0.0045 },
      },
    },
  },
  {
    field: 'createSession',
    kind: 'mutation',
    summary:
      "With `parentTurnId` and `agentId`, `createSession` makes a sub-agent session nested in that (ACTIVE) turn: the planner delegates to a researcher that works in its own conversation. Its usage rolls up into the turn's `usage` (`ownUsage` leaves it out), its events appear on the parent's `sessionEvents` as `SubSessionEvent`, and its messages in the parent's `timeline` (not in its `messages`). It is the root of its own fork tree. An ended turn is refused with `TURN_NOT_ACTIVE`.",
    document: `mutation CreateSubSession($input: CreateSessionInput!) {
  createSession(input: $input) {
    id
    kind
    agentId
    parentMessageCount
    parentTurn {
      id
      subSessions {
        totalCount
      }
    }
    messageCount
  }
}`,
    variables: {
      input: {
        title: 'Sintra research',
        parentTurnId: TURN_ID,
        agentId: 'researcher',
        messages: [{ role: 'USER', text: 'Find the train times from Rossio to Sintra.' }],
      },
    },
    response: {
      createSession: {
        id: 'U2Vzc2lvbjowMTk2ZjVjMi04YzAwLTdhYWEtOGJiYi0xYzJkM2U0ZjVhNmM=',
        kind: 'SUB_AGENT',
        agentId: 'researcher',
        parentMessageCount: 5,
        parentTurn: { id: TURN_ID, subSessions: { totalCount: 1 } },
        messageCount: 1,
      },
    },
  },
  {
    field: 'cancelTurn',
    kind: 'mutation',
    summary:
      "Ends an active turn early; agents still working are marked `CANCELLED` and the reason is kept as the turn's `error`. An ended turn is refused with `TURN_NOT_ACTIVE`.",
    document: `mutation CancelTurn($input: CancelTurnInput!) {
  cancelTurn(input: $input) {
    id
    status
    error
    agents {
      agentId
      status
    }
  }
}`,
    variables: { input: { turnId: TURN_ID, reason: 'The user pressed stop.' } },
    response: {
      cancelTurn: {
        id: TURN_ID,
        status: 'CANCELLED',
        error: 'The user pressed stop.',
        agents: [
          { agentId: 'planner', status: 'COMPLETED' },
          { agentId: 'writer', status: 'CANCELLED' },
        ],
      },
    },
  },
  {
    field: 'createShareLink',
    kind: 'mutation',
    summary:
      "Makes a read-only link to one session, with a key of scope FULL. `token` and `url` are in this answer only (only the token's SHA-256 is stored). Sent as `Authorization: Bearer <token>`, the token reads that session (`session(id:)`, `node(id:)`, its messages with the inherited prefix, turns, usage, attachments, `sessionEvents`) and nothing else: another session is null, a field that leads away (parent, forks, sessions, search, any mutation) is `FORBIDDEN`. `expiresAt` must be in the future and at most 366 days away; without it, 30 days. `url` is the explorer's read-only view (prefix this server's origin).",
    document: `mutation CreateShareLink($input: CreateShareLinkInput!) {
  createShareLink(input: $input) {
    id
    token
    url
    expiresAt
    active
  }
}`,
    variables: { input: { sessionId: SESSION_ID } },
    response: {
      createShareLink: {
        id: SHARE_LINK_ID,
        token: SHARE_TOKEN,
        url: `/explorer#share=${SHARE_TOKEN}&session=${encodeURIComponent(SESSION_ID)}`,
        expiresAt: '2026-12-29T12:00:00.000Z',
        active: true,
      },
    },
  },
  {
    field: 'revokeShareLink',
    kind: 'mutation',
    summary:
      "Revokes a share link: its token is refused (`UNAUTHENTICATED`) at once on this server instance and within `API_KEY_CACHE_TTL_MS` (5 s by default) on every other. Revoking again returns the link unchanged; `Session.shareLinks` lists a session's links (never their tokens).",
    document: `mutation RevokeShareLink($input: RevokeShareLinkInput!) {
  revokeShareLink(input: $input) {
    id
    active
    revokedAt
    token
  }
}`,
    variables: { input: { id: SHARE_LINK_ID } },
    response: {
      revokeShareLink: { id: SHARE_LINK_ID, active: false, revokedAt: '2026-11-29T12:00:00.000Z', token: null },
    },
  },
  {
    field: 'deleteSession',
    kind: 'mutation',
    summary:
      'Deletes a session with its messages, turns and events, and the sub-agent sessions nested in its turns (here the researcher). With `cascade: true` its forks go too; every deleted ID is returned.',
    document: `mutation DeleteSession($input: DeleteSessionInput!) {
  deleteSession(input: $input) {
    deletedSessionIds
  }
}`,
    variables: { input: { sessionId: SESSION_ID, cascade: true } },
    response: {
      deleteSession: {
        deletedSessionIds: [
          'U2Vzc2lvbjowMTk2ZjVjMi04YzAwLTdhYWEtOGJiYi0xYzJkM2U0ZjVhNmM=',
          'U2Vzc2lvbjowMTk2ZjVjMi04YjMxLTdlMDItYTRjNy01ZDllM2YxYjZjMjA=',
          'U2Vzc2lvbjowMTk2ZjVjMi04YjMyLTdlMDItYTRjNy01ZDllM2YxYjZjMjE=',
          'U2Vzc2lvbjowMTk2ZjVjMi04YjMzLTdlMDItYTRjNy01ZDllM2YxYjZjMjI=',
          SESSION_ID,
        ],
      },
    },
  },
  {
    field: 'sessionEvents',
    kind: 'subscription',
    summary:
      'Follows a session live, over WebSocket (graphql-ws) or SSE (`Accept: text/event-stream`) on the same endpoint. `afterSequence: 0` replays every stored event first; reconnect with the last `sequence` you saw to miss nothing and see nothing twice. One event:',
    document: `subscription SessionEvents($sessionId: ID!, $afterSequence: Int) {
  sessionEvents(sessionId: $sessionId, afterSequence: $afterSequence) {
    __typename
    sequence
    at
    ... on MessageAdded {
      index
      message {
        role
        text
      }
    }
  }
}`,
    variables: { sessionId: SESSION_ID, afterSequence: 0 },
    response: {
      sessionEvents: {
        __typename: 'MessageAdded',
        sequence: 1,
        at: '2026-11-23T12:00:00.000Z',
        index: 0,
        message: { role: 'USER', text: 'Plan a weekend in Lisbon.' },
      },
    },
  },
  {
    field: 'turnEvents',
    kind: 'subscription',
    summary:
      "The turn events of a session: its `sessionEvents` filtered to turns, with the same sequence numbers and replay. `TurnUsageUpdated` carries each report's `delta` and the turn's `total` after it, for live spend. One event:",
    document: `subscription TurnEvents($sessionId: ID!, $afterSequence: Int) {
  turnEvents(sessionId: $sessionId, afterSequence: $afterSequence) {
    __typename
    sequence
    at
    ... on TurnStarted {
      number
      agentIds
    }
    ... on TurnUsageUpdated {
      agentId
      delta {
        totalTokens
      }
      total {
        totalTokens
        cost
      }
    }
  }
}`,
    variables: { sessionId: SESSION_ID, afterSequence: 0 },
    before: [
      {
        document: 'mutation ($input: StartTurnInput!) { startTurn(input: $input) { id } }',
        variables: { input: { sessionId: SESSION_ID, agentIds: ['planner'] } },
      },
    ],
    response: {
      turnEvents: { __typename: 'TurnStarted', sequence: 5, at: '2026-11-23T12:00:00.000Z', number: 1, agentIds: ['planner'] },
    },
  },
  {
    field: 'attachment',
    kind: 'query',
    summary:
      'Reads an attachment a page at a time, as an agent running the `read_attachment` tool does with the `id` of an `<attachment_ref>` block (`assembleContext` with `attachmentMode: REFERENCE`). Offsets and lengths count characters (Unicode code points: the emoji is one); read on from `nextOffset` until it is null.',
    document: `query ReadAttachment($id: ID!, $offset: Int, $length: Int) {
  attachment(id: $id) {
    name
    mimeType
    size
    content(offset: $offset, length: $length) {
      text
      offset
      length
      totalLength
      hasMore
      nextOffset
    }
  }
}`,
    variables: { id: ATTACHMENT_ID, offset: 0, length: 54 },
    response: {
      attachment: {
        name: 'packing.md',
        mimeType: 'text/markdown',
        size: 99,
        content: {
          text: '# Packing for Lisbon\n- comfortable shoes (the hills!)\n',
          offset: 0,
          length: 54,
          totalLength: 96,
          hasMore: true,
          nextOffset: 54,
        },
      },
    },
  },
  {
    field: 'createSession',
    kind: 'mutation',
    summary:
      'Stores a transcript as the model produced it: Kimi K2 names its calls `functions.get_weather:0`, and the tool is the MCP-style `weather.lookup`. Call ids and tool names are kept exactly as sent (any text up to 256 characters without control characters); each `assembleContext` format maps what its provider refuses (next examples).',
    document: `mutation CreateKimiSession($input: CreateSessionInput!) {
  createSession(input: $input) {
    id
    messageCount
  }
}`,
    variables: {
      input: {
        title: 'Beach weather',
        messages: [
          { role: 'USER', text: 'Weather in Lisbon and Porto?' },
          {
            role: 'ASSISTANT',
            parts: [
              { toolCall: { callId: 'functions.get_weather:0', name: 'weather.lookup', arguments: { city: 'Lisbon' } } },
              { toolCall: { callId: 'functions.get_weather:1', name: 'weather.lookup', arguments: { city: 'Porto' } } },
            ],
          },
          {
            role: 'TOOL',
            parts: [
              { toolResult: { callId: 'functions.get_weather:0', content: '24 °C, sunny' } },
              { toolResult: { callId: 'functions.get_weather:1', content: '19 °C, showers' } },
            ],
          },
          { role: 'ASSISTANT', text: 'Lisbon: 24 °C and sunny. Porto: 19 °C with showers.' },
          { role: 'USER', text: 'Which one for a beach day?' },
        ],
      },
    },
    response: { createSession: { id: KIMI_SESSION_ID, messageCount: 5 } },
  },
  {
    field: 'assembleContext',
    kind: 'mutation',
    summary:
      "The Kimi transcript for OpenAI's Responses API (`format: OPENAI_RESPONSES`): `payload.input` holds message items, one `function_call` item per call (`arguments` is the stored JSON text) and each `function_call_output` after its call. OpenAI refuses the dotted name and the ids, so they are sent cleaned (an id with a short hash of the original, so two ids never collide); `toolMappings` lists each pair to map the model's answer back, and the decision of each message concerned says what was sent. The system prompt is a `system` message item rather than `instructions`, so its place and the exact count are kept; the count is the Chat Completions one.",
    document: `mutation AssembleForResponses($input: AssembleContextInput!) {
  assembleContext(input: $input) {
    tokenCount
    toolMappings {
      kind
      original
      sent
    }
    decisions {
      index
      reason
    }
    payload
  }
}`,
    variables: { input: { sessionId: KIMI_SESSION_ID, format: 'OPENAI_RESPONSES', system: 'You are a travel planner.' } },
    response: {
      assembleContext: {
        tokenCount: 101,
        toolMappings: [
          { kind: 'CALL_ID', original: 'functions.get_weather:0', sent: 'functions_get_weather_0_79ac1aaa' },
          { kind: 'TOOL_NAME', original: 'weather.lookup', sent: 'weather_lookup' },
          { kind: 'CALL_ID', original: 'functions.get_weather:1', sent: 'functions_get_weather_1_26c478f3' },
        ],
        decisions: [
          { index: 0, reason: 'Kept.' },
          { index: 1, reason: KIMI_DECISION('OPENAI_RESPONSES') },
          {
            index: 2,
            reason:
              'Kept. In the OPENAI_RESPONSES payload: its result for tool call id "functions.get_weather:0" sent as "functions_get_weather_0_79ac1aaa"; its result for tool call id "functions.get_weather:1" sent as "functions_get_weather_1_26c478f3".',
          },
          { index: 3, reason: 'Kept.' },
          { index: 4, reason: 'Kept: the newest user message is always kept.' },
        ],
        payload: {
          input: [
            { content: 'You are a travel planner.', role: 'system', type: 'message' },
            { content: 'Weather in Lisbon and Porto?', role: 'user', type: 'message' },
            { arguments: '{"city":"Lisbon"}', call_id: 'functions_get_weather_0_79ac1aaa', name: 'weather_lookup', type: 'function_call' },
            { arguments: '{"city":"Porto"}', call_id: 'functions_get_weather_1_26c478f3', name: 'weather_lookup', type: 'function_call' },
            { call_id: 'functions_get_weather_0_79ac1aaa', output: '24 °C, sunny', type: 'function_call_output' },
            { call_id: 'functions_get_weather_1_26c478f3', output: '19 °C, showers', type: 'function_call_output' },
            { content: 'Lisbon: 24 °C and sunny. Porto: 19 °C with showers.', role: 'assistant', type: 'message' },
            { content: 'Which one for a beach day?', role: 'user', type: 'message' },
          ],
        },
      },
    },
  },
  {
    field: 'assembleContext',
    kind: 'mutation',
    summary:
      "The same transcript for Gemini (`format: GEMINI`): `systemInstruction` and `contents` with roles `user` and `model`; each `functionResponse` answers its call by the call's name, in the user turn right after the model turn that called, in call order. Gemini accepts dotted names and takes no call ids, so nothing is mapped (`toolMappings` is empty). The count is content only: Gemini publishes no framing, so none is added.",
    document: `mutation AssembleForGemini($input: AssembleContextInput!) {
  assembleContext(input: $input) {
    tokenCount
    toolMappings {
      original
      sent
    }
    payload
  }
}`,
    variables: { input: { sessionId: KIMI_SESSION_ID, format: 'GEMINI', system: 'You are a travel planner.' } },
    response: {
      assembleContext: {
        tokenCount: 64,
        toolMappings: [],
        payload: {
          contents: [
            { parts: [{ text: 'Weather in Lisbon and Porto?' }], role: 'user' },
            {
              parts: [
                { functionCall: { args: { city: 'Lisbon' }, name: 'weather.lookup' } },
                { functionCall: { args: { city: 'Porto' }, name: 'weather.lookup' } },
              ],
              role: 'model',
            },
            {
              parts: [
                { functionResponse: { name: 'weather.lookup', response: { output: '24 °C, sunny' } } },
                { functionResponse: { name: 'weather.lookup', response: { output: '19 °C, showers' } } },
              ],
              role: 'user',
            },
            { parts: [{ text: 'Lisbon: 24 °C and sunny. Porto: 19 °C with showers.' }], role: 'model' },
            { parts: [{ text: 'Which one for a beach day?' }], role: 'user' },
          ],
          systemInstruction: { parts: [{ text: 'You are a travel planner.' }] },
        },
      },
    },
  },
  {
    field: 'appendProviderMessages',
    kind: 'mutation',
    summary:
      "Stores a provider's own payload: here an Anthropic Message from a model with extended thinking, whose thinking block (with its signature) must go back first in the assistant message of the next call of the tool loop. Every part keeps its provider data; `assembleContext(format: ANTHROPIC_MESSAGES)` sends the blocks back as they came, and the other formats leave the thinking out and say so. `messages` takes request items instead (Anthropic `messages`, Chat `messages`, Responses `input`, Gemini `contents`); with `turnId` and `agentId`, a response's usage is reported to the turn.",
    document: `mutation AppendProviderMessages($input: AppendProviderMessagesInput!) {
  appendProviderMessages(input: $input) {
    messages {
      role
      text
      parts {
        __typename
        ... on ReasoningPart {
          text
          redacted
          providerMetadata
        }
        ... on ToolCallPart {
          callId
          name
          arguments
        }
      }
    }
  }
}`,
    variables: {
      input: {
        sessionId: KIMI_SESSION_ID,
        format: 'ANTHROPIC_MESSAGES',
        response: {
          id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5',
          content: [
            {
              type: 'thinking',
              thinking: 'The user wants the forecast for day 2: call the weather tool.',
              signature: 'EuYBCkQYAiJAgCs1le6/Pol5Z4/JdQ==',
            },
            { type: 'text', text: 'Let me check the forecast.' },
            { type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9', name: 'weather', input: { city: 'Lisbon', day: 2 } },
          ],
          stop_reason: 'tool_use',
          usage: { input_tokens: 412, output_tokens: 96 },
        },
      },
    },
    response: {
      appendProviderMessages: {
        messages: [
          {
            role: 'ASSISTANT',
            text: 'Let me check the forecast.',
            parts: [
              {
                __typename: 'ReasoningPart',
                text: 'The user wants the forecast for day 2: call the weather tool.',
                redacted: false,
                providerMetadata: { anthropic: { signature: 'EuYBCkQYAiJAgCs1le6/Pol5Z4/JdQ==' } },
              },
              { __typename: 'TextPart' },
              {
                __typename: 'ToolCallPart',
                callId: 'toolu_01A09q90qw90lq917835lq9',
                name: 'weather',
                arguments: { city: 'Lisbon', day: 2 },
              },
            ],
          },
        ],
      },
    },
  },
  {
    field: 'appendMessages',
    kind: 'mutation',
    summary:
      "The new part inputs by hand (appendProviderMessages fills them from a provider's payload): a `reasoning` part with the provider data its provider needs to take it back (here a Gemini thought signature), `providerMetadata` on any part (here the signature Gemini put on a function call), and a `providerPart`, a block this server does not model, stored whole and sent only to its provider's format(s).",
    document: `mutation AppendMessagesWithProviderData($input: AppendMessagesInput!) {
  appendMessages(input: $input) {
    messages {
      role
      parts {
        __typename
        ... on ReasoningPart {
          text
          redacted
          providerMetadata
        }
        ... on ToolCallPart {
          name
          providerMetadata
        }
        ... on ProviderPart {
          provider
          data
        }
      }
    }
  }
}`,
    variables: {
      input: {
        sessionId: KIMI_SESSION_ID,
        messages: [
          {
            role: 'ASSISTANT',
            parts: [
              {
                reasoning: {
                  text: 'Compute the trip budget, then check the weather.',
                  providerMetadata: { google: { thoughtSignature: 'CiQB0e2Kb1x2' } },
                },
              },
              { providerPart: { provider: 'google', data: { executableCode: { language: 'PYTHON', code: 'print(120 + 180)' } } } },
              {
                toolCall: {
                  callId: 'weather_1',
                  name: 'weather',
                  arguments: { city: 'Porto' },
                  providerMetadata: { google: { thoughtSignature: 'CiQB0e2Kb1x3' } },
                },
              },
            ],
          },
        ],
      },
    },
    response: {
      appendMessages: {
        messages: [
          {
            role: 'ASSISTANT',
            parts: [
              {
                __typename: 'ReasoningPart',
                text: 'Compute the trip budget, then check the weather.',
                redacted: false,
                providerMetadata: { google: { thoughtSignature: 'CiQB0e2Kb1x2' } },
              },
              {
                __typename: 'ProviderPart',
                provider: 'google',
                data: { executableCode: { language: 'PYTHON', code: 'print(120 + 180)' } },
              },
              { __typename: 'ToolCallPart', name: 'weather', providerMetadata: { google: { thoughtSignature: 'CiQB0e2Kb1x3' } } },
            ],
          },
        ],
      },
    },
  },
];
