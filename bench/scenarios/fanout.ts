/**
 * Scenario `fanout`: live delivery of session events to graphql-ws subscribers in the load process,
 * against a raw Redis relay (bench/servers/raw.mjs: one Redis channel per session forwarded as is
 * to the sockets) with the same sockets, instances and pace in the same run.
 *
 * - `one.1000`: 1,000 subscribers of one session, 40 events at 20/s.
 * - `multi.100x10`: 100 sessions × 10 subscribers, 300 events at 20/s round robin over the sessions
 *   (3 per session: with 100, the p99 of its 1,000 deliveries, 10 per event, was the slowest event
 *   or two, and moved with one hiccup of the machine).
 *
 * On PostgreSQL the subscribers are spread over two server instances sharing the database and Redis
 * (the writer on the first); on PGlite (one process owns the folder) over one instance with its
 * in-memory pub/sub. The server's and the relay's subscribers are open at once, and in each round
 * their events take turns (the relay's 25 ms after each of the server's, each side at 20 events/s),
 * so both are measured over the same seconds of this shared machine: measured one after the
 * other, the relay's p99 moved from 5 to 68 ms between runs while the server's stayed at 9 to 15.
 * Latency runs from the moment the writer sends each appendMessages (or PUBLISH)
 * to each socket's receipt; median and p99 over every delivery, medians over the rounds; lost =
 * deliveries not seen within 60 s. Targets: server p99 ≤ 2 × relay p99, 0 lost, 0 duplicates.
 * Beside them, `http_floor`: a bare Yoga process answering `{ hello }` one request at a time at the
 * writer's pace, the part of each server delivery that any server taking its events as HTTP
 * requests pays before it can deliver them (the relay gets its events by PUBLISH).
 * Needs Redis (the relay); skipped without.
 */
import type { ProcessScenario, Row } from '../lib.js';
import { median, round } from '../lib.js';
import { CREATE_SESSION } from './_shared.js';

interface Figures {
  median: number;
  p99: number;
  lost: number;
  duplicates: number;
  expected: number;
}

const fanout: ProcessScenario = {
  name: 'fanout',
  mode: 'process',
  description:
    'graphql-ws delivery to 1,000 subscribers of one session and 100 sessions × 10 (two instances on PostgreSQL + Redis) vs a raw Redis relay',
  async run(ctx) {
    if (!ctx.redisUrl) {
      ctx.log('Redis does not answer: the relay baseline needs it; skipped');
      return [];
    }
    const instances = ctx.backend === 'postgres' ? 2 : 1;
    const db = await ctx.database();
    const servers = [];
    for (let i = 0; i < instances; i++) servers.push(await ctx.server(db, { redis: ctx.backend === 'postgres' }));
    const relays = [];
    const relayPrefix = `sgbench:relay:${process.pid}:`;
    for (let i = 0; i < instances; i++) relays.push(await ctx.raw({ REDIS_URL: ctx.redisUrl, RELAY_PREFIX: relayPrefix }));
    const cases = ctx.smoke
      ? [
          { name: 'one.100', sessions: 1, per: 100, events: 10, label: '100 subscribers of one session (smoke)' },
          { name: 'multi.10x5', sessions: 10, per: 5, events: 10, label: '10 sessions × 5 subscribers (smoke)' },
        ]
      : [
          { name: 'one.1000', sessions: 1, per: 1_000, events: 40, label: '1,000 subscribers of one session' },
          { name: 'multi.100x10', sessions: 100, per: 10, events: 300, label: '100 sessions × 10 subscribers' },
        ];
    const where = instances === 2 ? 'two instances over Redis' : 'one instance, in-memory pub/sub';
    const rows: Row[] = [];
    const bare = await ctx.bareYoga();
    for (const c of cases) {
      const server: Figures[] = [];
      const relay: Figures[] = [];
      // One unmeasured round before the first case: a fresh process pays JIT warm-up on its first events.
      for (let r = ctx.smoke || c !== cases[0] ? 1 : 0; r <= ctx.rounds; r++) {
        const groups = [];
        for (let s = 0; s < c.sessions; s++) {
          const { createSession } = await ctx.gql(servers[0].url, CREATE_SESSION, { title: `fanout ${c.name} ${r}.${s}` });
          groups.push({ sessionId: createSession.id, after: 0, subscribers: c.per });
        }
        const channelGroups = groups.map((g, gi) => ({ ...g, channel: `${c.name}:${r}:${gi}` }));
        const [s, b] = await ctx.load<Figures[]>('fanout', {
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
          ],
          events: c.events,
          intervalMs: 50,
        });
        if (r === 0) continue;
        server.push(s);
        relay.push(b);
        ctx.log(
          `${c.label} round ${r}/${ctx.rounds}: server p50 ${s.median.toFixed(1)} p99 ${s.p99.toFixed(1)} ms lost ${s.lost} dup ${s.duplicates}; relay p50 ${b.median.toFixed(1)} p99 ${b.p99.toFixed(1)} ms lost ${b.lost}`,
        );
      }
      const floor: { median: number; p99: number }[] = [];
      for (let r = 0; r < ctx.rounds; r++) {
        floor.push(await ctx.load<{ median: number; p99: number }>('paced', { url: bare.url, count: c.events, intervalMs: 50 }));
      }
      const sp99 = median(server.map((f) => f.p99));
      const rp99 = median(relay.map((f) => f.p99));
      rows.push(
        {
          metric: `${c.name}.median`,
          value: round(median(server.map((f) => f.median)), 2),
          unit: 'ms',
          note: `${c.label}, ${where}, 20 events/s`,
        },
        { metric: `${c.name}.p99`, value: round(sp99, 2), unit: 'ms' },
        { metric: `${c.name}.lost`, value: server.reduce((n, f) => n + f.lost, 0), unit: 'deliveries', target: { op: '<=', value: 0 } },
        {
          metric: `${c.name}.duplicates`,
          value: server.reduce((n, f) => n + f.duplicates, 0),
          unit: 'deliveries',
          target: { op: '<=', value: 0 },
        },
        {
          metric: `${c.name}.relay.median`,
          value: round(median(relay.map((f) => f.median)), 2),
          unit: 'ms',
          note: 'raw Redis relay, same sockets and pace',
        },
        { metric: `${c.name}.relay.p99`, value: round(rp99, 2), unit: 'ms' },
        {
          metric: `${c.name}.relay.lost`,
          value: relay.reduce((n, f) => n + f.lost, 0),
          unit: 'deliveries',
          target: { op: '<=', value: 0 },
        },
        {
          metric: `${c.name}.http_floor.median`,
          value: round(median(floor.map((f) => f.median)), 2),
          unit: 'ms',
          note: 'bare Yoga { hello }, one request at a time at the same pace',
        },
        { metric: `${c.name}.http_floor.p99`, value: round(median(floor.map((f) => f.p99)), 2), unit: 'ms' },
        {
          metric: `${c.name}.p99_vs_relay`,
          value: round(sp99 / Math.max(rp99, 0.001), 2),
          unit: 'ratio',
          target: { op: '<=', value: 2 },
          note: 'server p99 / relay p99',
        },
      );
    }
    await bare.stop();
    return rows;
  },
};

export default fanout;
