import { buildSchema, type GraphQLObjectType } from 'graphql';
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { API_KEYS, backend, gql, gqlOk, rawIdOf, type TestApp, useTestApp, TWO_WORKSPACES } from '../helpers/app.js';

/**
 * Two workspaces. Every root query, mutation and subscription field is called from beta with
 * alpha's IDs: each answers NOT_FOUND (or null / an empty list for reads), never alpha's data, and
 * alpha's graph is unchanged afterwards. A root field without a probe fails the test, so a new
 * field cannot skip the sweep.
 */
let app: TestApp;
const alpha = { apiKey: API_KEYS.alpha };
const beta = { apiKey: API_KEYS.beta };

useTestApp(
  (built) => {
    app = built;
  },
  {
    apiKeys: TWO_WORKSPACES,
  },
);

type Edges<T> = { edges: { node: T }[] };
interface Snapshot {
  session: {
    title: string;
    settings: unknown;
    metadata: unknown;
    messageCount: number;
    messages: Edges<{ id: string }>;
    forks: { totalCount: number };
  };
  fork: { id: string; title: string; messageCount: number };
}

const ids = { session: '', fork: '', user: '', generating: '', turn: '', betaSession: '', attachment: '', shareLink: '' };

async function alphaSnapshot() {
  const data = await gqlOk<Snapshot, unknown>(
    app,
    `query($id: ID!, $fork: ID!, $turn: ID!) {
      session(id: $id) { title settings metadata messageCount toolOutputsStrippedUpto messages(first: 50) { edges { node { id text generating hidden redacted } } } forks(first: 10) { totalCount } }
      turn: node(id: $turn) { ... on Turn { status usage { totalTokens } agents { agentId } } }
      fork: session(id: $fork) { id title messageCount }
    }`,
    { id: ids.session, fork: ids.fork, turn: ids.turn },
    alpha,
  );
  return data;
}

beforeAll(async () => {
  const created = await gqlOk<{ createSession: { id: string; messages: Edges<{ id: string }> } }, unknown>(
    app,
    `mutation($input: CreateSessionInput!) { createSession(input: $input) { id messages(first: 5) { edges { node { id } } } } }`,
    {
      input: {
        title: 'Alpha secret',
        settings: { model: 'm' },
        metadata: { k: 'v' },
        messages: [{ role: 'USER', text: 'secret question' }],
      },
    },
    alpha,
  );
  ids.session = created.createSession.id;
  ids.user = created.createSession.messages.edges[0].node.id;
  const appended = await gqlOk<{ appendMessages: { messages: { id: string }[] } }, unknown>(
    app,
    `mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { id } } }`,
    { input: { sessionId: ids.session, messages: [{ role: 'ASSISTANT', text: 'partial', generating: true }] } },
    alpha,
  );
  ids.generating = appended.appendMessages.messages[0].id;
  const forked = await gqlOk<{ forkSession: { session: { id: string } } }, unknown>(
    app,
    `mutation($input: ForkSessionInput!) { forkSession(input: $input) { session { id } } }`,
    { input: { sessionId: ids.session, messageIndex: 0 } },
    alpha,
  );
  ids.fork = forked.forkSession.session.id;
  // A turn of alpha's session, made directly: the turn API is not what this sweep is about.
  const turn = await app.runtime.db.prisma.turn.create({
    data: { sessionId: rawIdOf(ids.session), number: 1, initiatorKind: 'USER' },
  });
  ids.turn = Buffer.from(`Turn:${turn.id}`).toString('base64');
  const filed = await gqlOk<{ createSession: { messages: Edges<{ parts: { attachment: { id: string } }[] }> } }, unknown>(
    app,
    `mutation($input: CreateSessionInput!) {
      createSession(input: $input) { messages(first: 1) { edges { node { parts { ... on AttachmentPart { attachment { id } } } } } } }
    }`,
    { input: { messages: [{ role: 'USER', parts: [{ attachment: { name: 'a.txt', mimeType: 'text/plain', content: 'secret file' } }] }] } },
    alpha,
  );
  ids.attachment = filed.createSession.messages.edges[0].node.parts[0].attachment.id;
  const own = await gqlOk<{ createSession: { id: string } }, unknown>(
    app,
    `mutation { createSession(input: { title: "Beta", messages: [{ role: USER, text: "hi" }] }) { id } }`,
    undefined,
    beta,
  );
  ids.betaSession = own.createSession.id;
  const shared = await gqlOk<{ createShareLink: { id: string } }, unknown>(
    app,
    'mutation($input: CreateShareLinkInput!) { createShareLink(input: $input) { id } }',
    { input: { sessionId: ids.session } },
    alpha,
  );
  ids.shareLink = shared.createShareLink.id;
});

type Probe = { query: string; variables: () => Record<string, unknown> };

const M = (field: string, input: string) => `mutation($input: ${input}!) { ${field}(input: $input) { __typename } }`;

/** Each root field, called from beta with alpha's IDs; several probes where a field takes several IDs. */
const probes: Record<string, Probe[]> = {
  'Query.node': ['session', 'fork', 'user', 'generating', 'turn', 'attachment'].map((k) => ({
    query: 'query($id: ID!) { node(id: $id) { id } }',
    variables: () => ({ id: ids[k as keyof typeof ids] }),
  })),
  'Query.attachment': [
    { query: 'query($id: ID!) { attachment(id: $id) { name content { text } } }', variables: () => ({ id: ids.attachment }) },
  ],
  'Query.session': [{ query: 'query($id: ID!) { session(id: $id) { id title } }', variables: () => ({ id: ids.session }) }],
  'Query.sessions': [
    { query: 'query($p: ID) { sessions(first: 50, parentId: $p) { edges { node { id title } } } }', variables: () => ({ p: ids.session }) },
    { query: 'query { sessions(first: 50) { edges { node { id title } } } }', variables: () => ({}) },
    { query: 'query { sessions(first: 50, titleContains: "secret") { edges { node { id title } } } }', variables: () => ({}) },
  ],
  // The model catalog is the same for every workspace: no ID to probe.
  'Query.modelCatalog': [],
  'Query.searchMessages': [
    {
      query: 'query { searchMessages(query: "secret or question") { edges { node: session { id } highlight } } }',
      variables: () => ({}),
    },
  ],
  'Mutation.appendMessages': [
    {
      query: M('appendMessages', 'AppendMessagesInput'),
      variables: () => ({ input: { sessionId: ids.session, messages: [{ role: 'USER', text: 'x' }] } }),
    },
    {
      query: M('appendMessages', 'AppendMessagesInput'),
      variables: () => ({ input: { sessionId: ids.betaSession, turnId: ids.turn, messages: [{ role: 'USER', text: 'x' }] } }),
    },
  ],
  'Mutation.appendProviderMessages': [
    {
      query: M('appendProviderMessages', 'AppendProviderMessagesInput'),
      variables: () => ({ input: { sessionId: ids.session, format: 'OPENAI_CHAT', messages: [{ role: 'user', content: 'x' }] } }),
    },
    {
      query: M('appendProviderMessages', 'AppendProviderMessagesInput'),
      variables: () => ({
        input: {
          sessionId: ids.betaSession,
          turnId: ids.turn,
          agentId: 'a',
          format: 'ANTHROPIC_MESSAGES',
          response: {
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            content: [{ type: 'text', text: 'x' }],
            usage: { input_tokens: 1, output_tokens: 1 },
          },
        },
      }),
    },
  ],
  'Mutation.assembleContext': [
    { query: M('assembleContext', 'AssembleContextInput'), variables: () => ({ input: { sessionId: ids.session } }) },
    { query: M('assembleContext', 'AssembleContextInput'), variables: () => ({ input: { sessionId: ids.betaSession, turnId: ids.turn } }) },
  ],
  'Mutation.compactSession': [
    {
      query: M('compactSession', 'CompactSessionInput'),
      variables: () => ({ input: { sessionId: ids.session, uptoIndex: 1, summary: 's' } }),
    },
  ],
  // Takes no ID: nothing of alpha's can be named. Probed to check it creates in beta only.
  'Mutation.createSession': [],
  'Mutation.deleteSession': [
    { query: M('deleteSession', 'DeleteSessionInput'), variables: () => ({ input: { sessionId: ids.session, cascade: true } }) },
    { query: M('deleteSession', 'DeleteSessionInput'), variables: () => ({ input: { sessionId: ids.fork } }) },
  ],
  'Mutation.forkSession': [
    { query: M('forkSession', 'ForkSessionInput'), variables: () => ({ input: { sessionId: ids.session, messageIndex: 0 } }) },
    { query: M('forkSession', 'ForkSessionInput'), variables: () => ({ input: { sessionId: ids.betaSession, messageId: ids.user } }) },
  ],
  'Mutation.regenerateMessage': [
    { query: M('regenerateMessage', 'RegenerateMessageInput'), variables: () => ({ input: { messageId: ids.generating } }) },
    {
      query: M('regenerateMessage', 'RegenerateMessageInput'),
      variables: () => ({ input: { messageId: ids.generating, sessionId: ids.betaSession } }),
    },
  ],
  'Mutation.editMessage': [
    { query: M('editMessage', 'EditMessageInput'), variables: () => ({ input: { messageId: ids.user, text: 'x' } }) },
    {
      query: M('editMessage', 'EditMessageInput'),
      variables: () => ({ input: { messageId: ids.user, sessionId: ids.betaSession, text: 'x' } }),
    },
  ],
  'Mutation.updateMessage': [
    { query: M('updateMessage', 'UpdateMessageInput'), variables: () => ({ input: { messageId: ids.generating, appendText: 'x' } }) },
  ],
  'Mutation.hideMessages': [
    {
      query: M('hideMessages', 'HideMessagesInput'),
      variables: () => ({ input: { sessionId: ids.session, messageIds: [ids.user], reason: 'x' } }),
    },
    {
      query: M('hideMessages', 'HideMessagesInput'),
      variables: () => ({ input: { sessionId: ids.betaSession, messageIds: [ids.user], reason: 'x' } }),
    },
  ],
  'Mutation.unhideMessages': [
    { query: M('unhideMessages', 'UnhideMessagesInput'), variables: () => ({ input: { sessionId: ids.session, messageIds: [ids.user] } }) },
  ],
  'Mutation.redactMessage': [
    { query: M('redactMessage', 'RedactMessageInput'), variables: () => ({ input: { messageId: ids.user, replacement: 'x' } }) },
    { query: M('redactMessage', 'RedactMessageInput'), variables: () => ({ input: { messageId: ids.user, sessionId: ids.betaSession } }) },
  ],
  'Mutation.unredactMessage': [
    { query: M('unredactMessage', 'UnredactMessageInput'), variables: () => ({ input: { messageId: ids.user } }) },
  ],
  'Mutation.stripToolOutputs': [
    { query: M('stripToolOutputs', 'StripToolOutputsInput'), variables: () => ({ input: { sessionId: ids.session, uptoIndex: 1 } }) },
  ],
  'Mutation.updateSession': [
    { query: M('updateSession', 'UpdateSessionInput'), variables: () => ({ input: { sessionId: ids.session, title: 'pwned' } }) },
  ],
  'Mutation.startTurn': [
    { query: M('startTurn', 'StartTurnInput'), variables: () => ({ input: { sessionId: ids.session, agentIds: ['a'] } }) },
  ],
  'Mutation.reportUsage': [
    {
      query: M('reportUsage', 'ReportUsageInput'),
      variables: () => ({ input: { turnId: ids.turn, agentId: 'a', inputTokens: 5, callId: 'c1' } }),
    },
  ],
  'Mutation.completeAgent': [
    { query: M('completeAgent', 'CompleteAgentInput'), variables: () => ({ input: { turnId: ids.turn, agentId: 'a', success: true } }) },
  ],
  'Mutation.cancelTurn': [{ query: M('cancelTurn', 'CancelTurnInput'), variables: () => ({ input: { turnId: ids.turn, reason: 'x' } }) }],
  'Mutation.createShareLink': [
    { query: M('createShareLink', 'CreateShareLinkInput'), variables: () => ({ input: { sessionId: ids.session } }) },
    { query: M('createShareLink', 'CreateShareLinkInput'), variables: () => ({ input: { sessionId: ids.fork } }) },
  ],
  'Mutation.revokeShareLink': [
    { query: M('revokeShareLink', 'RevokeShareLinkInput'), variables: () => ({ input: { id: ids.shareLink } }) },
  ],
  // Takes no id of the workspace: a file's ids are the file's own (a fork naming a session the file
  // does not define is refused as BAD_USER_INPUT, echoing only what was sent): export-import.test.ts.
  'Mutation.importSessions': [],
  'Mutation.heartbeatTurn': [{ query: M('heartbeatTurn', 'HeartbeatTurnInput'), variables: () => ({ input: { turnId: ids.turn } }) }],
  'Subscription.turnEvents': [
    {
      query: 'subscription($id: ID!) { turnEvents(sessionId: $id, afterSequence: 0) { sequence } }',
      variables: () => ({ id: ids.session }),
    },
  ],
  'Subscription.sessionEvents': [
    {
      query: 'subscription($id: ID!) { sessionEvents(sessionId: $id, afterSequence: 0) { sequence } }',
      variables: () => ({ id: ids.session }),
    },
  ],
};

/** A subscription over SSE from beta: its first message, then the stream is dropped. */
async function firstSseMessage(query: string, variables: Record<string, unknown>) {
  const controller = new AbortController();
  const response = await app.yoga.fetch('http://localhost/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${beta.apiKey}` },
    body: JSON.stringify({ query, variables }),
    signal: controller.signal,
  });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return null;
      buffer += decoder.decode(value, { stream: true });
      const line = buffer.split('\n').find((l) => l.startsWith('data:') && l.length > 6);
      if (line) return JSON.parse(line.slice(5)) as { data?: unknown; errors?: { extensions?: { code?: string } }[] };
    }
  } finally {
    controller.abort();
  }
}

describe(`workspace isolation sweep (${backend.label})`, () => {
  it('has a probe for every root field of the schema', () => {
    const schema = buildSchema(readFileSync(new URL('../../schema.graphql', import.meta.url), 'utf8'));
    const fields = ['Query', 'Mutation', 'Subscription'].flatMap((t) =>
      Object.keys((schema.getType(t) as GraphQLObjectType | undefined)?.getFields() ?? {}).map((f) => `${t}.${f}`),
    );
    expect(Object.keys(probes).sort()).toEqual(fields.sort());
  });

  it.each(Object.entries(probes).filter(([, list]) => list.length > 0))("%s with alpha's IDs gives beta nothing", async (field, list) => {
    const before = await alphaSnapshot();
    for (const probe of list) {
      const result = field.startsWith('Subscription.')
        ? await firstSseMessage(probe.query, probe.variables())
        : await gql(app, probe.query, probe.variables(), beta);
      const text = JSON.stringify(result);
      for (const secret of ['Alpha secret', 'secret question', 'partial', 'secret file', rawIdOf(ids.session)])
        expect(text).not.toContain(secret);
      if (result?.errors?.length) {
        expect(result.errors.map((e) => e.extensions?.code)).toEqual(result.errors.map(() => 'NOT_FOUND'));
      } else if (field.startsWith('Query.')) {
        const values = Object.values((result?.data ?? {}) as Record<string, Edges<{ id: string }> | null>);
        for (const value of values) {
          // A read answers null or a list without alpha's session; anything else is a leak.
          if (value === null) continue;
          expect(value.edges, text).toBeDefined();
          expect(value.edges.map((e) => e.node.id)).not.toContain(ids.session);
        }
      } else {
        throw new Error(`${field} answered beta without an error: ${text}`);
      }
    }
    expect(await alphaSnapshot()).toEqual(before);
  });

  it("creates in the caller's workspace only", async () => {
    await gqlOk(app, 'mutation { createSession(input: { title: "Beta 2" }) { id } }', undefined, beta);
    const seen = await gqlOk<{ sessions: Edges<{ title: string }> }, unknown>(
      app,
      'query { sessions(first: 50) { edges { node { title } } } }',
      undefined,
      alpha,
    );
    expect(seen.sessions.edges.map((e) => e.node.title)).not.toContain('Beta 2');
  });
});
