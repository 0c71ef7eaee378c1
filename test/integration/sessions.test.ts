import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEYS, backend, createTestApp, gql, gqlError, gqlOk, type TestApp, useTestApp, TWO_WORKSPACES } from '../helpers/app.js';
import {
  AppendMessages,
  CreateSession,
  DeleteSession,
  NodeQuery,
  SessionMessages,
  SessionsList,
  UpdateMessage,
  UpdateSession,
} from '../helpers/documents.js';

let app: TestApp;

useTestApp((built) => {
  app = built;
});

async function newSession(title = 'T', messages: { role: 'USER' | 'ASSISTANT' | 'SYSTEM' | 'TOOL'; text: string }[] = []) {
  const data = await gqlOk(app, CreateSession, { input: { title, messages } });
  return data.createSession;
}

async function messageCount(id: string) {
  const data = await gqlOk(app, SessionMessages, { id, first: 0 });
  return data.session!.messageCount;
}

describe(`sessions and messages (${backend.label})`, () => {
  it('creates a session, appends text and tool parts, and reads them back in index order', async () => {
    const session = await newSession('Planning', [{ role: 'SYSTEM', text: 'Be brief.' }]);
    expect(session).toMatchObject({ title: 'Planning', messageCount: 1, forkIndex: null, parent: null });
    expect(session.root.id).toBe(session.id);

    const appended = await gqlOk(app, AppendMessages, {
      input: {
        sessionId: session.id,
        messages: [
          { role: 'USER', text: 'Weather in Paris?' },
          {
            role: 'ASSISTANT',
            parts: [
              { text: { text: 'Let me check.' } },
              { toolCall: { callId: 'call-1', name: 'weather', arguments: { city: 'Paris' } } },
              { toolCall: { callId: 'call-2', name: 'time', arguments: {} } },
            ],
          },
          {
            role: 'TOOL',
            parts: [
              { toolResult: { callId: 'call-1', content: '18°C' } },
              { toolResult: { callId: 'call-2', content: 'timeout', isError: true } },
            ],
          },
          { role: 'ASSISTANT', text: 'It is 18°C.', agentId: 'planner' },
        ],
      },
    });
    expect(appended.appendMessages.session.messageCount).toBe(5);
    expect(appended.appendMessages.messages.map((m) => m.index)).toEqual([1, 2, 3, 4]);
    const [, assistant, tool, last] = appended.appendMessages.messages;
    expect(assistant.text).toBe('Let me check.');
    expect(assistant.parts).toEqual([
      { __typename: 'TextPart', text: 'Let me check.' },
      { __typename: 'ToolCallPart', callId: 'call-1', name: 'weather', arguments: { city: 'Paris' } },
      { __typename: 'ToolCallPart', callId: 'call-2', name: 'time', arguments: {} },
    ]);
    expect(tool.parts[1]).toEqual({ __typename: 'ToolResultPart', callId: 'call-2', content: 'timeout', isError: true });
    expect(last.agentId).toBe('planner');
    expect(last.tokenCount).toBeGreaterThan(3);

    const firstPage = await gqlOk(app, SessionMessages, { id: session.id, first: 2 });
    const conn = firstPage.session!.messages;
    expect(conn.edges.map((e) => e.node.index)).toEqual([0, 1]);
    expect(conn.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });

    const second = await gqlOk(app, SessionMessages, { id: session.id, first: 2, after: conn.pageInfo.endCursor });
    expect(second.session!.messages.edges.map((e) => e.node.index)).toEqual([2, 3]);

    const tail = await gqlOk(app, SessionMessages, { id: session.id, last: 2 });
    expect(tail.session!.messages.edges.map((e) => e.node.text)).toEqual(['', 'It is 18°C.']);
    expect(tail.session!.messages.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: false });

    const before = await gqlOk(app, SessionMessages, { id: session.id, last: 10, before: tail.session!.messages.pageInfo.startCursor });
    expect(before.session!.messages.edges.map((e) => e.node.index)).toEqual([0, 1, 2]);
  });

  it('stores attachments and shows them as parts', async () => {
    const session = await newSession();
    const data = await gqlOk(app, AppendMessages, {
      input: {
        sessionId: session.id,
        messages: [
          {
            role: 'USER',
            parts: [{ text: { text: 'Read this' } }, { attachment: { name: 'notes.md', mimeType: 'text/markdown', content: 'héllo' } }],
          },
        ],
      },
    });
    const part = data.appendMessages.messages[0].parts[1];
    expect(part).toMatchObject({ __typename: 'AttachmentPart', attachment: { name: 'notes.md', mimeType: 'text/markdown', size: 6 } });
  });

  it('refuses bad input with BAD_USER_INPUT and writes nothing', async () => {
    const session = await newSession('Bad', [{ role: 'USER', text: 'hi' }]);
    const cases: [string, unknown][] = [
      ['tool result without a call', [{ role: 'TOOL', parts: [{ toolResult: { callId: 'nope', content: 'x' } }] }]],
      [
        'result before its call in one batch',
        [
          { role: 'TOOL', parts: [{ toolResult: { callId: 'c9', content: 'x' } }] },
          { role: 'ASSISTANT', parts: [{ toolCall: { callId: 'c9', name: 'f' } }] },
        ],
      ],
      ['empty list', []],
      ['text and parts', [{ role: 'USER', text: 'a', parts: [{ text: { text: 'b' } }] }]],
      ['neither text nor parts', [{ role: 'USER' }]],
      ['no parts', [{ role: 'USER', parts: [] }]],
      ['tool call in a USER message', [{ role: 'USER', parts: [{ toolCall: { callId: 'c', name: 'f' } }] }]],
      ['text in a TOOL message', [{ role: 'TOOL', text: 'x' }]],
      ['empty call id', [{ role: 'ASSISTANT', parts: [{ toolCall: { callId: '', name: 'f' } }] }]],
      [
        'duplicate call id',
        [{ role: 'ASSISTANT', parts: [{ toolCall: { callId: 'd', name: 'f' } }, { toolCall: { callId: 'd', name: 'g' } }] }],
      ],
      ['bad MIME type', [{ role: 'USER', parts: [{ attachment: { name: 'a', mimeType: 'nonsense', content: 'x' } }] }]],
      [
        'a valid message before an invalid one',
        [
          { role: 'USER', text: 'fine' },
          { role: 'TOOL', parts: [{ toolResult: { callId: 'missing', content: 'x' } }] },
        ],
      ],
    ];
    for (const [label, messages] of cases) {
      const { code, message } = await gqlError(app, AppendMessages, { input: { sessionId: session.id, messages: messages as never } });
      expect(code, `${label}: ${message}`).toBe('BAD_USER_INPUT');
      expect(message.length, label).toBeGreaterThan(10);
    }
    expect(await messageCount(session.id)).toBe(1);

    const oneOf = await gql(
      app,
      `mutation { appendMessages(input: {sessionId: "${session.id}", messages: [{role: USER, parts: [{text: {text: "a"}, toolCall: {callId: "c", name: "f"}}]}]}) { session { id } } }`,
    );
    expect(oneOf.errors?.[0].message).toMatch(/exactly one|oneOf|one key/i);
    expect(await messageCount(session.id)).toBe(1);

    const negative = await gqlError(app, SessionMessages, { id: session.id, first: -1 });
    expect(negative.code).toBe('BAD_USER_INPUT');
    const badCursor = await gqlError(app, SessionMessages, { id: session.id, first: 1, after: 'garbage' });
    expect(badCursor.code).toBe('BAD_USER_INPUT');
  });

  it('answers NOT_FOUND for unknown sessions and BAD_USER_INPUT for malformed IDs', async () => {
    const session = await newSession();
    const unknown = Buffer.from('Session:01890000-0000-7000-8000-000000000000').toString('base64');
    expect((await gqlError(app, AppendMessages, { input: { sessionId: unknown, messages: [{ role: 'USER', text: 'x' }] } })).code).toBe(
      'NOT_FOUND',
    );
    expect((await gqlError(app, AppendMessages, { input: { sessionId: 'not-an-id', messages: [{ role: 'USER', text: 'x' }] } })).code).toBe(
      'BAD_USER_INPUT',
    );
    const data = await gqlOk(app, AppendMessages, { input: { sessionId: session.id, messages: [{ role: 'USER', text: 'x' }] } });
    const messageId = data.appendMessages.messages[0].id;
    // A Message ID where a Session ID belongs does not exist as a session.
    expect((await gqlError(app, AppendMessages, { input: { sessionId: messageId, messages: [{ role: 'USER', text: 'x' }] } })).code).toBe(
      'NOT_FOUND',
    );
    expect((await gqlOk(app, SessionMessages, { id: unknown })).session).toBeNull();
    const node = await gqlOk(app, NodeQuery, { id: messageId });
    expect(node.node).toMatchObject({ __typename: 'Message', id: messageId, text: 'x' });
  });

  it('changes a generating message until it is finished, then refuses with MESSAGE_IMMUTABLE', async () => {
    const session = await newSession();
    const data = await gqlOk(app, AppendMessages, {
      input: {
        sessionId: session.id,
        messages: [
          { role: 'USER', text: 'Tell me' },
          { role: 'ASSISTANT', text: '', generating: true },
        ],
      },
    });
    const streaming = data.appendMessages.messages[1];
    expect(streaming.generating).toBe(true);
    await gqlOk(app, UpdateMessage, { input: { messageId: streaming.id, appendText: 'Once ' } });
    const done = await gqlOk(app, UpdateMessage, { input: { messageId: streaming.id, appendText: 'upon a time.', generating: false } });
    expect(done.updateMessage).toMatchObject({ text: 'Once upon a time.', generating: false });
    expect(done.updateMessage.tokenCount).toBeGreaterThan(0);

    const refused = await gqlError(app, UpdateMessage, { input: { messageId: streaming.id, appendText: 'more' } });
    expect(refused.code).toBe('MESSAGE_IMMUTABLE');
    const finishedUser = await gqlError(app, UpdateMessage, {
      input: { messageId: data.appendMessages.messages[0].id, generating: false },
    });
    expect(finishedUser.code).toBe('MESSAGE_IMMUTABLE');
    const page = await gqlOk(app, SessionMessages, { id: session.id });
    expect(page.session!.messages.edges[1].node.text).toBe('Once upon a time.');
  });

  it('streams text onto the last text part or a new one, keeping text and events exact under concurrent writers', async () => {
    const session = await newSession();
    const MESSAGE = `mutation($input: UpdateMessageInput!) { updateMessage(input: $input) {
      text generating parts { __typename ... on TextPart { text } ... on ToolCallPart { callId } } } }`;
    type Updated = {
      updateMessage: { text: string; generating: boolean; parts: { __typename: string; text?: string; callId?: string }[] };
    };
    const data = await gqlOk(app, AppendMessages, {
      input: {
        sessionId: session.id,
        messages: [
          { role: 'USER', text: 'Go' },
          { role: 'ASSISTANT', generating: true, parts: [{ text: { text: 'a' } }, { toolCall: { callId: 'c1', name: 'f' } }] },
          { role: 'ASSISTANT', generating: true, parts: [{ toolCall: { callId: 'c2', name: 'g' } }] },
        ],
      },
    });
    const [, afterCall, onlyCall] = data.appendMessages.messages;
    const x = await gqlOk<Updated, unknown>(app, MESSAGE, { input: { messageId: afterCall.id, appendText: 'X' } });
    expect(x.updateMessage.parts.map((p) => p.text ?? p.callId)).toEqual(['a', 'c1', 'X']);
    expect(x.updateMessage).toMatchObject({ text: 'a\nX', generating: true });
    const xy = await gqlOk<Updated, unknown>(app, MESSAGE, { input: { messageId: afterCall.id, appendText: 'Y' } });
    expect(xy.updateMessage.parts.map((p) => p.text ?? p.callId)).toEqual(['a', 'c1', 'XY']);
    expect(xy.updateMessage.text).toBe('a\nXY');
    const z = await gqlOk<Updated, unknown>(app, MESSAGE, { input: { messageId: onlyCall.id, appendText: 'Z' } });
    expect(z.updateMessage.parts.map((p) => p.text ?? p.callId)).toEqual(['c2', 'Z']);
    expect(z.updateMessage.text).toBe('Z');

    const writers = 12;
    await Promise.all(
      Array.from({ length: writers }, () => gqlOk(app, UpdateMessage, { input: { messageId: onlyCall.id, appendText: 'k;' } })),
    );
    const page = await gqlOk(app, SessionMessages, { id: session.id });
    expect(page.session!.messages.edges[2].node.text).toBe(`Z${'k;'.repeat(writers)}`);
    const dbId = Buffer.from(session.id, 'base64').toString().split(':')[1];
    const events = await app.runtime.db.prisma.sessionEvent.findMany({ where: { sessionId: dbId }, orderBy: { sequence: 'asc' } });
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
    const updates = events.filter((e) => e.type === 'MESSAGE_UPDATED');
    expect(updates).toHaveLength(3 + writers);
    expect(updates.at(-1)!.payload).toEqual({ index: 2, generating: true, appendText: 'k;' });
  });

  it('updates title, settings and metadata, and validates them', async () => {
    const session = await newSession('Old');
    const data = await gqlOk(app, UpdateSession, { input: { sessionId: session.id, title: 'New', settings: { model: 'gpt-4o' } } });
    expect(data.updateSession).toMatchObject({ title: 'New', settings: { model: 'gpt-4o' }, metadata: {} });
    expect((await gqlError(app, UpdateSession, { input: { sessionId: session.id, settings: [1, 2] } })).code).toBe('BAD_USER_INPUT');
    expect((await gqlError(app, UpdateSession, { input: { sessionId: session.id } })).code).toBe('BAD_USER_INPUT');
  });

  it('lists sessions newest first with pagination', async () => {
    const a = await newSession('list-a');
    const b = await newSession('list-b');
    const c = await newSession('list-c');
    const page = await gqlOk(app, SessionsList, { first: 2 });
    expect(page.sessions.edges.map((e) => e.node.id)).toEqual([c.id, b.id]);
    const next = await gqlOk(app, SessionsList, { first: 1, after: page.sessions.pageInfo.endCursor });
    expect(next.sessions.edges[0].node.id).toBe(a.id);
    expect(page.sessions.totalCount).toBeGreaterThanOrEqual(3);
  });

  it('deletes a session with its messages', async () => {
    const session = await newSession('Doomed', [{ role: 'USER', text: 'bye' }]);
    const data = await gqlOk(app, DeleteSession, { input: { sessionId: session.id } });
    expect(data.deleteSession.deletedSessionIds).toEqual([session.id]);
    expect((await gqlOk(app, SessionMessages, { id: session.id })).session).toBeNull();
    expect((await gqlError(app, DeleteSession, { input: { sessionId: session.id } })).code).toBe('NOT_FOUND');
  });

  it('keeps positions dense and unique under concurrent appends', async () => {
    const session = await newSession('Race');
    const writers = 16;
    await Promise.all(
      Array.from({ length: writers }, (_, i) =>
        gqlOk(app, AppendMessages, {
          input: {
            sessionId: session.id,
            messages: [
              { role: 'USER', text: `w${i}-a` },
              { role: 'ASSISTANT', text: `w${i}-b` },
            ],
          },
        }),
      ),
    );
    const page = await gqlOk(app, SessionMessages, { id: session.id, first: 100 });
    const nodes = page.session!.messages.edges.map((e) => e.node);
    expect(page.session!.messageCount).toBe(writers * 2);
    expect(nodes.map((n) => n.index)).toEqual(Array.from({ length: writers * 2 }, (_, i) => i));
    // Each writer's two messages stay adjacent: appends are atomic.
    for (let i = 0; i < nodes.length; i += 2) {
      expect(nodes[i + 1].text).toBe(nodes[i].text.replace(/-a$/, '-b'));
    }
  });

  it('reads sessions with their messages in a fixed number of queries, whatever the page size', async () => {
    for (let i = 0; i < 6; i++) {
      await newSession(`nplus1-${i}`, [
        { role: 'USER', text: 'q' },
        { role: 'ASSISTANT', text: 'a' },
        { role: 'USER', text: 'q2' },
      ]);
    }
    const counter = app.runtime.db.queries;
    const measure = async (first: number, messages: number) => {
      counter.reset();
      const data = await gqlOk(app, SessionsList, { first, messages });
      return { queries: counter.count, sessions: data.sessions.edges.length };
    };
    const small = await measure(2, 1);
    const large = await measure(6, 3);
    expect(large.sessions).toBe(6);
    expect(large.queries).toBe(small.queries);
    expect(large.queries).toBeLessThanOrEqual(4);
  });
});

describe(`workspaces (${backend.label})`, () => {
  let keyed: TestApp;

  beforeAll(async () => {
    keyed = await createTestApp({
      apiKeys: TWO_WORKSPACES,
    });
  });

  afterAll(async () => {
    await keyed?.close();
  });

  it('isolates workspaces: another key sees nothing, not even existence', async () => {
    const alpha = { apiKey: API_KEYS.alpha };
    const beta = { apiKey: API_KEYS.beta };
    const created = await gqlOk(keyed, CreateSession, { input: { title: 'secret', messages: [{ role: 'USER', text: 'x' }] } }, alpha);
    const id = created.createSession.id;
    expect((await gqlOk(keyed, SessionMessages, { id }, beta)).session).toBeNull();
    expect((await gqlOk(keyed, NodeQuery, { id }, beta)).node).toBeNull();
    expect((await gqlError(keyed, AppendMessages, { input: { sessionId: id, messages: [{ role: 'USER', text: 'y' }] } }, beta)).code).toBe(
      'NOT_FOUND',
    );
    expect((await gqlError(keyed, DeleteSession, { input: { sessionId: id } }, beta)).code).toBe('NOT_FOUND');
    const betaList = await gqlOk(keyed, SessionsList, { first: 50 }, beta);
    expect(betaList.sessions.edges.map((e) => e.node.id)).not.toContain(id);
    expect((await gqlOk(keyed, SessionMessages, { id }, alpha)).session?.messageCount).toBe(1);
  });

  it('requires a valid key once keys are configured', async () => {
    expect((await gqlError(keyed, SessionsList, { first: 1 })).code).toBe('UNAUTHENTICATED');
    expect((await gqlError(keyed, SessionsList, { first: 1 }, { apiKey: 'wrong-key-0123456789' })).code).toBe('UNAUTHENTICATED');
    expect((await gqlError(keyed, SessionsList, { first: 1 }, { headers: { authorization: 'Basic abc' } })).code).toBe('UNAUTHENTICATED');
  });
});

describe(`query limits (${backend.label})`, () => {
  it('refuses a too deep operation with QUERY_TOO_COMPLEX before running it', async () => {
    const nest = (depth: number): string => (depth === 0 ? 'id' : `id parent { ${nest(depth - 1)} }`);
    const deep = await gql(app, `{ sessions(first: 1) { edges { node { ${nest(14)} } } } }`);
    expect(deep.errors?.[0].extensions?.code).toBe('QUERY_TOO_COMPLEX');
    expect(deep.errors?.[0].message).toMatch(/levels deep/);
    const aliased = await gql(app, `{ ${Array.from({ length: 31 }, (_, i) => `a${i}: sessions(first: 1) { totalCount }`).join(' ')} }`);
    expect(aliased.errors?.[0].extensions?.code).toBe('QUERY_TOO_COMPLEX');
    const fine = await gql(app, `{ sessions(first: 1) { edges { node { ${nest(3)} } } } }`);
    expect(fine.errors).toBeUndefined();
  });
});

describe(`introspection (${backend.label})`, () => {
  it("answers GraphiQL's full introspection query despite the depth limit", async () => {
    const { getIntrospectionQuery } = await import('graphql');
    const result = await gql(app, getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true, oneOf: true }));
    expect(result.errors).toBeUndefined();
    expect(JSON.stringify(result.data)).toContain('"name":"forkSession"');
  });
});
