import { createSchema, createYoga } from 'graphql-yoga';
import { describe, expect, it } from 'vitest';
import { useSubscriptionSharing } from '../../src/subscription-sharing.js';
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
    contextForEvent: (ctx) => ({ ...ctx }),
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
