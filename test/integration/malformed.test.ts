import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { withClientIds } from '../../src/graphql/client-errors.js';
import { backend, globalIdOf, gql, gqlOk, type TestApp, useTestApp } from '../helpers/app.js';

/**
 * A corpus of malformed requests, one per class of issue 11 section 2: each must answer a GraphQL
 * error with a contract code (BAD_USER_INPUT unless said otherwise), never INTERNAL_SERVER_ERROR
 * and never no code, and write nothing.
 */
let app: TestApp;
let sessionId: string;
let messageId: string;
/** An active turn (on a session of its own, so the other cases see no turn). */
let turnId: string;

useTestApp((built) => {
  app = built;
});

async function rowCounts() {
  const p = app.runtime.db.prisma;
  return {
    sessions: await p.session.count(),
    messages: await p.message.count(),
    attachments: await p.attachment.count(),
    compactions: await p.compaction.count(),
    turns: await p.turn.count(),
    events: await p.sessionEvent.count(),
  };
}

const CREATE = 'mutation($input: CreateSessionInput!) { createSession(input: $input) { id } }';
const APPEND = 'mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { id } } }';
const UPDATE_SESSION = 'mutation($input: UpdateSessionInput!) { updateSession(input: $input) { id } }';
const UPDATE_MESSAGE = 'mutation($input: UpdateMessageInput!) { updateMessage(input: $input) { id } }';
const COMPACT = 'mutation($input: CompactSessionInput!) { compactSession(input: $input) { id } }';
const ASSEMBLE = 'mutation($input: AssembleContextInput!) { assembleContext(input: $input) { tokenCount } }';
const FORK = 'mutation($input: ForkSessionInput!) { forkSession(input: $input) { session { id } } }';
const START_TURN = 'mutation($input: StartTurnInput!) { startTurn(input: $input) { id } }';
const REPORT = 'mutation($input: ReportUsageInput!) { reportUsage(input: $input) { id } }';
const COMPLETE = 'mutation($input: CompleteAgentInput!) { completeAgent(input: $input) { id } }';
const CANCEL = 'mutation($input: CancelTurnInput!) { cancelTurn(input: $input) { id } }';
const HEARTBEAT = 'mutation($input: HeartbeatTurnInput!) { heartbeatTurn(input: $input) { id } }';

/** JSON text nested `depth` levels (built as text: JSON.stringify itself overflows on it). */
const nested = (depth: number) => new RawJson(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`);

class RawJson {
  constructor(readonly text: string) {}
}

/** Runs an operation whose variables may hold RawJson values, spliced into the body as text. */
async function post(query: string, variables: Record<string, unknown>) {
  const raws: string[] = [];
  const json = JSON.stringify({ query, variables }, (_key, value) => {
    if (!(value instanceof RawJson)) return value;
    raws.push(value.text);
    return `@@raw${raws.length - 1}@@`;
  }).replace(/"@@raw(\d+)@@"/g, (_m, i) => raws[Number(i)]);
  const response = await app.yoga.fetch('http://localhost/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: json,
  });
  return (await response.json()) as { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] };
}

beforeAll(async () => {
  const created = await gqlOk<{ createSession: { id: string } }, unknown>(app, CREATE, { input: { title: 'Corpus' } });
  sessionId = created.createSession.id;
  const appended = await gqlOk<{ appendMessages: { messages: { id: string }[] } }, unknown>(app, APPEND, {
    input: {
      sessionId,
      messages: [
        { role: 'USER', text: 'hi' },
        { role: 'ASSISTANT', text: 'typing', generating: true },
      ],
    },
  });
  messageId = appended.appendMessages.messages[1].id;
  const other = await gqlOk<{ createSession: { id: string } }, unknown>(app, CREATE, { input: { title: 'Turns' } });
  const started = await gqlOk<{ startTurn: { id: string } }, unknown>(app, START_TURN, {
    input: { sessionId: other.createSession.id, agentIds: ['a'] },
  });
  turnId = started.startTurn.id;
});

type Case = [name: string, query: string, variables: () => Record<string, unknown>, code?: string];

/** `F_i { ...F_{i-1} ...F_{i-1} }`: expands to 2^n fields, under a kilobyte of text. */
function fragmentBomb(n: number) {
  const fragments = [`fragment F0 on Session { id title }`];
  for (let i = 1; i <= n; i++) fragments.push(`fragment F${i} on Session { ...F${i - 1} ...F${i - 1} }`);
  return `{ sessions(first: 1) { edges { node { ...F${n} } } } } ${fragments.join(' ')}`;
}

const text = (t: string) => ({ role: 'USER', text: t });
const STRINGS: Record<string, string> = { NUL: 'a\u0000b', 'a lone high surrogate': 'a\uD800b', 'a lone low surrogate': 'a\uDC00b' };

const stringCases: Case[] = Object.entries(STRINGS).flatMap(([what, bad]): Case[] => [
  [`${what} in a title`, CREATE, () => ({ input: { title: bad } })],
  [`${what} in message text`, CREATE, () => ({ input: { messages: [text(bad)] } })],
  [`${what} in a settings key`, CREATE, () => ({ input: { settings: { [bad]: 1 } } })],
  [`${what} in a settings value`, CREATE, () => ({ input: { settings: { model: bad } } })],
  [`${what} in metadata`, UPDATE_SESSION, () => ({ input: { sessionId, metadata: { tags: ['x', bad] } } })],
  [
    `${what} in tool call arguments`,
    APPEND,
    () => ({
      input: { sessionId, messages: [{ role: 'ASSISTANT', parts: [{ toolCall: { callId: 'c', name: 't', arguments: { q: bad } } }] }] },
    }),
  ],
  [
    `${what} in a call id`,
    APPEND,
    () => ({ input: { sessionId, messages: [{ role: 'ASSISTANT', parts: [{ toolCall: { callId: bad, name: 't' } }] }] } }),
  ],
  [`${what} in an agent id`, APPEND, () => ({ input: { sessionId, agentId: bad, messages: [text('x')] } })],
  [
    `${what} in an attachment`,
    APPEND,
    () => ({
      input: { sessionId, messages: [{ role: 'USER', parts: [{ attachment: { name: 'a.txt', mimeType: 'text/plain', content: bad } }] }] },
    }),
  ],
  [`${what} in a summary`, COMPACT, () => ({ input: { sessionId, uptoIndex: 1, summary: bad } })],
  [`${what} in appendText`, UPDATE_MESSAGE, () => ({ input: { messageId, appendText: bad } })],
  [`${what} in turnContext`, ASSEMBLE, () => ({ input: { sessionId, turnContext: { note: bad } } })],
]);

/** IDs that are no global ID at all (a well-formed ID of another type is NOT_FOUND instead). */
const MALFORMED_IDS: Record<string, string> = {
  'a malformed ID': 'not-an-id',
  'a global ID without an id': Buffer.from('Turn:').toString('base64'),
  'a 300-character ID': 'x'.repeat(300),
};

/** Every turn argument that takes an ID, with the rest of a valid input. */
const turnIdCases: Case[] = Object.entries(MALFORMED_IDS).flatMap(([what, bad]): Case[] => [
  [`${what} as startTurn's sessionId`, START_TURN, () => ({ input: { sessionId: bad, agentIds: ['a'] } })],
  [`${what} as reportUsage's turnId`, REPORT, () => ({ input: { turnId: bad, agentId: 'a', inputTokens: 1 } })],
  [`${what} as completeAgent's turnId`, COMPLETE, () => ({ input: { turnId: bad, agentId: 'a', success: true } })],
  [`${what} as cancelTurn's turnId`, CANCEL, () => ({ input: { turnId: bad } })],
  [`${what} as heartbeatTurn's turnId`, HEARTBEAT, () => ({ input: { turnId: bad } })],
  [`${what} as appendMessages' turnId`, APPEND, () => ({ input: { sessionId, turnId: bad, messages: [text('x')] } })],
  [`${what} as assembleContext's turnId`, ASSEMBLE, () => ({ input: { sessionId, turnId: bad } })],
]);

/** Counts a report cannot hold: coercion refuses fractions and 2^31, the domain negatives. */
const reportCases: Case[] = [
  ['1.5 inputTokens', REPORT, () => ({ input: { turnId, agentId: 'a', inputTokens: 1.5 } })],
  ['2^31 outputTokens', REPORT, () => ({ input: { turnId, agentId: 'a', outputTokens: 2 ** 31 } })],
  ['2^40 cacheReadTokens', REPORT, () => ({ input: { turnId, agentId: 'a', cacheReadTokens: 2 ** 40 } })],
  ['a string for cacheWriteTokens', REPORT, () => ({ input: { turnId, agentId: 'a', cacheWriteTokens: '7' } })],
  ['-1 inputTokens', REPORT, () => ({ input: { turnId, agentId: 'a', inputTokens: -1 } })],
  ['a negative cost', REPORT, () => ({ input: { turnId, agentId: 'a', cost: -0.5 } })],
];

const cases: Case[] = [
  ...stringCases,
  ...turnIdCases,
  ...reportCases,
  ['settings nested 5,000 levels', CREATE, () => ({ input: { settings: nested(5000) } })],
  [
    'tool arguments nested 5,000 levels',
    APPEND,
    () => ({
      input: { sessionId, messages: [{ role: 'ASSISTANT', parts: [{ toolCall: { callId: 'c', name: 't', arguments: nested(5000) } }] }] },
    }),
  ],
  ['turnContext nested 5,000 levels', ASSEMBLE, () => ({ input: { sessionId, turnContext: nested(5000) } })],
  ['settings of 2 MB', CREATE, () => ({ input: { settings: { big: 'x'.repeat(2 * 1024 * 1024) } } })],
  ['a __proto__ key in settings', CREATE, () => ({ input: { settings: JSON.parse('{"__proto__": {"a": 1}}') } })],
  ['a constructor key in metadata', UPDATE_SESSION, () => ({ input: { sessionId, metadata: { constructor: 1 } } })],
  ['an empty title', CREATE, () => ({ input: { title: '' } })],
  ['a blank title', UPDATE_SESSION, () => ({ input: { sessionId, title: '  \n ' } })],
  ['a blank fork title', FORK, () => ({ input: { sessionId, messageIndex: 0, title: ' ' } })],
  ['a 1 MB top-level agentId', APPEND, () => ({ input: { sessionId, agentId: 'a'.repeat(1024 * 1024), messages: [text('x')] } })],
  [
    'a 1 MB tool name',
    APPEND,
    () => ({
      input: { sessionId, messages: [{ role: 'ASSISTANT', parts: [{ toolCall: { callId: 'c', name: 'n'.repeat(1024 * 1024) } }] }] },
    }),
  ],
  ['a text longer than the string cap', CREATE, () => ({ input: { messages: [text('x'.repeat(backend.caps.stringLength + 1))] } })],
  [
    "appendText taking a message's text past the string cap",
    UPDATE_MESSAGE,
    () => ({ input: { messageId, appendText: 'x'.repeat(backend.caps.stringLength) } }),
  ],
  [
    'texts adding up past the per-call cap',
    CREATE,
    () => ({ input: { messages: Array.from({ length: 2 }, () => text('x'.repeat(backend.caps.stringLength))) } }),
  ],
  ['a wrong enum value', APPEND, () => ({ input: { sessionId, messages: [{ role: 'ROBOT', text: 'x' }] } })],
  ['a missing required variable', APPEND, () => ({})],
  ['a missing required input field', APPEND, () => ({ input: { messages: [text('x')] } })],
  ['2^31 for an Int', COMPACT, () => ({ input: { sessionId, uptoIndex: 2 ** 31, summary: 's' } })],
  ['1.5 for an Int', COMPACT, () => ({ input: { sessionId, uptoIndex: 1.5, summary: 's' } })],
  ['a string for an input object', CREATE, () => ({ input: 'x' })],
  ['an invalid global ID', APPEND, () => ({ input: { sessionId: 'not-an-id', messages: [text('x')] } })],
  ['an invalid global ID to session()', 'query($id: ID!) { session(id: $id) { id } }', () => ({ id: '%%%' })],
  ['an invalid cursor', 'query($c: String) { sessions(first: 1, after: $c) { totalCount } }', () => ({ c: 'bogus' })],
  [
    'a cursor decoding to 1e999',
    'query($id: ID!, $c: String) { session(id: $id) { messages(first: 1, after: $c) { edges { cursor } } } }',
    () => ({ id: sessionId, c: Buffer.from('idx:1e999').toString('base64url') }),
  ],
  ['a negative first', 'query { sessions(first: -1) { totalCount } }', () => ({})],
  ['a too large first', 'query { sessions(first: 100000) { totalCount } }', () => ({})],
  [
    'a negative last on messages',
    'query($id: ID!) { session(id: $id) { messages(last: -5) { edges { cursor } } } }',
    () => ({ id: sessionId }),
  ],
  ['a syntax error', 'query { sessions(first: 1) { totalCount }', () => ({})],
  ['a fragment bomb (2^22 fields in 1 kB)', fragmentBomb(22), () => ({}), 'QUERY_TOO_COMPLEX'],
  [
    '500 aliased __schema',
    `{ ${Array.from({ length: 500 }, (_, i) => `s${i}: __schema { types { name } }`).join(' ')} }`,
    () => ({}),
    'QUERY_TOO_COMPLEX',
  ],
  [
    'introspection nested 30 deep',
    `{ __schema { types { ${'ofType { '.repeat(30)}name${' }'.repeat(30)} } } }`,
    () => ({}),
    'QUERY_TOO_COMPLEX',
  ],
  ['10,000 nested selections', `{ ${'sessions { '.repeat(10_000)}${'}'.repeat(10_000)} }`, () => ({}), 'QUERY_TOO_COMPLEX'],
  [
    '10,000 nested list literals',
    `mutation { createSession(input: { settings: ${'['.repeat(10_000)}${']'.repeat(10_000)} }) { id } }`,
    () => ({}),
    'QUERY_TOO_COMPLEX',
  ],
  // 50,000 tokens in 550 kB: within the smallest body cap (1 MiB on PGlite), so the token limit answers.
  ['50,000 tokens', `{ sessions(first: 1) { ${'totalCount '.repeat(50_000)} } }`, () => ({}), 'QUERY_TOO_COMPLEX'],
  [
    'brackets in strings and comments do not count',
    `{ sessions(after: "${'{'.repeat(500)}") { totalCount } } # ${'['.repeat(500)}`,
    () => ({}),
  ],
  ['an unknown field', 'query { sessionz { id } }', () => ({})],
];

describe(`malformed requests (${backend.label})`, () => {
  it.each(cases)('%s answers a contract code and writes nothing', async (_name, query, variables, code = 'BAD_USER_INPUT') => {
    const before = await rowCounts();
    const result = await post(query, variables());
    expect(result.errors?.length, JSON.stringify(result)).toBeGreaterThan(0);
    expect(result.errors!.map((e) => e.extensions?.code)).toEqual(result.errors!.map(() => code));
    expect(await rowCounts()).toEqual(before);
  });

  it("names the client's opaque IDs in messages, never database ids", async () => {
    const turnId = globalIdOf('Turn', randomUUID());
    const result = await gql(app, ASSEMBLE, { input: { sessionId, turnId } });
    expect(result.errors?.[0].extensions?.code).toBe('NOT_FOUND');
    expect(result.errors?.[0].message).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/);
    expect(withClientIds('Turn 01a20000-0000-4000-8000-000000000000 was not found.')).toBe(
      `Turn ${globalIdOf('Turn', '01a20000-0000-4000-8000-000000000000')} was not found.`,
    );
  });

  it("refuses a string or attachment over the backend's cap naming the field and the cap, and takes one at the cap", async () => {
    const cap = backend.caps.stringLength;
    expect(app.runtime.caps.stringLength).toBe(cap);
    const long = await gql(app, APPEND, { input: { sessionId, messages: [text('ok'), text('x'.repeat(cap + 1))] } });
    expect(long.errors?.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
    expect(long.errors?.[0].message).toBe(`input.messages[1].text is longer than ${cap} characters.`);
    // 'é' is 2 bytes in UTF-8: within the string cap in characters, over the attachment cap in bytes.
    const file = (content: string) => ({ role: 'USER', parts: [{ attachment: { name: 'a.txt', mimeType: 'text/plain', content } }] });
    const big = await gql(app, APPEND, { input: { sessionId, messages: [file('é'.repeat(cap / 2 + 1))] } });
    expect(big.errors?.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
    expect(big.errors?.[0].message).toBe(
      `messages[0].parts[0].attachment.content is larger than ${backend.caps.attachmentBytes} bytes (UTF-8), the cap on this server.`,
    );
    const before = await rowCounts();
    expect((await gql(app, APPEND, { input: { sessionId, messages: [file('é'.repeat(cap / 2))] } })).errors).toBeUndefined();
    expect((await rowCounts()).attachments).toBe(before.attachments + 1);
  });

  it('names the argument path of a refused string', async () => {
    const result = await gql(app, APPEND, { input: { sessionId, messages: [text('ok'), text('a\u0000b')] } });
    expect(result.errors?.[0].message).toContain('input.messages[1].text');
  });

  it('answers node(id:) with an ID of a type that is no Node, or unknown, without data', async () => {
    for (const raw of ['Attachment:3f1c2d4e-0000-4000-8000-000000000000', 'Nothing:1', 'Session']) {
      const id = Buffer.from(raw).toString('base64');
      const result = await gql(app, 'query($id: ID!) { node(id: $id) { id } }', { id });
      if (result.errors) expect(result.errors.map((e) => e.extensions?.code)).toEqual(result.errors.map(() => 'BAD_USER_INPUT'));
      else expect(result.data).toEqual({ node: null });
    }
  });

  it('answers a GET with variables that are not JSON with BAD_USER_INPUT', async () => {
    const before = await rowCounts();
    const response = await app.yoga.fetch(
      `http://localhost/graphql?query=${encodeURIComponent('{ sessions(first: 1) { totalCount } }')}&variables=%7Bbad`,
      {
        // The CSRF guard wants this header on a GET; without it the request is refused before parsing.
        headers: { accept: 'application/json', 'graphql-require-preflight': '1' },
      },
    );
    const body = (await response.json()) as { errors?: { extensions?: { code?: string } }[] };
    expect(response.status).toBe(400);
    expect(body.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
    expect(await rowCounts()).toEqual(before);
  });

  it('refuses a multipart upload mapped onto a variable that is not a File', async () => {
    const before = await rowCounts();
    const form = new FormData();
    // graphql-multipart-request-spec: the file part replaces variables.input.settings (JSON).
    form.set('operations', JSON.stringify({ query: CREATE, variables: { input: { settings: null } } }));
    form.set('map', JSON.stringify({ 0: ['variables.input.settings'] }));
    form.set('0', new Blob(['hello'], { type: 'text/plain' }), 'a.txt');
    const response = await app.yoga.fetch('http://localhost/graphql', {
      method: 'POST',
      body: form,
      headers: { 'graphql-require-preflight': '1' },
    });
    const body = (await response.json()) as { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] };
    expect(body.data ?? null).toBeNull();
    // graphql-js and the compiled path word the coercion differently; both refuse the file.
    expect(body.errors?.[0].message).toMatch(/Expected type JSON|A file can only be sent where the schema takes a File/);
    expect(body.errors?.[0].extensions?.code).toBe('BAD_USER_INPUT');
    expect(await rowCounts()).toEqual(before);
  });
});
