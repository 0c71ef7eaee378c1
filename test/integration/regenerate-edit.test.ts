import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { graphql } from '../generated/index.js';
import type { MessageInput } from '../generated/graphql.js';
import { API_KEYS, backend, gqlError, gqlOk, rawIdOf, type TestApp, TWO_WORKSPACES, useTestApp } from '../helpers/app.js';
import { AppendMessages, CreateSession, ForkPage, ForkSession, UpdateMessage } from '../helpers/documents.js';
import { subscribeSse } from '../helpers/subscriptions.js';

// Branches as users know them: regenerateMessage ("try another answer"), editMessage ("change my
// question") and Message.alternatives (the "‹ 2 / 3 ›" switcher), over HTTP on the test backend.

let app: TestApp;
useTestApp(
  (built) => {
    app = built;
  },
  { apiKeys: TWO_WORKSPACES },
);

const alpha = { apiKey: API_KEYS.alpha };
const beta = { apiKey: API_KEYS.beta };

const Regenerate = graphql(`
  mutation Regenerate($input: RegenerateMessageInput!) {
    regenerateMessage(input: $input) {
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
        role
      }
    }
  }
`);

const Edit = graphql(`
  mutation Edit($input: EditMessageInput!) {
    editMessage(input: $input) {
      session {
        id
        title
        forkIndex
        messageCount
        parent {
          id
        }
      }
      message {
        id
        index
        role
        text
        parts {
          __typename
          ... on AttachmentPart {
            attachment {
              name
              size
            }
          }
        }
        session {
          id
        }
      }
      excludedMessage {
        id
      }
    }
  }
`);

const Alternatives = graphql(`
  query Alternatives($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
    node(id: $id) {
      ... on Message {
        alternatives(first: $first, after: $after, last: $last, before: $before) {
          totalCount
          currentIndex
          pageInfo {
            hasNextPage
            hasPreviousPage
            startCursor
            endCursor
          }
          edges {
            cursor
            node {
              id
              index
              role
              text
              session {
                id
                title
              }
            }
          }
        }
      }
    }
  }
`);

const SessionAlternatives = graphql(`
  query SessionAlternatives($id: ID!) {
    session(id: $id) {
      messages(first: 50) {
        edges {
          node {
            id
            alternatives(first: 10) {
              totalCount
            }
          }
        }
      }
    }
  }
`);

async function createRoot(title: string, messages: MessageInput[]) {
  return (await gqlOk(app, CreateSession, { input: { title, messages } }, alpha)).createSession;
}

/** The ids and texts of a session's messages, in index order. */
async function messagesOf(id: string) {
  const data = await gqlOk(app, ForkPage, { id, first: 100 }, alpha);
  return data.session!.messages.edges.map((e) => ({ id: e.node.id, text: e.node.text, role: e.node.role }));
}

async function alternatives(id: string, page: { first?: number; after?: string; last?: number; before?: string } = { first: 50 }) {
  const data = await gqlOk(app, Alternatives, { id, ...page }, alpha);
  return (data.node as { alternatives: NonNullable<Extract<typeof data.node, { alternatives: unknown }>>['alternatives'] }).alternatives;
}

const regenerate = (input: { messageId: string; sessionId?: string; title?: string }, options = alpha) =>
  gqlOk(app, Regenerate, { input }, options).then((d) => d.regenerateMessage);
const edit = (input: { messageId: string; sessionId?: string; text?: string; parts?: unknown[]; title?: string }, options = alpha) =>
  gqlOk(app, Edit, { input: input as never }, options).then((d) => d.editMessage);
const append = (sessionId: string, messages: MessageInput[]) =>
  gqlOk(app, AppendMessages, { input: { sessionId, messages } }, alpha).then((d) => d.appendMessages);

const chat = (label: string): MessageInput[] => [
  { role: 'USER', text: `${label} q0` },
  { role: 'ASSISTANT', text: `${label} a1` },
  { role: 'USER', text: `${label} q2` },
  { role: 'ASSISTANT', text: `${label} a3` },
];

describe(`regenerateMessage and editMessage (${backend.label})`, () => {
  it('regenerate forks before the answer, "(fork N)" named, ending on its question; the new answer is an alternative', async () => {
    const root = await createRoot('Chat', chat('R'));
    const [q0, , q2, a3] = await messagesOf(root.id);

    const regenerated = await regenerate({ messageId: a3.id });
    expect(regenerated.session).toMatchObject({ title: 'Chat (fork 1)', forkIndex: 3, messageCount: 3, parent: { id: root.id } });
    expect(regenerated.excludedMessage).toEqual({ id: a3.id, index: 3, role: 'ASSISTANT' });
    const inFork = await messagesOf(regenerated.session.id);
    expect(inFork.map((m) => m.text)).toEqual(['R q0', 'R a1', 'R q2']);
    expect(inFork.at(-1)!.id).toBe(q2.id);

    // Not answered yet: the empty branch contributes nothing.
    expect((await alternatives(a3.id)).totalCount).toBe(1);

    const answered = await append(regenerated.session.id, [{ role: 'ASSISTANT', text: 'R a3 again' }]);
    const again = answered.messages[0];
    for (const id of [a3.id, again.id]) {
      const alts = await alternatives(id);
      expect(alts.totalCount).toBe(2);
      expect(alts.edges.map((e) => [e.node.id, e.node.text, e.node.index, e.node.session.id])).toEqual([
        [a3.id, 'R a3', 3, root.id],
        [again.id, 'R a3 again', 3, regenerated.session.id],
      ]);
    }
    // A message nobody branched at is its own only alternative.
    const own = await alternatives(q0.id);
    expect(own.edges.map((e) => e.node.id)).toEqual([q0.id]);
  });

  it('edit forks before the question and appends the new version, in one call; both versions are alternatives', async () => {
    const root = await createRoot('Edits', chat('E'));
    const [, , q2] = await messagesOf(root.id);
    const edited = await edit({ messageId: q2.id, text: 'E q2 edited' });
    expect(edited.session).toMatchObject({ title: 'Edits (fork 1)', forkIndex: 2, messageCount: 3, parent: { id: root.id } });
    expect(edited.message).toMatchObject({ index: 2, role: 'USER', text: 'E q2 edited', session: { id: edited.session.id } });
    expect(edited.excludedMessage.id).toBe(q2.id);
    expect((await messagesOf(edited.session.id)).map((m) => m.text)).toEqual(['E q0', 'E a1', 'E q2 edited']);
    // The parent is untouched.
    expect((await messagesOf(root.id)).map((m) => m.text)).toEqual(['E q0', 'E a1', 'E q2', 'E a3']);

    const alts = await alternatives(q2.id);
    expect(alts.edges.map((e) => [e.node.text, e.node.session.id])).toEqual([
      ['E q2', root.id],
      ['E q2 edited', edited.session.id],
    ]);
    // One read for a whole page of messages, each with its count.
    const counts = await gqlOk(app, SessionAlternatives, { id: root.id }, alpha);
    expect(counts.session!.messages.edges.map((e) => e.node.alternatives.totalCount)).toEqual([1, 1, 2, 1]);
  });

  it('edit takes parts as append does (attachments included) and refuses what append refuses, writing nothing', async () => {
    const root = await createRoot('Parts', chat('P'));
    const [, a1, q2] = await messagesOf(root.id);
    const edited = await edit({
      messageId: q2.id,
      parts: [{ text: { text: 'see file' } }, { attachment: { name: 'notes.txt', mimeType: 'text/plain', content: 'hello' } }],
    });
    expect(edited.message.parts.map((p) => p.__typename)).toEqual(['TextPart', 'AttachmentPart']);
    expect(edited.message.parts[1]).toMatchObject({ attachment: { name: 'notes.txt', size: 5 } });

    const before = await app.runtime.db.prisma.session.count();
    const refused = [
      { messageId: q2.id, text: 'x', parts: [{ text: { text: 'y' } }] },
      { messageId: q2.id },
      { messageId: q2.id, parts: [] },
      { messageId: q2.id, parts: [{ toolCall: { callId: 'c', name: 'n' } }] },
      { messageId: q2.id, text: 'x', title: 't'.repeat(100_000) },
    ];
    for (const input of refused) {
      const error = await gqlError(app, Edit, { input: input as never }, alpha);
      expect(error.code, JSON.stringify(input).slice(0, 200)).toBe('BAD_USER_INPUT');
    }
    const wrongRole = await gqlError(app, Edit, { input: { messageId: a1.id, text: 'x' } }, alpha);
    expect(wrongRole.code).toBe('FORK_POINT_NOT_USER_MESSAGE');
    expect(await app.runtime.db.prisma.session.count()).toBe(before);
  });

  it('regenerate refuses what it cannot branch at, with typed errors, and writes nothing', async () => {
    const root = await createRoot('Refusals', [
      ...chat('X'),
      { role: 'USER', text: 'X q4' },
      { role: 'ASSISTANT', parts: [{ toolCall: { callId: 'call-1', name: 'lookup', arguments: { q: 1 } } }] },
      { role: 'ASSISTANT', text: 'X a6 (between the call and its result)' },
      { role: 'TOOL', parts: [{ toolResult: { callId: 'call-1', content: 'found' } }] },
      { role: 'ASSISTANT', text: 'X a8 after the round' },
    ]);
    const rows = await messagesOf(root.id);
    const before = await app.runtime.db.prisma.session.count();

    const user = await gqlError(app, Regenerate, { input: { messageId: rows[2].id } }, alpha);
    expect(user.code).toBe('REGENERATE_NOT_ASSISTANT_MESSAGE');
    expect(user.message).toContain('editMessage');
    expect((await gqlError(app, Regenerate, { input: { messageId: rows[7].id } }, alpha)).code).toBe('REGENERATE_NOT_ASSISTANT_MESSAGE');
    const inRound = await gqlError(app, Regenerate, { input: { messageId: rows[6].id } }, alpha);
    expect(inRound.code).toBe('FORK_POINT_IN_TOOL_ROUND');
    expect(inRound.message).toContain('call-1');
    // Unknown, malformed, another workspace's: not found / bad input, never an existence leak.
    const unknown = Buffer.from('Message:00000000-0000-7000-8000-000000000000').toString('base64');
    expect((await gqlError(app, Regenerate, { input: { messageId: unknown } }, alpha)).code).toBe('NOT_FOUND');
    expect((await gqlError(app, Regenerate, { input: { messageId: 'nope' } }, alpha)).code).toBe('BAD_USER_INPUT');
    expect((await gqlError(app, Regenerate, { input: { messageId: rows[3].id } }, beta)).code).toBe('NOT_FOUND');
    expect((await gqlError(app, Edit, { input: { messageId: rows[2].id, text: 'x' } }, beta)).code).toBe('NOT_FOUND');
    expect((await gqlOk(app, Alternatives, { id: rows[3].id }, beta)).node).toBeNull();

    // A generating answer cannot be regenerated until it is finished.
    const streaming = await append(root.id, [
      { role: 'USER', text: 'X q9' },
      { role: 'ASSISTANT', text: 'partial', generating: true },
    ]);
    const generating = await gqlError(app, Regenerate, { input: { messageId: streaming.messages[1].id } }, alpha);
    expect(generating.code).toBe('BAD_USER_INPUT');
    expect(generating.message).toContain('generating');
    expect(await app.runtime.db.prisma.session.count()).toBe(before);
    await gqlOk(app, UpdateMessage, { input: { messageId: streaming.messages[1].id, generating: false } }, alpha);

    // The answer after a complete tool round can: the branch ends on the tool result.
    const afterRound = await regenerate({ messageId: rows[8].id });
    expect(afterRound.session.messageCount).toBe(8);
    expect((await messagesOf(afterRound.session.id)).at(-1)!.role).toBe('TOOL');
  });

  it('alternatives are transitive: branches of branches at the same index after the same prefix form one group', async () => {
    const root = await createRoot('Tree', chat('T'));
    const [, , q2, a3] = await messagesOf(root.id);
    // A later branch of the root (cut after index 3) sees a3 through the fork: the same message.
    const late = (await append(root.id, [{ role: 'USER', text: 'T q4' }])).messages[0];
    const wide = (await gqlOk(app, ForkSession, { input: { sessionId: root.id, messageId: late.id } }, alpha)).forkSession.session;

    const r1 = await regenerate({ messageId: a3.id });
    const b1 = (await append(r1.session.id, [{ role: 'ASSISTANT', text: 'T b1' }])).messages[0];
    // Regenerating the alternative (a branch's own first message) joins the same group.
    const r2 = await regenerate({ messageId: b1.id });
    expect(r2.session.parent!.id).toBe(r1.session.id);
    const b2 = (await append(r2.session.id, [{ role: 'ASSISTANT', text: 'T b2' }])).messages[0];
    // Regenerating a3 as seen through the later branch forks that branch (sessionId given): same group.
    const r3 = await regenerate({ messageId: a3.id, sessionId: wide.id });
    expect(r3.session).toMatchObject({ parent: { id: wide.id }, forkIndex: 3 });
    const b3 = (await append(r3.session.id, [{ role: 'ASSISTANT', text: 'T b3' }])).messages[0];
    // An empty branch (regenerated, no answer yet) adds nothing.
    await regenerate({ messageId: b2.id });

    const titles = new Set([r1, r2, r3].map((r) => r.session.title));
    expect(titles.size).toBe(3);
    for (const [i, id] of [a3.id, b1.id, b2.id, b3.id].entries()) {
      const alts = await alternatives(id);
      expect(alts.edges.map((e) => e.node.text)).toEqual(['T a3', 'T b1', 'T b2', 'T b3']);
      expect(alts.currentIndex).toBe(i);
    }
    // A later message of a branch has its own group: different prefix.
    const next = (await append(r1.session.id, [{ role: 'USER', text: 'T q4 in r1' }])).messages[0];
    expect((await alternatives(next.id)).edges.map((e) => e.node.id)).toEqual([next.id]);
    // The question before them is untouched by the answers' branches.
    expect((await alternatives(q2.id)).totalCount).toBe(1);

    // Pages: first/after, last/before, with index cursors.
    const first = await alternatives(a3.id, { first: 2 });
    expect(first.edges.map((e) => e.node.text)).toEqual(['T a3', 'T b1']);
    expect(first.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    const rest = await alternatives(b3.id, { first: 2, after: first.pageInfo.endCursor! });
    expect(rest.currentIndex).toBe(3);
    expect(rest.edges.map((e) => e.node.text)).toEqual(['T b2', 'T b3']);
    expect(rest.pageInfo.hasNextPage).toBe(false);
    const last = await alternatives(a3.id, { last: 1, before: rest.pageInfo.endCursor! });
    expect(last.edges.map((e) => e.node.text)).toEqual(['T b2']);
    expect((await gqlError(app, Alternatives, { id: a3.id, first: 100_000 }, alpha)).code).toBe('BAD_USER_INPUT');
  });

  it('editing an inherited message forks the session that wrote it, or the one given that sees it', async () => {
    const root = await createRoot('Inherited', chat('I'));
    const [q0, , q2] = await messagesOf(root.id);
    const viewer = (await gqlOk(app, ForkSession, { input: { sessionId: root.id, messageIndex: 2 } }, alpha)).forkSession.session;

    const byOwner = await edit({ messageId: q0.id, text: 'I q0 (owner)' });
    expect(byOwner.session.parent!.id).toBe(root.id);
    const byViewer = await edit({ messageId: q0.id, sessionId: viewer.id, text: 'I q0 (viewer)' });
    expect(byViewer.session).toMatchObject({ parent: { id: viewer.id }, forkIndex: 0, messageCount: 1 });
    expect((await alternatives(q0.id)).edges.map((e) => e.node.text)).toEqual(['I q0', 'I q0 (owner)', 'I q0 (viewer)']);
    // A session that does not see the message: not found.
    const notSeen = await gqlError(app, Edit, { input: { messageId: q2.id, sessionId: viewer.id, text: 'x' } }, alpha);
    expect(notSeen.code).toBe('NOT_FOUND');
  });

  it('two edits of one message at once make two branches with distinct "(fork N)" titles', async () => {
    const root = await createRoot('Race', chat('C'));
    const [, , q2] = await messagesOf(root.id);
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => edit({ messageId: q2.id, text: `C q2 v${i}` })));
    const titles = results.map((r) => r.session.title).sort();
    expect(titles).toEqual([1, 2, 3, 4, 5, 6].map((n) => `Race (fork ${n})`).sort());
    const alts = await alternatives(q2.id);
    expect(alts.totalCount).toBe(7);
    expect(new Set(alts.edges.map((e) => e.node.session.id)).size).toBe(7);
  });

  it("emits a fork's and an append's events: SessionForked on the parent, MessageAdded on the branch", async () => {
    const root = await createRoot('Events', chat('V'));
    const [, , q2] = await messagesOf(root.id);
    const edited = await edit({ messageId: q2.id, text: 'V q2 edited' });
    const regenerated = await regenerate({ messageId: (await messagesOf(root.id))[3].id });
    const parent = await collect(root.id, 6);
    expect(parent.map((e) => [e.__typename, e.sequence])).toEqual([
      ['MessageAdded', 1],
      ['MessageAdded', 2],
      ['MessageAdded', 3],
      ['MessageAdded', 4],
      ['SessionForked', 5],
      ['SessionForked', 6],
    ]);
    expect(parent[4].fork!.id).toBe(edited.session.id);
    expect(parent[5].fork!.id).toBe(regenerated.session.id);
    const branch = await collect(edited.session.id, 1);
    expect(branch).toEqual([{ __typename: 'MessageAdded', sequence: 1, message: { id: edited.message.id, text: 'V q2 edited' } }]);
  });
});

describe(`alternatives of a page of messages (${backend.label})`, () => {
  const PageAlternatives = graphql(`
    query PageAlternatives($id: ID!, $first: Int!) {
      session(id: $id) {
        messages(first: $first) {
          edges {
            node {
              index
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
        }
      }
    }
  `);

  async function measure<T>(run: () => Promise<T>) {
    const counter = app.runtime.db.queries;
    counter.reset();
    const result = await run();
    return { result, count: counter.count, statements: [...counter.statements] };
  }

  /** A session of `length` messages with `branches` edits of each question and regenerations of each answer (each answered). */
  async function branched(title: string, length: number, branches: number) {
    const messages: MessageInput[] = Array.from({ length }, (_, i) => ({ role: i % 2 ? 'ASSISTANT' : 'USER', text: `${title} ${i}` }));
    const root = await createRoot(title, messages);
    const rows = await messagesOf(root.id);
    for (const row of rows) {
      for (let b = 0; b < branches; b++) {
        if (row.role === 'USER') await edit({ messageId: row.id, text: `${row.text} e${b}` });
        else await append((await regenerate({ messageId: row.id })).session.id, [{ role: 'ASSISTANT', text: `${row.text} r${b}` }]);
      }
    }
    return root;
  }

  it('reads in a fixed number of statements, whatever the page size and the number of alternatives', async () => {
    const small = await branched('Few', 4, 1);
    const large = await branched('Many', 8, 3);
    const read = (id: string, first: number) => gqlOk(app, PageAlternatives, { id, first }, alpha);
    await read(small.id, 4);
    await read(large.id, 8);
    const a = await measure(() => read(small.id, 4));
    const b = await measure(() => read(large.id, 8));
    const edges = b.result.session!.messages.edges;
    expect(edges.map((e) => e.node.alternatives.totalCount)).toEqual(Array(8).fill(4));
    expect(edges[1].node.alternatives.edges.map((e) => [e.node.text, e.node.session.title])).toEqual([
      ['Many 1', 'Many'],
      ['Many 1 r0', expect.stringMatching(/^Many \(fork \d+\)$/)],
      ['Many 1 r1', expect.stringMatching(/^Many \(fork \d+\)$/)],
      ['Many 1 r2', expect.stringMatching(/^Many \(fork \d+\)$/)],
    ]);
    expect(b.count, b.statements.map((s) => s.slice(0, 160)).join('\n')).toBe(a.count);
    expect(b.count).toBeLessThanOrEqual(6);
  });
});

describe(`the branch_anchors migration (${backend.label})`, () => {
  it("backfills every fork's anchor as the fork INSERT sets it", async () => {
    const root = await createRoot('Backfill', chat('B'));
    const [, , q2, a3] = await messagesOf(root.id);
    const e1 = await edit({ messageId: q2.id, text: 'B q2 e1' });
    await edit({ messageId: e1.message.id, text: 'B q2 e2' });
    const r1 = await regenerate({ messageId: a3.id });
    await append(r1.session.id, [{ role: 'ASSISTANT', text: 'B a3 r1' }]);
    await gqlOk(app, ForkSession, { input: { sessionId: e1.session.id, messageIndex: 0 } }, alpha);
    const prisma = app.runtime.db.prisma;
    const read = async () =>
      (
        await prisma.$queryRawUnsafe<{ id: string; branchAnchorId: string | null }[]>(
          'SELECT id, "branchAnchorId" FROM "Session" WHERE "rootId" = $1 ORDER BY id',
          rawIdOf(root.id),
        )
      ).map((r) => [r.id, r.branchAnchorId]);
    const set = await read();
    expect(set.filter(([, anchor]) => anchor !== null)).toHaveLength(4);

    const dir = join('prisma', 'migrations', readdirSync('prisma/migrations').find((d) => d.endsWith('_branch_anchors'))!);
    const sql = readFileSync(join(dir, 'migration.sql'), 'utf8');
    const backfill = sql.slice(sql.indexOf('WITH RECURSIVE'));
    await prisma.$executeRawUnsafe('UPDATE "Session" SET "branchAnchorId" = NULL WHERE "rootId" = $1', rawIdOf(root.id));
    await prisma.$executeRawUnsafe(backfill);
    expect(await read()).toEqual(set);
  });
});

interface StreamedEvent {
  __typename: string;
  sequence: number;
  fork?: { id: string } | null;
  message?: { id: string; text: string } | null;
}

/** The first `count` events of a session's stream, replayed from the start over SSE. */
async function collect(sessionId: string, count: number): Promise<StreamedEvent[]> {
  const { collector, unsubscribe } = subscribeSse(
    app.yoga.fetch as never,
    `subscription ($id: ID!) {
      sessionEvents(sessionId: $id, afterSequence: 0) {
        __typename
        sequence
        ... on SessionForked { fork { id } }
        ... on MessageAdded { message { id text } }
      }
    }`,
    { id: sessionId },
    (data) => data.sessionEvents as StreamedEvent,
    { authorization: `Bearer ${API_KEYS.alpha}` },
  );
  try {
    const events = await collector.until((e) => e.length >= count, 10_000, `${count} events`);
    return events.slice(0, count).map((e) => ({ ...e }));
  } finally {
    unsubscribe();
  }
}
