import { describe, expect, it } from 'vitest';
import { AppendMessages, CreateSession, SessionMessages } from '../helpers/documents.js';
import { backend, createTestApp, gql, gqlOk, type TestApp, useTestApp } from '../helpers/app.js';
import { subscribeWs, wsClient } from '../helpers/subscriptions.js';

// Repeated queries run compiled (src/query-jit.ts), as in production: a document's second execution
// compiles it, if it is one query of at most 64 fields (here: two compiled documents kept, 8
// compilations in all). The rest of the suite compiles every query
// from its first use, so the compiled path answers everything the suite asks.

let app: TestApp;
useTestApp(
  (built) => {
    app = built;
  },
  { config: { queryJit: { afterUses: 2, maxFields: 64, maxDocuments: 2, budget: { compiles: 8, windowMs: 600_000 } } } },
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

  it('never compiles mutations, documents of several operations, or documents over the field bound', async () => {
    const { id } = (await gqlOk(app, CreateSession, { input: { title: 'jit 2' } })).createSession;
    for (let i = 0; i < 3; i++) {
      const append = await runs(() =>
        gqlOk(app, AppendMessages, { input: { sessionId: id, messages: [{ role: 'USER', text: `m${i}` }] } }),
      );
      expect(append.compiled).toBe(0);
    }
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
    const cold = await createTestApp({ cold: true, config: { queryJit: { afterUses: 1, maxFields: 64, maxDocuments: 2 } } });
    try {
      const { id } = (await gqlOk(cold, CreateSession, { input: { title: 'cold', messages: [{ role: 'USER', text: 'q' }] } }))
        .createSession;
      const first = await gqlOk(cold, SessionMessages, { id, first: 5 });
      expect(cold.jit).toMatchObject({ compiled: 0, compilations: 0 });
      await cold.warm();
      const second = await gqlOk(cold, SessionMessages, { id, first: 5 });
      expect(cold.jit).toMatchObject({ compiled: 1, compilations: 1 });
      expect(second).toEqual(first);
    } finally {
      await cold.close();
    }
  });

  it('compiles no more than its budget, running the documents over it on graphql-js', async () => {
    const { id } = (await gqlOk(app, CreateSession, { input: { title: 'jit 4' } })).createSession;
    const left = 8 - app.jit.compilations;
    expect(left).toBeGreaterThan(0);
    for (let n = 0; n < left + 3; n++) {
      for (let i = 0; i < 2; i++) {
        const body = await send({ query: `query Budget${n}($id: ID!) { session(id: $id) { title } }`, variables: { id } });
        expect(body.data.session.title).toBe('jit 4');
      }
    }
    expect(app.jit.compilations).toBe(8);
  });
  it("executes a subscription's events compiled once its document has run often enough, with the same payloads", async () => {
    const live = await createTestApp({ config: { queryJit: { afterUses: 2, maxFields: 64, maxDocuments: 2 } } });
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
      // The first event ran on graphql-js, the next ones compiled (one compilation, for the subscription).
      expect(live.jit.compilations - before.compilations).toBe(1);
      expect(live.jit.compiled - before.compiled).toBeGreaterThanOrEqual(2);
      sub.unsubscribe();
    } finally {
      await client.dispose();
      await live.close();
    }
  });
});
