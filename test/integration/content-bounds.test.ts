import { describe, expect, it } from 'vitest';
import { PAGE_CONTENT_BYTES } from '../../src/domain/limits.js';
import { backend, gql, gqlOk, type TestApp, testDeviations, useTestApp } from '../helpers/app.js';
import { AppendMessages, CreateSession, ForkSession } from '../helpers/documents.js';
import { StartTurn } from '../helpers/turn-documents.js';

/**
 * The content bounds of message pages (src/domain/content-budget.ts): a page carries at most
 * PAGE_CONTENT_BYTES of text and parts (always its first message), the pages of one request share
 * `responseContentBytes`, and a page cut short says so in its pageInfo, so paging on returns every
 * message exactly once. Sent over the listening server (the fast path answers them) and compared
 * with Yoga's own path.
 */

interface Page {
  edges: { cursor: string; node: { index: number; text: string } }[];
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
}

const PAGE_FIELDS = 'edges { cursor node { index text } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }';
const MESSAGES = `query ($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
  session(id: $id) { messages(first: $first, after: $after, last: $last, before: $before) { ${PAGE_FIELDS} } }
}`;
const TIMELINE = `query ($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
  session(id: $id) { timeline(first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { index message { text } } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  } }
}`;

/** A text part's content as the bounds count it: the text, and the parts holding it again as JSON. */
const weightOf = (text: string) => 2 * Buffer.byteLength(text);

// Each message about 0.4 MB of content: a page of 1 MiB holds two of them.
const BIG = 'b'.repeat(200_000);
const SMALL = 's'.repeat(10);
const TEXTS = [BIG, SMALL, BIG, BIG, SMALL, BIG, BIG, SMALL];

let app: TestApp;
let sessionId: string;
let forkId: string;

useTestApp(async (a) => {
  app = a;
  const created = await gqlOk(app, CreateSession, { input: { title: 'bounds' } });
  sessionId = created.createSession.id;
  // One append per message: each call's arguments stay within the per-call cap.
  for (const text of TEXTS) await gqlOk(app, AppendMessages, { input: { sessionId, messages: [{ role: 'USER', text }] } });
  const fork = await gqlOk(app, ForkSession, { input: { sessionId, messageIndex: 5 } });
  forkId = fork.forkSession.session.id;
  await gqlOk(app, AppendMessages, { input: { sessionId: forkId, messages: [{ role: 'USER', text: BIG }] } });
});

async function page(document: string, variables: Record<string, unknown>, field: 'messages' | 'timeline'): Promise<Page> {
  const data = (await gqlOk(app, document, variables)) as { session: Record<string, Page & { edges: { node: unknown }[] }> };
  const connection = data.session[field];
  if (field === 'messages') return connection;
  // Timeline items carry their message: the same shape as a messages page.
  const edges = (connection.edges as unknown as { cursor: string; node: { index: number; message: { text: string } } }[]).map((e) => ({
    cursor: e.cursor,
    node: { index: e.node.index, text: e.node.message.text },
  }));
  return { edges, pageInfo: connection.pageInfo };
}

/** Every page of a walk, forward (first/after) or backward (last/before), asking for the largest page. */
async function walk(id: string, direction: 'forward' | 'backward', field: 'messages' | 'timeline' = 'messages') {
  const document = field === 'messages' ? MESSAGES : TIMELINE;
  const pages: Page[] = [];
  let cursor: string | null = null;
  for (;;) {
    const current: Page =
      direction === 'forward'
        ? await page(document, { id, first: 500, after: cursor }, field)
        : await page(document, { id, last: 500, before: cursor }, field);
    pages.push(current);
    expect(current.edges.length, 'a page of a walk is never empty').toBeGreaterThan(0);
    const more = direction === 'forward' ? current.pageInfo.hasNextPage : current.pageInfo.hasPreviousPage;
    if (!more) return pages;
    cursor = direction === 'forward' ? current.pageInfo.endCursor : current.pageInfo.startCursor;
    expect(pages.length).toBeLessThan(50);
  }
}

function expectBoundedPages(pages: Page[]) {
  for (const p of pages) {
    const weight = p.edges.reduce((sum, e) => sum + weightOf(e.node.text), 0);
    if (p.edges.length > 1) expect(weight).toBeLessThanOrEqual(PAGE_CONTENT_BYTES);
  }
}

describe(`pages of messages are cut to their content bounds (${backend.label})`, () => {
  it('cuts a page at 1 MiB and pages on to every message exactly once, both ways, twice (read, then cached)', async () => {
    for (let round = 0; round < 2; round++) {
      const forward = await walk(sessionId, 'forward');
      expect(forward.length).toBeGreaterThan(1);
      expect(forward[0].pageInfo.hasNextPage).toBe(true);
      expect(forward[0].edges.length).toBeLessThan(TEXTS.length);
      expectBoundedPages(forward);
      const seen = forward.flatMap((p) => p.edges.map((e) => e.node.index));
      expect(seen).toEqual(TEXTS.map((_, i) => i));
      expect(forward.flatMap((p) => p.edges.map((e) => e.node.text))).toEqual(TEXTS);

      const backward = await walk(sessionId, 'backward');
      expect(backward.length).toBeGreaterThan(1);
      expectBoundedPages(backward);
      // Read from the end: the first page holds the newest messages.
      expect(backward[0].edges.at(-1)!.node.index).toBe(TEXTS.length - 1);
      expect(backward.reverse().flatMap((p) => p.edges.map((e) => e.node.index))).toEqual(TEXTS.map((_, i) => i));
    }
  });

  it("cuts a fork's pages across its inherited prefix and its own messages", async () => {
    const expected = [...TEXTS.slice(0, 5), BIG];
    for (const direction of ['forward', 'backward'] as const) {
      const pages = await walk(forkId, direction);
      expectBoundedPages(pages);
      const ordered = direction === 'forward' ? pages : [...pages].reverse();
      expect(ordered.flatMap((p) => p.edges.map((e) => e.node.text))).toEqual(expected);
    }
  });

  it('cuts timeline pages the same way', async () => {
    for (const direction of ['forward', 'backward'] as const) {
      const pages = await walk(sessionId, direction, 'timeline');
      expect(pages.length).toBeGreaterThan(1);
      expectBoundedPages(pages);
      const ordered = direction === 'forward' ? pages : [...pages].reverse();
      expect(ordered.flatMap((p) => p.edges.map((e) => e.node.index))).toEqual(TEXTS.map((_, i) => i));
    }
  });

  it('answers a message larger than the page bound alone', async () => {
    // Three bytes a character: over 1 MiB with its parts, within the string cap (UTF-16 units) on both backends.
    const huge = '€'.repeat(200_000);
    expect(weightOf(huge)).toBeGreaterThan(PAGE_CONTENT_BYTES);
    const created = await gqlOk(app, CreateSession, { input: { title: 'huge', messages: [{ role: 'USER', text: SMALL }] } });
    const id = created.createSession.id;
    await gqlOk(app, AppendMessages, { input: { sessionId: id, messages: [{ role: 'USER', text: huge }] } });
    await gqlOk(app, AppendMessages, { input: { sessionId: id, messages: [{ role: 'USER', text: SMALL }] } });
    const [first, ...rest] = await walk(id, 'forward');
    // The small one, then the huge one alone (it does not fit beside it), then the last.
    expect(first.edges.map((e) => e.node.index)).toEqual([0]);
    expect(rest.map((p) => p.edges.map((e) => e.node.index))).toEqual([[1], [2]]);
    expect(rest[0].edges[0].node.text).toBe(huge);
    const fromEnd = await walk(id, 'backward');
    expect(fromEnd.map((p) => p.edges.map((e) => e.node.index))).toEqual([[2], [1], [0]]);
  });

  it('bounds a whole request: aliased pages share the answer budget, and the fast path answers as Yoga does', async () => {
    const budget = app.runtime.caps.responseContentBytes;
    const aliases = Array.from({ length: 30 }, (_, i) => `p${i}: messages(first: 500) { ${PAGE_FIELDS} }`).join(' ');
    const body = JSON.stringify({ query: `query ($id: ID!) { session(id: $id) { ${aliases} } }`, variables: { id: sessionId } });
    const answered = app.fastPath.answered;
    const overHttp = await fetch(app.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(app.fastPath.answered).toBe(answered + (testDeviations.httpFastPath ? 1 : 0));
    const viaYoga = await app.yoga.fetch('http://localhost/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const fast = (await overHttp.json()) as { data: { session: Record<string, Page> } };
    expect(fast).toEqual(await viaYoga.json());

    const pages = Object.values(fast.data.session);
    const carried = pages.reduce((sum, p) => sum + p.edges.reduce((s, e) => s + weightOf(e.node.text), 0), 0);
    // Within the budget, but for the one message that may cross it.
    expect(carried).toBeLessThanOrEqual(budget + weightOf(BIG));
    // Every page is the same first page, or (the budget spent) empty and saying more follows.
    const full = pages[0];
    expect(full.edges.length).toBeGreaterThan(0);
    const empty = pages.filter((p) => p.edges.length === 0);
    expect(empty.length).toBeGreaterThan(0);
    for (const p of empty) expect(p.pageInfo).toEqual({ hasNextPage: true, hasPreviousPage: false, startCursor: null, endCursor: null });
    for (const p of pages.filter((q) => q.edges.length > 0)) {
      expect(p.edges[0].node.index).toBe(0);
      expect(p.pageInfo.hasNextPage).toBe(true);
    }
    // Another request starts with a whole budget.
    const again = await gql(app, MESSAGES, { id: sessionId, first: 500 });
    expect((again.data as { session: { messages: Page } }).session.messages.edges).toEqual(full.edges);
  });

  it('answers an empty page with the cursor it was asked from, so paging on from endCursor continues where it stood', async () => {
    const after = (await gql(app, MESSAGES, { id: sessionId, first: 1 })).data as { session: { messages: Page } };
    const from = after.session.messages.pageInfo.endCursor!;
    const aliases = Array.from({ length: 30 }, (_, i) => `p${i}: messages(first: 500, after: $after) { ${PAGE_FIELDS} }`).join(' ');
    const query = `query ($id: ID!, $after: String) { session(id: $id) { ${aliases} } }`;
    const pages = Object.values(
      ((await gql(app, query, { id: sessionId, after: from })).data as { session: Record<string, Page> }).session,
    );
    const empty = pages.filter((p) => p.edges.length === 0);
    expect(empty.length).toBeGreaterThan(0);
    for (const p of empty) expect(p.pageInfo).toEqual({ hasNextPage: true, hasPreviousPage: true, startCursor: from, endCursor: from });
    // Paging on from the empty page's endCursor reads the page after `from`, as the first alias did.
    const next = (await gql(app, MESSAGES, { id: sessionId, first: 500, after: empty[0].pageInfo.endCursor })).data as {
      session: { messages: Page };
    };
    expect(next.session.messages.edges[0].node.index).toBe(1);
    expect(next.session.messages.edges).toEqual(pages[0].edges);
  });

  it('cuts a page of search hits the same way, and pages on to every hit exactly once', async () => {
    const texts = Array.from({ length: 5 }, (_, i) => `needle${' x'.repeat(100_000)} ${i}`);
    const created = await gqlOk(app, CreateSession, { input: { title: 'search' } });
    for (const text of texts) {
      await gqlOk(app, AppendMessages, { input: { sessionId: created.createSession.id, messages: [{ role: 'USER', text }] } });
    }
    const SEARCH = `query ($after: String) { searchMessages(query: "needle", first: 50, after: $after) {
      edges { message { text } } pageInfo { hasNextPage endCursor }
    } }`;
    type SearchPage = {
      searchMessages: { edges: { message: { text: string } }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
    };
    const found: string[] = [];
    let after: string | null = null;
    let pages = 0;
    for (;;) {
      const { searchMessages } = (await gqlOk(app, SEARCH, { after })) as SearchPage;
      pages++;
      expect(searchMessages.edges.length).toBeGreaterThan(0);
      if (searchMessages.edges.length > 1) {
        expect(searchMessages.edges.reduce((sum, e) => sum + weightOf(e.message.text), 0)).toBeLessThanOrEqual(PAGE_CONTENT_BYTES);
      }
      found.push(...searchMessages.edges.map((e) => e.message.text));
      if (!searchMessages.pageInfo.hasNextPage) break;
      after = searchMessages.pageInfo.endCursor;
      expect(pages).toBeLessThan(10);
    }
    expect(pages).toBeGreaterThan(1);
    expect([...found].sort()).toEqual([...texts].sort());
  });

  it("cuts a page of a turn's messages the same way, both ways", async () => {
    const created = await gqlOk(app, CreateSession, { input: { title: 'turn', messages: [{ role: 'USER', text: SMALL }] } });
    const sessionOfTurn = created.createSession.id;
    const turn = await gqlOk(app, StartTurn, { input: { sessionId: sessionOfTurn, agentIds: ['a'] } });
    const turnId = turn.startTurn.id;
    const texts = [BIG, SMALL, BIG, BIG, BIG];
    for (const text of texts) {
      await gqlOk(app, AppendMessages, { input: { sessionId: sessionOfTurn, turnId, messages: [{ role: 'ASSISTANT', text }] } });
    }
    const TURN = `query ($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
      node(id: $id) { ... on Turn { messages(first: $first, after: $after, last: $last, before: $before) { totalCount ${PAGE_FIELDS} } } }
    }`;
    for (const direction of ['forward', 'backward'] as const) {
      const pages: Page[] = [];
      let cursor: string | null = null;
      for (;;) {
        const variables = direction === 'forward' ? { id: turnId, first: 200, after: cursor } : { id: turnId, last: 200, before: cursor };
        const data = (await gqlOk(app, TURN, variables)) as { node: { messages: Page & { totalCount: number } } };
        const current = data.node.messages;
        expect(current.totalCount).toBe(texts.length);
        expect(current.edges.length).toBeGreaterThan(0);
        pages.push(current);
        const more = direction === 'forward' ? current.pageInfo.hasNextPage : current.pageInfo.hasPreviousPage;
        if (!more) break;
        cursor = direction === 'forward' ? current.pageInfo.endCursor : current.pageInfo.startCursor;
        expect(pages.length).toBeLessThan(10);
      }
      expect(pages.length).toBeGreaterThan(1);
      expectBoundedPages(pages);
      const ordered = direction === 'forward' ? pages : [...pages].reverse();
      expect(ordered.flatMap((p) => p.edges.map((e) => e.node.text))).toEqual(texts);
      expect(ordered.flatMap((p) => p.edges.map((e) => e.node.index))).toEqual([1, 2, 3, 4, 5]);
    }
  });
});
