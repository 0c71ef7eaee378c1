import { describe, expect, it } from 'vitest';
import { AppendMessages, CreateSession, SessionMessages } from '../helpers/documents.js';
import { backend, createTestApp, gql, gqlOk, type TestApp, useTestApp } from '../helpers/app.js';
import { subscribeWs, wsClient } from '../helpers/subscriptions.js';

// Repeated queries and mutations run compiled (src/graphql/query-jit.ts), as in production: a document's
// second execution compiles it, if it is one operation of at most 64 fields (here: two compiled
// documents kept, BUDGET compilations in all). The rest of the suite compiles every document from
// its first use, so the compiled path answers everything the suite asks.
const BUDGET = 16;

let app: TestApp;
useTestApp(
  (built) => {
    app = built;
  },
  {
    config: { queryJit: { afterUses: 2, maxFields: 64, maxDocuments: 2, budget: { compiles: BUDGET, windowMs: 600_000 } } },
    // The deviation under test, on whatever TEST_DEVIATIONS says.
    deviations: { queryJit: true },
  },
);

const TITLE = 'query Title($id: ID!) { session(id: $id) { id title messageCount } }';

async function runs<T>(run: () => Promise<T>) {
  const before = { ...app.jit };
  const result = await run();
  return { result, compiled: app.jit.compiled - before.compiled, interpreted: app.jit.interpreted - before.interpreted };
}

/** A raw request (with an operation name), its parsed body. */
async function send(body: { query: string; variables?: unknown; operationName?: string }) {
  const response = await app.yoga.fetch('http://localhost/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: a test reads whatever came back
  return (await response.json()) as any;
}

describe(`compiled queries (${backend.label})`, () => {
  it("compiles a query document at its second execution, and answers the same as graphql-js's interpreter", async () => {
    const { id } = (
      await gqlOk(app, CreateSession, {
        input: {
          title: 'jit',
          messages: [
            { role: 'USER', text: 'q' },
            { role: 'ASSISTANT', text: 'a' },
          ],
        },
      })
    ).createSession;
    const first = await runs(() => gqlOk(app, SessionMessages, { id, first: 5 }));
    expect(first).toMatchObject({ compiled: 0, interpreted: 1 });
    const second = await runs(() => gqlOk(app, SessionMessages, { id, first: 5 }));
    expect(second).toMatchObject({ compiled: 1, interpreted: 0 });
    expect(second.result).toEqual(first.result);
    // Other variables, same compiled document; a variable of the wrong type is refused the same way.
    const last = await runs(() => gqlOk(app, SessionMessages, { id, last: 1 }));
    expect(last.compiled).toBe(1);
    expect(last.result.session!.messages.edges.map((e) => e.node.text)).toEqual(['a']);
    const interpreted = await gql(app, TITLE, { id: 42 } as never);
    const compiled = await gql(app, TITLE, { id: 42 } as never);
    expect(compiled.errors).toEqual(interpreted.errors);
    expect(compiled.errors?.[0]?.extensions?.code).toBe(interpreted.errors?.[0]?.extensions?.code);
    // A missing session, and an operation named wrong (refused before execution, compiled or not).
    const missing = await gql(app, TITLE, { id: 'U2Vzc2lvbjpub3BlCg==' });
    expect(missing.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const wrongName = await runs(() => send({ query: TITLE, variables: { id }, operationName: 'Other' }));
    expect(wrongName.compiled).toBe(0);
    expect(wrongName.result.data).toBeUndefined();
    expect(wrongName.result.errors[0].message).toBe('Could not determine what operation to execute.');
  });

  it('compiles a mutation document too, running its root fields one after the other as graphql-js does', async () => {
    const { id } = (await gqlOk(app, CreateSession, { input: { title: 'jit 2' } })).createSession;
    const counts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const append = await runs(() =>
        gqlOk(app, AppendMessages, { input: { sessionId: id, messages: [{ role: 'USER', text: `m${i}` }] } }),
      );
      counts.push(append.compiled);
      expect(append.result.appendMessages.session.messageCount).toBe(i + 1);
    }
    expect(counts).toEqual([0, 1, 1]);
    // Two appends in one document: the second sees the first's message (serial, in order), compiled
    // from the second use on, and a refused argument answers the same either way.
    const TWO = `mutation Two($a: AppendMessagesInput!, $b: AppendMessagesInput!) {
      a: appendMessages(input: $a) { session { messageCount } }
      b: appendMessages(input: $b) { session { messageCount } }
    }`;
    const input = (text: string) => ({ sessionId: id, messages: [{ role: 'USER', text }] });
    const interpreted = await runs(() => send({ query: TWO, variables: { a: input('x'), b: input('y') } }));
    const compiled = await runs(() => send({ query: TWO, variables: { a: input('x'), b: input('y') } }));
    expect([interpreted.compiled, compiled.compiled]).toEqual([0, 1]);
    expect(interpreted.result).toEqual({ data: { a: { session: { messageCount: 4 } }, b: { session: { messageCount: 5 } } } });
    expect(compiled.result).toEqual({ data: { a: { session: { messageCount: 6 } }, b: { session: { messageCount: 7 } } } });
    // A refused argument in the second: the first has run (and stays); the payload is non-null, so
    // the error nulls the whole data, as on graphql-js.
    const refused = await runs(() => send({ query: TWO, variables: { a: input('z'), b: input('nul \u0000') } }));
    expect(refused.compiled).toBe(1);
    expect(refused.result.data).toBeNull();
    expect(refused.result.errors).toHaveLength(1);
    expect(refused.result.errors[0]).toMatchObject({ path: ['b'], extensions: { code: 'BAD_USER_INPUT' } });
    expect((await gqlOk(app, SessionMessages, { id, first: 1 })).session?.messageCount).toBe(8);
  });

  it('never compiles documents of several operations, or documents over the field bound', async () => {
    const { id } = (await gqlOk(app, CreateSession, { input: { title: 'jit 2' } })).createSession;
    const two = `${TITLE} query Other { __typename }`;
    // 65 fields by the query limits' count (each selection counts), no alias.
    const wide = `query ($id: ID!) { session(id: $id) { ${'title '.repeat(64)} } }`;
    for (let i = 0; i < 3; i++) {
      const several = await runs(() => send({ query: two, variables: { id }, operationName: 'Title' }));
      expect(several).toMatchObject({ compiled: 0, interpreted: 1 });
      expect(several.result.data.session.title).toBe('jit 2');
      const big = await runs(() => send({ query: wide, variables: { id } }));
      expect(big).toMatchObject({ compiled: 0, interpreted: 1 });
      expect(big.result.data.session.title).toBe('jit 2');
    }
  });

  it('keeps the most recently used compiled documents, compiling an evicted one again at its next use', async () => {
    const { id } = (await gqlOk(app, CreateSession, { input: { title: 'jit 3' } })).createSession;
    const doc = (n: number) => `query Evict${n}($id: ID!) { session(id: $id) { title } }`;
    const before = app.jit.compilations;
    for (const n of [1, 2, 3]) for (let i = 0; i < 2; i++) await send({ query: doc(n), variables: { id } });
    expect(app.jit.compilations - before).toBe(3);
    // Evict1 was pushed out by Evict3 (two kept): it runs compiled again only after compiling again.
    const again = await runs(() => send({ query: doc(1), variables: { id } }));
    expect(again).toMatchObject({ compiled: 1, interpreted: 0 });
    expect(again.result.data.session.title).toBe('jit 3');
    expect(app.jit.compilations - before).toBe(4);
    // Evict3 and Evict1 are kept now: no compilation.
    await send({ query: doc(3), variables: { id } });
    expect(app.jit.compilations - before).toBe(4);
  });

  it('runs documents on graphql-js until the compiler is loaded (once the server listens), then compiles them at a later use', async () => {
    const cold = await createTestApp({
      cold: true,
      config: { queryJit: { afterUses: 1, maxFields: 64, maxDocuments: 2 } },
      deviations: { queryJit: true },
    });
    try {
      const create = () => gqlOk(cold, CreateSession, { input: { title: 'cold', messages: [{ role: 'USER', text: 'q' }] } });
      const { id } = (await create()).createSession;
      // Its first use asked for the compiler, not loaded yet: graphql-js ran it, and it stays undecided.
      expect(cold.jit).toMatchObject({ compiled: 0, interpreted: 1, compilations: 0 });
      await cold.warm();
      const read = await gqlOk(cold, SessionMessages, { id, first: 5 });
      expect(cold.jit).toMatchObject({ compiled: 1, interpreted: 1, compilations: 1 });
      expect(read.session?.messages.edges.map((e) => e.node.text)).toEqual(['q']);
      // The mutation compiles at its next use.
      expect((await create()).createSession.messageCount).toBe(1);
      expect(cold.jit).toMatchObject({ compiled: 2, interpreted: 1, compilations: 2 });
    } finally {
      await cold.close();
    }
  });

  it('compiles no more than its budget, running the documents over it on graphql-js', async () => {
    const { id } = (await gqlOk(app, CreateSession, { input: { title: 'jit 4' } })).createSession;
    const left = BUDGET - app.jit.compilations;
    expect(left).toBeGreaterThan(0);
    for (let n = 0; n < left + 3; n++) {
      for (let i = 0; i < 2; i++) {
        const body = await send({ query: `query Budget${n}($id: ID!) { session(id: $id) { title } }`, variables: { id } });
        expect(body.data.session.title).toBe('jit 4');
      }
    }
    expect(app.jit.compilations).toBe(BUDGET);
  });
  it("executes a subscription's events compiled once its document has run often enough, with the same payloads", async () => {
    const live = await createTestApp({
      config: { queryJit: { afterUses: 2, maxFields: 64, maxDocuments: 2 } },
      deviations: { queryJit: true },
    });
    const url = await live.listen(0, '127.0.0.1');
    const client = wsClient(url);
    try {
      const { id } = (await gqlOk(live, CreateSession, { input: { title: 'live jit' } })).createSession;
      const EVENTS = `subscription Events($id: ID!, $after: Int) {
        sessionEvents(sessionId: $id, afterSequence: $after) { __typename sequence ... on MessageAdded { index message { text role } } }
      }`;
      const sub = subscribeWs(client, EVENTS, { id, after: 0 }, (data) => data.sessionEvents);
      const before = { ...live.jit };
      for (const text of ['one', 'two', 'three']) {
        await gqlOk(live, AppendMessages, { input: { sessionId: id, messages: [{ role: 'USER', text }] } });
      }
      const events = await sub.collector.until((e) => e.length >= 3, 10_000, 'three events');
      expect(events).toEqual(
        ['one', 'two', 'three'].map((text, index) => ({
          __typename: 'MessageAdded',
          sequence: index + 1,
          index,
          message: { text, role: 'USER' },
        })),
      );
      // The first event ran on graphql-js, the next ones compiled: two compilations, the
      // subscription's and the append's (a mutation document, compiled at its second use too).
      expect(live.jit.compilations - before.compilations).toBe(2);
      expect(live.jit.compiled - before.compiled).toBeGreaterThanOrEqual(2);
      sub.unsubscribe();
    } finally {
      await client.dispose();
      await live.close();
    }
  });
});
