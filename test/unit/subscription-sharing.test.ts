import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ExecutionArgs, type GraphQLError, GraphQLScalarType, parse } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { createSchema, createYoga, maskError } from 'graphql-yoga';
import { describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { EventMemo } from '../../src/caches/event-memo.js';
import type { StreamMask } from '../../src/live/pump-stream.js';
import { useSubscriptionSharing } from '../../src/live/sharing.js';
import { webSocketSink } from '../../src/live/ws-sink.js';
import { useWebSocketServer } from '../../src/live/ws-server.js';
import { subscribeSse } from '../helpers/subscriptions.js';

type Ctx = { scope: string };
interface Tick {
  id: string;
}

/** A tiny server whose `ticks` subscription emits what the test pushes, and counts executions. */
function tickServer(options: { maxShapes?: number } = {}) {
  const listeners = new Set<(tick: Tick) => void>();
  let resolved = 0;
  const schema = createSchema<Ctx>({
    typeDefs: /* GraphQL */ `
      type Query { ok: Boolean }
      type Tick { id: ID! viewer: String! label(prefix: String): String! shifted(by: Int): Int }
      type Subscription { ticks(after: Int): Tick! }
    `,
    resolvers: {
      Subscription: {
        ticks: {
          subscribe: () => {
            const queue: Tick[] = [];
            let wake: (() => void) | null = null;
            const push = (tick: Tick) => {
              queue.push(tick);
              wake?.();
            };
            listeners.add(push);
            return (async function* () {
              try {
                for (;;) {
                  while (queue.length) yield queue.shift()!;
                  await new Promise<void>((resolve) => (wake = resolve));
                }
              } finally {
                listeners.delete(push);
              }
            })();
          },
          resolve: (tick: Tick) => tick,
        },
      },
      Tick: {
        viewer: (_tick: Tick, _args: unknown, ctx: Ctx) => {
          resolved++;
          return ctx.scope;
        },
        label: (tick: Tick, args: { prefix?: string | null }) => `${args.prefix ?? ''}${tick.id}`,
        shifted: (_tick: Tick, args: { by?: number | null }) => 100 + (args.by ?? 0),
      },
    },
  });
  const sharing = useSubscriptionSharing<Ctx>({
    scopeOf: (ctx) => ctx.scope,
    requestContextForEvent: (ctx) => ({ ...ctx }),
    streamOnlyArguments: { ticks: ['after'] },
    maxShapes: options.maxShapes,
  });
  const yoga = createYoga({
    schema,
    plugins: [sharing],
    context: ({ request }: { request: Request }) => ({ scope: request.headers.get('x-scope') ?? 'none' }),
    logging: false,
  });
  return {
    yoga,
    stats: sharing.stats,
    listeners,
    resolved: () => resolved,
    emit: (tick: Tick) => {
      for (const push of listeners) push(tick);
    },
  };
}

async function until(check: () => boolean, what: string) {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const TICKS = 'subscription ($after: Int, $prefix: String) { ticks(after: $after) { id viewer label(prefix: $prefix) } }';
const pickTick = (data: Record<string, unknown>) => data.ticks as { id: string; viewer: string; label: string };

describe('subscription sharing', () => {
  it('shares an execution between subscribers of one scope and never across scopes', async () => {
    const server = tickServer();
    const open = (scope: string, variables: Record<string, unknown>) =>
      subscribeSse(server.yoga.fetch as never, TICKS, variables, pickTick, { 'x-scope': scope });
    const subs = [
      open('alpha', { after: 1 }),
      open('alpha', { after: 7 }), // only where the stream starts differs: shares
      open('alpha', { after: 1 }),
      open('beta', { after: 1 }), // another scope: never shares
      open('alpha', { after: 1, prefix: '#' }), // another selection: its own execution
    ];
    await until(() => server.listeners.size === subs.length, 'every subscriber to be registered');
    server.emit({ id: 't1' });
    const results = await Promise.all(subs.map((s) => s.collector.until((e) => e.length >= 1).then((e) => e[0])));
    expect(results).toEqual([
      { id: 't1', viewer: 'alpha', label: 't1' },
      { id: 't1', viewer: 'alpha', label: 't1' },
      { id: 't1', viewer: 'alpha', label: 't1' },
      { id: 't1', viewer: 'beta', label: 't1' },
      { id: 't1', viewer: 'alpha', label: '#t1' },
    ]);
    expect(server.stats).toEqual({ executions: 3, shared: 2 });
    expect(server.resolved()).toBe(3);

    // The next event is executed afresh.
    server.emit({ id: 't2' });
    await Promise.all(subs.map((s) => s.collector.until((e) => e.length >= 2)));
    expect(server.stats).toEqual({ executions: 6, shared: 4 });
    for (const sub of subs) sub.unsubscribe();
  });

  it('shares between documents that differ only in a stripped argument, and never mixes selections when its table of selections starts over', async () => {
    const withDefault = 'subscription ($after: Int = 0) { ticks(after: $after) { id label(prefix: "a") } }';
    const without = 'subscription ($after: Int) { ticks(after: $after) { id label(prefix: "a") } }';
    const other = 'subscription ($after: Int) { ticks(after: $after) { id label(prefix: "b") } }';
    const pick = (data: Record<string, unknown>) => data.ticks as { id: string; label: string };
    for (const [maxShapes, stats] of [
      [undefined, { executions: 2, shared: 1 }],
      // One selection at a time: `other` pushes the first out, so the third subscriber's selection
      // gets a new id and runs on its own, still with its own label.
      [1, { executions: 3, shared: 0 }],
    ] as const) {
      const server = tickServer({ maxShapes });
      const subs = [];
      for (const doc of [withDefault, other, without]) {
        subs.push(subscribeSse(server.yoga.fetch as never, doc, { after: 1 }, pick, { 'x-scope': 's' }));
        await until(() => server.listeners.size === subs.length, 'the subscriber to be registered');
      }
      server.emit({ id: 't' });
      const results = await Promise.all(subs.map((s) => s.collector.until((e) => e.length >= 1).then((e) => e[0])));
      expect(results).toEqual([
        { id: 't', label: 'at' },
        { id: 't', label: 'bt' },
        { id: 't', label: 'at' },
      ]);
      expect(server.stats).toEqual(stats);
      for (const sub of subs) sub.unsubscribe();
    }
  });

  it('keys a selection by the variables its document declares: others (even 10,000 levels deep) neither split sharing nor fail', async () => {
    const server = tickServer();
    const subs = [{}, { stray: 'a' }].map((extra) =>
      subscribeSse(server.yoga.fetch as never, TICKS, { after: 1, prefix: '#', ...extra }, pickTick, { 'x-scope': 's' }),
    );
    // Too deep for JSON.stringify here: the body is written out.
    const deep = `${'['.repeat(10_000)}1${']'.repeat(10_000)}`;
    const response = await server.yoga.fetch('http://localhost/graphql', {
      method: 'POST',
      headers: { accept: 'text/event-stream', 'content-type': 'application/json', 'x-scope': 's' },
      body: `{"query":${JSON.stringify(TICKS)},"variables":{"after":1,"prefix":"#","stray":${deep}}}`,
    });
    await until(() => server.listeners.size === subs.length + 1, 'every subscriber to be registered');
    server.emit({ id: 't' });
    const results = await Promise.all(subs.map((s) => s.collector.until((e) => e.length >= 1).then((e) => e[0])));
    expect(results).toEqual(subs.map(() => ({ id: 't', viewer: 's', label: '#t' })));
    const reader = response.body!.getReader();
    let text = '';
    for (let step = await reader.read(); ; step = await reader.read()) {
      text += new TextDecoder().decode(step.value);
      if (step.done || text.includes('"ticks"')) break;
    }
    expect(text).toContain('{"data":{"ticks":{"id":"t","viewer":"s","label":"#t"}}}');
    expect(server.stats).toEqual({ executions: 1, shared: 2 });
    await reader.cancel();
    for (const sub of subs) sub.unsubscribe();
  });

  it('keeps a stream-only argument in the key when its variable is also used in the selection', async () => {
    const server = tickServer();
    const streamOnly = 'subscription ($n: Int) { ticks(after: $n) { id label(prefix: "x") } }';
    const reused = 'subscription ($n: Int) { ticks(after: $n) { id shifted(by: $n) } }';
    const pick = (data: Record<string, unknown>) => data.ticks as { id: string; label?: string; shifted?: number };
    const open = (doc: string, n: number) => subscribeSse(server.yoga.fetch as never, doc, { n }, pick, { 'x-scope': 's' });
    const subs = [open(streamOnly, 1), open(streamOnly, 2), open(reused, 1), open(reused, 2)];
    await until(() => server.listeners.size === subs.length, 'every subscriber to be registered');
    server.emit({ id: 'e' });
    const results = await Promise.all(subs.map((s) => s.collector.until((e) => e.length >= 1).then((e) => e[0])));
    expect(results).toEqual([
      { id: 'e', label: 'xe' },
      { id: 'e', label: 'xe' },
      { id: 'e', shifted: 101 },
      { id: 'e', shifted: 102 },
    ]);
    // The first two share; the last two differ in a variable their selection uses.
    expect(server.stats).toEqual({ executions: 3, shared: 1 });
    for (const sub of subs) sub.unsubscribe();
  });
});

/**
 * The tick schema over graphql-transport-ws on a real socket. `direct`: as app.ts wires it, our
 * WebSocket server and `subscribeToSocket`, each result written straight to its socket but for
 * results with errors, which go through the server after the stream mask. Otherwise the
 * reference: graphql-ws's own server running envelop's subscribe, Yoga's masking plugin and all.
 */
async function tickWsServer(direct: boolean) {
  const listeners = new Set<(tick: Tick) => void>();
  const schema = createSchema<Ctx>({
    typeDefs: /* GraphQL */ `
      type Query { ok: Boolean }
      type Tick { id: ID! check: String }
      type Subscription { ticks: Tick! }
    `,
    resolvers: {
      Subscription: {
        ticks: {
          // Released at once by return(), even while waiting (an async generator would wait for its next event).
          subscribe: (): AsyncIterableIterator<Tick> => {
            const queue: Tick[] = [];
            let waiting: ((r: IteratorResult<Tick>) => void) | null = null;
            const push = (tick: Tick) => {
              if (waiting) {
                waiting({ value: tick, done: false });
                waiting = null;
              } else queue.push(tick);
            };
            listeners.add(push);
            const done = (): IteratorResult<Tick> => {
              listeners.delete(push);
              waiting?.({ value: undefined, done: true });
              waiting = null;
              return { value: undefined, done: true };
            };
            const stream: AsyncIterableIterator<Tick> = {
              [Symbol.asyncIterator]: () => stream,
              next: () =>
                queue.length
                  ? Promise.resolve({ value: queue.shift()!, done: false })
                  : listeners.has(push)
                    ? new Promise((resolve) => (waiting = resolve))
                    : Promise.resolve({ value: undefined, done: true }),
              return: async () => done(),
              throw: async () => done(),
            };
            return stream;
          },
          resolve: (tick: Tick) => tick,
        },
      },
      Tick: {
        // An event whose id starts with "bad" makes a result with an (unexpected, hence masked) error.
        check: (tick: Tick) => {
          if (tick.id.startsWith('bad')) throw new Error('secret detail');
          return 'ok';
        },
      },
    },
  });
  const sharing = useSubscriptionSharing<Ctx>({
    scopeOf: (ctx) => ctx.scope,
    requestContextForEvent: (ctx) => ({ ...ctx }),
  });
  const yoga = createYoga({
    schema,
    plugins: [sharing],
    context: () => ({ scope: 's' }),
    logging: false,
  });
  const server = createServer(yoga);
  const wss = new WebSocketServer({ server, path: yoga.graphqlEndpoint });
  const prepare = async (params: { query: string; variables?: Record<string, unknown> | null }, init: Record<string, unknown>) => {
    const { schema: s, execute, subscribe, contextFactory, parse, validate } = yoga.getEnveloped({ ...init, params });
    const contextValue = (await contextFactory()) as unknown as Ctx;
    const document = parse(params.query);
    const errors = validate(s, document);
    if (errors.length) return errors;
    return { schema: s, document, variableValues: params.variables, contextValue, rootValue: { execute, subscribe } };
  };
  // What a direct stream's results with errors and its error go through: Yoga's default masking.
  const mask: StreamMask = {
    result: (result) =>
      result.errors ? { ...result, errors: result.errors.map((e) => maskError(e, 'Unexpected error.') as GraphQLError) } : result,
    error: (error) => maskError(error, 'Unexpected error.'),
  };
  const execute = (args: ExecutionArgs) => (args.rootValue as { execute: (a: ExecutionArgs) => unknown }).execute(args) as never;
  if (direct) {
    useWebSocketServer(
      {
        hideInternalErrors: false,
        execute,
        subscribe: (args, ctx, id) => sharing.subscribeToSocket(args, webSocketSink(ctx.extra.socket, id), mask),
        onConnect: () => true,
        onSubscribe: (ctx, _id, params) => prepare(params, { connectionParams: ctx.connectionParams }),
      },
      wss,
    );
  } else {
    useServer<Record<string, unknown>, { request: IncomingMessage }>(
      {
        execute,
        subscribe: (args) => (args.rootValue as { subscribe: (a: ExecutionArgs) => unknown }).subscribe(args) as never,
        onSubscribe: (ctx, _id, params) => prepare(params, { ...ctx, req: ctx.extra.request }),
      },
      wss,
    );
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}${yoga.graphqlEndpoint}`;
  return {
    url,
    listeners,
    emit: (tick: Tick) => {
      for (const push of listeners) push(tick);
    },
    async close() {
      for (const client of wss.clients) client.terminate();
      await new Promise((resolve) => wss.close(resolve));
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A raw graphql-transport-ws client: every frame as received (text or binary), after `subscribe`. */
async function rawWsSubscriber(url: string, id: string, query: string) {
  const socket = new WebSocket(url, 'graphql-transport-ws');
  const frames: { text: string; binary: boolean }[] = [];
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init' })));
    socket.on('message', (data, binary) => {
      const text = String(data);
      if (JSON.parse(text).type === 'connection_ack') {
        socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query } }));
        resolve();
      } else {
        frames.push({ text, binary });
      }
    });
  });
  return { socket, frames };
}

describe('subscription sharing over graphql-ws, results written to the socket', () => {
  const QUERY = 'subscription { ticks { id check } }';

  it('sends every result once and in order, exactly as graphql-ws would, errors masked, and releases the stream on complete', async () => {
    const direct = await tickWsServer(true);
    const plain = await tickWsServer(false);
    try {
      const subs = await Promise.all([
        rawWsSubscriber(direct.url, 'a', QUERY),
        rawWsSubscriber(direct.url, 'op-"2"', QUERY),
        rawWsSubscriber(plain.url, 'a', QUERY),
      ]);
      await until(() => direct.listeners.size === 2 && plain.listeners.size === 1, 'every subscriber to be registered');
      const ticks = ['t1', 'bad2', 't3', 't4', 'bad5', 'bad6', 't7'];
      // Emitted back to back: a direct result must not overtake the error result before it.
      for (const id of ticks) {
        direct.emit({ id });
        plain.emit({ id });
      }
      await until(() => subs.every((s) => s.frames.length === ticks.length), 'every result');
      const [first, second, reference] = subs;
      // The same bytes as graphql-ws writes, in text frames.
      expect(first.frames).toEqual(reference.frames);
      expect(first.frames.every((f) => !f.binary)).toBe(true);
      const parsed = second.frames.map((f) => JSON.parse(f.text));
      expect(parsed.map((m) => [m.id, m.type, m.payload.data.ticks.id])).toEqual(ticks.map((id) => ['op-"2"', 'next', id]));
      for (const m of parsed) {
        if (m.payload.data.ticks.id.startsWith('bad')) {
          expect(m.payload.errors).toHaveLength(1);
          expect(JSON.stringify(m.payload.errors)).not.toContain('secret detail');
        } else {
          expect(m.payload).toEqual({ data: { ticks: { id: m.payload.data.ticks.id, check: 'ok' } } });
        }
      }

      // The client completes one operation: its stream is released at once, the other goes on.
      first.socket.send(JSON.stringify({ id: 'a', type: 'complete' }));
      await until(() => direct.listeners.size === 1, 'the completed stream to be released');
      direct.emit({ id: 't8' });
      await until(() => second.frames.length === ticks.length + 1, 'the next result');
      expect(first.frames).toHaveLength(ticks.length);
      second.socket.close();
      await until(() => direct.listeners.size === 0, 'a closed socket to release its stream');
      for (const s of subs) s.socket.terminate();
    } finally {
      await direct.close();
      await plain.close();
    }
  });
});

describe('subscribeToSocket', () => {
  it('fails the stream (its error masked) when a result cannot be serialized, and releases the source', async () => {
    let released = false;
    const schema = createSchema({
      typeDefs: 'scalar Big type Query { ok: Boolean } type Subscription { big: Big! }',
      resolvers: {
        // Serialized to a BigInt, which JSON cannot hold: execution succeeds, the frame cannot be made.
        Big: new GraphQLScalarType({ name: 'Big', serialize: () => 1n }),
        Subscription: {
          big: {
            subscribe: async function* () {
              try {
                yield { id: 'e1' };
                await new Promise(() => {});
              } finally {
                released = true;
              }
            },
            resolve: () => 'any',
          },
        },
      },
    });
    const sharing = useSubscriptionSharing<Ctx>({ scopeOf: (ctx) => ctx.scope, requestContextForEvent: (ctx) => ctx });
    const written: Buffer[] = [];
    const sink = { id: '1', open: () => true, write: (frame: Buffer) => void written.push(frame) };
    const mask: StreamMask = { result: (r) => r, error: (e) => new Error(`masked: ${(e as Error).message}`) };
    const stream = await sharing.subscribeToSocket(
      { schema, document: parse('subscription { big }'), contextValue: { scope: 'a' } } as ExecutionArgs,
      sink,
      mask,
    );
    if (!(Symbol.asyncIterator in stream)) throw new Error('the subscription did not start');
    await expect(stream.next()).rejects.toThrow(/^masked: .*BigInt/);
    expect(written).toHaveLength(0);
    await until(() => released, 'the source to be released');
    expect(await stream.next()).toEqual({ value: undefined, done: true });
  });
});

describe('EventMemo', () => {
  it('shares a value per (event, what), recomputes after its time to live or a rejection, and stays within its bound', async () => {
    const memo = new EventMemo<string>(3, 50);
    let computed = 0;
    const compute = (v: string) => () => {
      computed++;
      return Promise.resolve(v);
    };
    const a = memo.get('e1', 'sel', compute('a'));
    expect(memo.get('e1', 'sel', compute('x'))).toBe(a);
    expect(await memo.get('e1', 'other', compute('b'))).toBe('b');
    expect(await memo.get('e2', 'sel', compute('c'))).toBe('c');
    expect(computed).toBe(3);
    expect(memo.size).toBe(3);

    // Beyond the bound the oldest event's entries go: e1 is computed again, e2 is still shared.
    await memo.get('e3', 'sel', compute('d'));
    expect(memo.size).toBeLessThanOrEqual(3);
    expect(await memo.get('e2', 'sel', compute('y'))).toBe('c');
    expect(await memo.get('e1', 'sel', compute('a2'))).toBe('a2');

    // A rejection is forgotten; the next caller computes again.
    const failed = memo.get('e4', 'sel', () => Promise.reject(new Error('down')));
    await expect(failed).rejects.toThrow('down');
    expect(await memo.get('e4', 'sel', compute('e'))).toBe('e');

    // After the time to live an entry is computed afresh.
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(await memo.get('e4', 'sel', compute('f'))).toBe('f');
    expect(memo.size).toBeLessThanOrEqual(3);
  });

  it('hands out a value as it is once known: a synchronous one at once, a promise until it settles, then its value', async () => {
    const memo = new EventMemo<{ n: number }>(10, 60_000);
    const value = { n: 1 };
    let computed = 0;
    expect(memo.find('e1', 'sel')).toBeUndefined();
    expect(
      memo.get('e1', 'sel', () => {
        computed++;
        return value;
      }),
    ).toBe(value);
    expect(memo.find('e1', 'sel')).toBe(value);
    expect(memo.get('e1', 'sel', () => ({ n: 2 }))).toBe(value);

    let resolve!: (v: { n: number }) => void;
    const pending = memo.get('e2', 'sel', () => {
      computed++;
      return new Promise<{ n: number }>((r) => (resolve = r));
    });
    expect(pending).toBeInstanceOf(Promise);
    expect(memo.find('e2', 'sel')).toBe(pending);
    const settled = { n: 3 };
    resolve(settled);
    expect(await pending).toBe(settled);
    expect(memo.find('e2', 'sel')).toBe(settled);
    expect(memo.get('e2', 'sel', () => ({ n: 4 }))).toBe(settled);
    expect(computed).toBe(2);

    // Past its time to live an entry is not found, and is computed again.
    const brief = new EventMemo<string>(10, 20);
    brief.get('e1', 'sel', () => 'a');
    await new Promise((r) => setTimeout(r, 30));
    expect(brief.find('e1', 'sel')).toBeUndefined();
    expect(brief.get('e1', 'sel', () => 'b')).toBe('b');
  });

  it('forgets a rejected value only while it is the current one, and evicts the oldest selections of the oldest event first', async () => {
    const memo = new EventMemo<string>(10, 200);
    let reject!: (error: Error) => void;
    const first = memo.get('e1', 'sel', () => new Promise<string>((_, r) => (reject = r))) as Promise<string>;
    first.catch(() => {});
    // Another selection of the event keeps the event's entries in place when the first is replaced.
    await memo.get('e1', 'other', () => Promise.resolve('o'));
    await new Promise((resolve) => setTimeout(resolve, 220));
    // Expired: computed again; the first computation failing afterwards must not drop the second.
    const second = memo.get('e1', 'sel', () => Promise.resolve('b'));
    expect(second).not.toBe(first);
    reject(new Error('late'));
    await expect(first).rejects.toThrow('late');
    // The second settled: it is shared as its value from then on.
    expect(memo.get('e1', 'sel', () => Promise.resolve('x'))).toBe('b');
    expect(memo.size).toBe(1);

    // Beyond the bound the oldest event's selections go, oldest first; the others stay shared.
    const bounded = new EventMemo<string>(2, 60_000);
    await bounded.get('e1', 'a', () => Promise.resolve('a'));
    await bounded.get('e1', 'b', () => Promise.resolve('b'));
    await bounded.get('e2', 'a', () => Promise.resolve('c'));
    expect(bounded.size).toBe(2);
    expect(await bounded.get('e1', 'b', () => Promise.resolve('x'))).toBe('b');
    expect(await bounded.get('e1', 'a', () => Promise.resolve('a2'))).toBe('a2');
    expect(bounded.size).toBe(2);
    expect(await bounded.get('e2', 'a', () => Promise.resolve('y'))).toBe('c');
    expect(await bounded.get('e1', 'b', () => Promise.resolve('b2'))).toBe('b2');
  });
});
