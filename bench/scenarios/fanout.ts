/**
 * Scenario `fanout`: live delivery of session events to graphql-ws subscribers in the load process,
 * against a raw Redis relay (bench/servers/raw.mjs: one Redis channel per session forwarded as is
 * to the sockets) with the same sockets, instances and pace in the same run.
 *
 * - `one.1000`: 1,000 subscribers of one session, 200 events at 20/s (enough of the writer's calls
 *   that its p99 is not the slowest one or two of a round).
 * - `multi.100x10`: 100 sessions × 10 subscribers, 300 events at 20/s round robin over the sessions
 *   (3 per session: with 100, the p99 of its 1,000 deliveries, 10 per event, was the slowest event
 *   or two, and moved with one hiccup of the machine).
 *
 * On PostgreSQL the subscribers are spread over two server instances sharing the database and Redis
 * (the writer on the first); on PGlite (one process owns the folder) over one instance with its
 * in-memory pub/sub. The server's, the relay's and the durable relay's subscribers are open at
 * once, and in each round their events take turns (a third of the 50 ms interval apart, each side
 * at 20 events/s), so all are measured over the same seconds of this shared machine: measured one
 * after the other, the relay's p99 moved from 5 to 68 ms between runs while the server's stayed at
 * 9 to 15. Latency runs from the moment the writer sends each appendMessages (or PUBLISH, or POST)
 * to each socket's receipt; median and p99 over every delivery, medians over the rounds; lost =
 * deliveries not seen within 60 s. Targets (issue 31): server p99 ≤ 1.2 × the durable relay's p99,
 * 0 lost, 0 duplicates; the ratio to the raw relay is kept as information.
 *
 * Beside them, two floors of what a server that takes its events as HTTP requests and persists
 * them pays before it can deliver (the relay gets its events by PUBLISH and writes nothing):
 * - `http_floor`: a bare Yoga process answering `{ hello }` one request at a time at the writer's
 *   pace (run after the rounds, on its own);
 * - `durable_relay`: the raw relay processes taking each event as a POST, committing one UPDATE of
 *   a message row (PostgreSQL: the server's database; PGlite: a folder of its own) and publishing
 *   it to their sockets over Redis: HTTP in, one durable write, the relay: the floor any server
 *   that persists before it delivers stands on, and the baseline of the p99 target.
 * In the cases with one session, the writer's own round trip too (issue 36: a writer must not slow
 * down as more people watch): its appendMessages p99 while the subscribers watch (`writer`) and
 * right after each round from the same server and pace with no socket open (`writer_alone`),
 * target ≤ 2 × on PGlite, where every subscriber is on the writer's instance.
 * Needs Redis (the relay); skipped without.
 *
 * With BENCH_REDIS_CLUSTER_NODES (seeds of a Redis Cluster, e.g. `scripts/redis-cluster.sh nodes`)
 * on PostgreSQL, the `multi` cases add a fourth side in the same rounds: two more instances on the
 * same database whose pub/sub is the cluster's sharded one (`multi.….cluster.*`), target its p99
 * ≤ 1.2 × the rows through one Redis (`multi.….cluster.p99_vs_one_redis`).
 */
import type { ProcessScenario, Row } from '../lib.js';
import { median, round } from '../lib.js';
import { parseGlobalId } from '../../src/schema/ids.js';
import { CREATE_SESSION } from './_shared.js';

const APPEND_ONE = `mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { id } } }`;

interface Figures {
  median: number;
  p99: number;
  lost: number;
  duplicates: number;
  expected: number;
  /** The server side's writer: each appendMessages from its send to its response (on a thread of the load's own). */
  writer?: { median: number; p99: number };
}

const fanout: ProcessScenario = {
  name: 'fanout',
  mode: 'process',
  description:
    'graphql-ws delivery to 1,000 subscribers of one session and 100 sessions × 10 (two instances on PostgreSQL + Redis) vs a raw Redis relay, beside a durable relay (HTTP in, one commit, the relay)',
  async run(ctx) {
    if (!ctx.redisUrl) {
      ctx.log('Redis does not answer: the relay baseline needs it; skipped');
      return [];
    }
    const instances = ctx.backend === 'postgres' ? 2 : 1;
    const db = await ctx.database();
    const servers = [];
    for (let i = 0; i < instances; i++) servers.push(await ctx.server(db, { redis: ctx.backend === 'postgres' }));
    const clusterNodes = ctx.backend === 'postgres' ? process.env.BENCH_REDIS_CLUSTER_NODES : undefined;
    const clustered = [];
    if (clusterNodes) for (let i = 0; i < 2; i++) clustered.push(await ctx.server(db, { env: { REDIS_CLUSTER_NODES: clusterNodes } }));
    // The durable relay's message row: in the server's database, or (PGlite) in a folder of its own,
    // written there by a server that then stops.
    const rawDb = ctx.backend === 'postgres' ? db : await ctx.database();
    const seeder = rawDb === db ? servers[0] : await ctx.server(rawDb);
    const { createSession } = await ctx.gql(seeder.url, CREATE_SESSION, { title: 'fanout durable relay' });
    const { appendMessages } = await ctx.gql(seeder.url, APPEND_ONE, {
      input: { sessionId: createSession.id, messages: [{ role: 'ASSISTANT', text: 'durable relay' }] },
    });
    const rawMessageId = parseGlobalId(appendMessages.messages[0].id, 'Message', 'messageId');
    if (seeder !== servers[0]) await seeder.stop();
    const relays = [];
    const relayPrefix = `sgbench:relay:${process.pid}:`;
    for (let i = 0; i < instances; i++) relays.push(await ctx.raw({ ...rawDb.env, REDIS_URL: ctx.redisUrl, RELAY_PREFIX: relayPrefix }));
    const cases = ctx.smoke
      ? [
          { name: 'one.100', sessions: 1, per: 100, events: 10, label: '100 subscribers of one session (smoke)' },
          { name: 'multi.10x5', sessions: 10, per: 5, events: 10, label: '10 sessions × 5 subscribers (smoke)' },
        ]
      : [
          { name: 'one.1000', sessions: 1, per: 1_000, events: 200, label: '1,000 subscribers of one session' },
          { name: 'multi.100x10', sessions: 100, per: 10, events: 300, label: '100 sessions × 10 subscribers' },
        ];
    // BENCH_FANOUT_CASE=multi.100x10 (or one.1000): that case alone, when looking into one.
    const only = process.env.BENCH_FANOUT_CASE;
    if (only) cases.splice(0, cases.length, ...cases.filter((c) => c.name === only));
    const where = instances === 2 ? 'two instances over Redis' : 'one instance, in-memory pub/sub';
    const rows: Row[] = [];
    const bare = await ctx.bareYoga();
    for (const c of cases) {
      const server: Figures[] = [];
      const relay: Figures[] = [];
      const durable: Figures[] = [];
      const cluster: Figures[] = [];
      const withCluster = clustered.length > 0 && c.sessions > 1;
      /** The writer alone: same server, same pace, a session nobody watches, with no socket open. */
      const alone: Figures[] = [];
      const measureAlone = c.sessions === 1;
      // One unmeasured round before the first case: a fresh process pays JIT warm-up on its first events.
      for (let r = ctx.smoke || c !== cases[0] ? 1 : 0; r <= ctx.rounds; r++) {
        const groups = [];
        for (let s = 0; s < c.sessions; s++) {
          const { createSession } = await ctx.gql(servers[0].url, CREATE_SESSION, { title: `fanout ${c.name} ${r}.${s}` });
          groups.push({ sessionId: createSession.id, after: 0, subscribers: c.per });
        }
        const channelGroups = groups.map((g, gi) => ({ ...g, channel: `${c.name}:${r}:${gi}` }));
        const clusterGroups = [];
        for (let s = 0; withCluster && s < c.sessions; s++) {
          const { createSession } = await ctx.gql(clustered[0].url, CREATE_SESSION, { title: `fanout ${c.name} ${r}.${s} cluster` });
          clusterGroups.push({ sessionId: createSession.id, after: 0, subscribers: c.per });
        }
        const [s, b, d, k] = await ctx.load<Figures[]>('fanout', {
          sides: [
            { target: 'server', urls: servers.map((p) => p.url), groups },
            {
              target: 'relay',
              urls: relays.map((p) => p.url),
              groups: channelGroups,
              redisUrl: ctx.redisUrl,
              relayPrefix,
              payloadBytes: 400,
            },
            {
              target: 'relay',
              urls: relays.map((p) => p.url),
              groups: groups.map((g, gi) => ({ ...g, channel: `${c.name}:${r}:durable:${gi}` })),
              writer: { url: `${relays[0].url}event`, messageId: rawMessageId },
            },
            ...(withCluster ? [{ target: 'server', urls: clustered.map((p) => p.url), groups: clusterGroups }] : []),
          ],
          events: c.events,
          intervalMs: 50,
        });
        if (r === 0) continue;
        server.push(s);
        relay.push(b);
        durable.push(d);
        if (k) {
          cluster.push(k);
          ctx.log(`${c.label} round ${r}/${ctx.rounds}: through the Redis Cluster ${roundLine(k)} dup ${k.duplicates}`);
        }
        ctx.log(
          `${c.label} round ${r}/${ctx.rounds}: server ${roundLine(s)} dup ${s.duplicates}; relay ${roundLine(b)}; durable relay ${roundLine(d)}`,
        );
        if (measureAlone) {
          const { createSession } = await ctx.gql(servers[0].url, CREATE_SESSION, { title: `fanout ${c.name} ${r} writer alone` });
          const [a] = await ctx.load<Figures[]>('fanout', {
            sides: [{ target: 'server', urls: [servers[0].url], groups: [{ sessionId: createSession.id, after: 0, subscribers: 0 }] }],
            events: c.events,
            intervalMs: 50,
          });
          alone.push(a);
          ctx.log(
            `${c.label} round ${r}/${ctx.rounds}: writer p50 ${s.writer?.median.toFixed(1)} p99 ${s.writer?.p99.toFixed(1)} ms; alone p50 ${a.writer?.median.toFixed(1)} p99 ${a.writer?.p99.toFixed(1)} ms`,
          );
        }
      }
      const floor: { median: number; p99: number }[] = [];
      for (let r = 0; r < ctx.rounds; r++) {
        floor.push(await ctx.load<{ median: number; p99: number }>('paced', { url: bare.url, count: c.events, intervalMs: 50 }));
      }
      const sp99 = median(server.map((f) => f.p99));
      const rp99 = median(relay.map((f) => f.p99));
      const dp99 = median(durable.map((f) => f.p99));
      rows.push(
        ...deliveryRows(c.name, server, `${c.label}, ${where}, 20 events/s`),
        {
          metric: `${c.name}.duplicates`,
          value: server.reduce((n, f) => n + f.duplicates, 0),
          unit: 'deliveries',
          target: { op: '<=', value: 0 },
        },
        ...deliveryRows(`${c.name}.relay`, relay, 'raw Redis relay, same sockets and pace'),
        {
          metric: `${c.name}.http_floor.median`,
          value: round(median(floor.map((f) => f.median)), 2),
          unit: 'ms',
          note: 'bare Yoga { hello }, one request at a time at the same pace',
        },
        { metric: `${c.name}.http_floor.p99`, value: round(median(floor.map((f) => f.p99)), 2), unit: 'ms' },
        ...deliveryRows(
          `${c.name}.durable_relay`,
          durable,
          'raw relay taking each event as a POST that commits one UPDATE, then publishes it; same sockets and pace',
        ),
        ...(measureAlone ? writerRows(c.name, ctx.backend, server, alone) : []),
        ...(cluster.length
          ? clusterRows(c.name, server, cluster, `${c.label}, two instances over a Redis Cluster (sharded pub/sub), 20 events/s`)
          : []),
        {
          metric: `${c.name}.durable_relay.p99_vs_relay`,
          value: round(dp99 / Math.max(rp99, 0.001), 2),
          unit: 'ratio',
          note: 'durable relay p99 / relay p99: what HTTP in and one commit cost, with no GraphQL',
        },
        {
          metric: `${c.name}.p99_vs_durable_relay`,
          value: round(sp99 / Math.max(dp99, 0.001), 2),
          unit: 'ratio',
          target: { op: '<=', value: 1.2 },
          note: 'server p99 / durable relay p99',
        },
        {
          metric: `${c.name}.p99_vs_relay`,
          value: round(sp99 / Math.max(rp99, 0.001), 2),
          unit: 'ratio',
          note: 'server p99 / relay p99: what persisting before delivering costs, GraphQL included',
        },
      );
    }
    await bare.stop();
    return rows;
  },
};

/**
 * The writer's rows of a case with one session: its appendMessages p99 while the case's subscribers
 * watch the session it writes to, alone (no socket open, same server and pace), and their ratio
 * (issue 36: a writer's latency must not grow with the number of subscribers; the target is set on
 * PGlite, where every subscriber is on the writer's instance).
 */
function writerRows(name: string, backend: string, watched: Figures[], alone: Figures[]): Row[] {
  const wp99 = median(watched.map((f) => f.writer?.p99 ?? Number.NaN));
  const ap99 = median(alone.map((f) => f.writer?.p99 ?? Number.NaN));
  return [
    {
      metric: `${name}.writer.p99`,
      value: round(wp99, 2),
      unit: 'ms',
      note: "the writer's appendMessages (its send to its response) while the subscribers watch its session",
    },
    { metric: `${name}.writer.median`, value: round(median(watched.map((f) => f.writer?.median ?? Number.NaN)), 2), unit: 'ms' },
    {
      metric: `${name}.writer_alone.p99`,
      value: round(ap99, 2),
      unit: 'ms',
      note: 'the same writer, server and pace with no subscriber on the server',
    },
    { metric: `${name}.writer_alone.median`, value: round(median(alone.map((f) => f.writer?.median ?? Number.NaN)), 2), unit: 'ms' },
    {
      metric: `${name}.writer_p99_vs_alone`,
      value: round(wp99 / Math.max(ap99, 0.001), 2),
      unit: 'ratio',
      ...(backend === 'pglite' ? { target: { op: '<=' as const, value: 2 } } : {}),
      note: 'writer p99 with the subscribers / alone',
    },
  ];
}

/** One side's round in the log: `p50 … p99 … ms lost …`. */
const roundLine = (f: Figures) => `p50 ${f.median.toFixed(1)} p99 ${f.p99.toFixed(1)} ms lost ${f.lost}`;

/** One side's rows over its rounds: the median of its medians and of its p99s, and every delivery lost. */
function deliveryRows(prefix: string, rounds: Figures[], note: string): Row[] {
  return [
    { metric: `${prefix}.median`, value: round(median(rounds.map((f) => f.median)), 2), unit: 'ms', note },
    { metric: `${prefix}.p99`, value: round(median(rounds.map((f) => f.p99)), 2), unit: 'ms' },
    { metric: `${prefix}.lost`, value: rounds.reduce((n, f) => n + f.lost, 0), unit: 'deliveries', target: { op: '<=', value: 0 } },
  ];
}

export default fanout;

/** The `multi` rows through a Redis Cluster, and their p99 against the same rows through one Redis. */
function clusterRows(name: string, server: Figures[], cluster: Figures[], label: string): Row[] {
  const p99 = median(cluster.map((f) => f.p99));
  return [
    ...deliveryRows(`${name}.cluster`, cluster, label),
    {
      metric: `${name}.cluster.duplicates`,
      value: cluster.reduce((n, f) => n + f.duplicates, 0),
      unit: 'deliveries',
      target: { op: '<=', value: 0 },
    },
    {
      metric: `${name}.cluster.p99_vs_one_redis`,
      value: round(p99 / Math.max(median(server.map((f) => f.p99)), 0.001), 2),
      unit: 'ratio',
      target: { op: '<=', value: 1.2 },
      note: 'p99 through the Redis Cluster / p99 through one Redis, same rounds',
    },
  ];
}
