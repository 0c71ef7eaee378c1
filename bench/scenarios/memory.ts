/**
 * Scenario `memory`: the server process's RSS (from /proc) idle, against a bare Yoga process; per
 * subscribed WebSocket (graphql-ws subscribers of one session held by the load process, 1,000 then
 * 1,000 more, and 5,000 then 5,000 more: the second burst's RSS growth / sockets is the per-socket
 * cost; the first's, which includes V8's one-time growth as load first comes, is shown too); after
 * 20,000 appended messages; and over a soak of mixed load (readers, a paced writer, subscribers)
 * sampled every 5 s: `--soak=S` seconds, 300 by default, run on PostgreSQL (the production set-up)
 * only, and for a few seconds on both in smoke mode.
 * Targets: idle < 150 MB on PostgreSQL, ≤ 10 KB per socket, 0 lost in the soak.
 */
import type { ProcessScenario, Row } from '../lib.js';
import { round } from '../lib.js';
import { holdLoad } from '../proc.js';
import { CREATE_SESSION, SESSION_READ, seedSessions } from './_shared.js';

const MB = 2 ** 20;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const memory: ProcessScenario = {
  name: 'memory',
  mode: 'process',
  description: 'server RSS idle (vs bare Yoga), per subscribed socket (1,000 / 5,000), after 20,000 messages, and over a soak',
  async run(ctx) {
    const db = await ctx.database();
    const server = await ctx.server(db, { redis: ctx.backend === 'postgres' });
    const bare = await ctx.bareYoga();
    await sleep(ctx.smoke ? 1_000 : 3_000);
    const rows: Row[] = [];
    const idle = server.rss();
    rows.push(
      {
        metric: 'memory.idle',
        value: round(idle / MB, 1),
        unit: 'MB',
        target: ctx.backend === 'postgres' ? { op: '<', value: 150 } : null,
        note: 'server RSS 3 s after start (1 s in smoke mode)',
      },
      { metric: 'memory.baseline.idle', value: round(bare.rss() / MB, 1), unit: 'MB', note: 'bare Yoga RSS 3 s after start' },
    );
    ctx.log(`idle: server ${(idle / MB).toFixed(1)} MB, bare Yoga ${(bare.rss() / MB).toFixed(1)} MB`);
    await bare.stop();

    for (const count of ctx.smoke ? [100] : [1_000, 5_000]) {
      const { createSession } = await ctx.gql(server.url, CREATE_SESSION, { title: `memory ${count}` });
      // A first small set warms the subscription path, so the measured growth is per socket.
      const warm = await holdLoad({ urls: [server.url], sessionId: createSession.id, count: 20 });
      // Two bursts of `count`, both held: the first one's growth includes what a server pays once
      // when load first comes (V8 grows its young generation to fit the allocation rate, by up to
      // ~10 MB, and shrinks it again when idle), the second one's is what each further socket costs.
      // Nothing is released between them, so the second cannot reuse memory the first gave back.
      const before = server.rss();
      const first = await holdLoad({ urls: [server.url], sessionId: createSession.id, count });
      await sleep(2_000);
      const middle = server.rss();
      const second = await holdLoad({ urls: [server.url], sessionId: createSession.id, count });
      await sleep(2_000);
      const after = server.rss();
      await second.release();
      await first.release();
      await warm.release();
      const firstBurst = (middle - before) / count;
      const perSocket = (after - middle) / count;
      ctx.log(
        `${count} subscribers, twice: RSS ${(before / MB).toFixed(1)} → ${(middle / MB).toFixed(1)} → ${(after / MB).toFixed(1)} MB; first ${(firstBurst / 1024).toFixed(1)} KB, then ${(perSocket / 1024).toFixed(1)} KB per socket`,
      );
      rows.push(
        {
          metric: `memory.subscribers.${count}.rss`,
          value: round(after / MB, 1),
          unit: 'MB',
          note: `${2 * count} graphql-ws subscribers of one session`,
        },
        {
          metric: `memory.subscribers.${count}.first_burst_per_socket`,
          value: round(firstBurst / 1024, 2),
          unit: 'KB',
          note: `RSS growth / sockets of the first ${count}, with the one-time growth as load first comes`,
        },
        {
          metric: `memory.subscribers.${count}.per_socket`,
          value: round(perSocket / 1024, 2),
          unit: 'KB',
          target: { op: '<=', value: 10 },
          note: `RSS growth / sockets of a second ${count} on top of the first`,
        },
      );
    }

    const total = ctx.smoke ? 500 : 20_000;
    const sessions = await seedSessions(ctx, server.url, 20, 0, 'memory bulk');
    const appended = await ctx.load<{ appended: number; failed: number }>('append', {
      url: server.url,
      sessionIds: sessions,
      total,
      batch: 10,
      clients: 10,
    });
    await sleep(2_000);
    rows.push(
      {
        metric: 'memory.after_messages',
        value: round(server.rss() / MB, 1),
        unit: 'MB',
        note: `after ${appended.appended} messages appended (batches of 10, 10 clients)`,
      },
      { metric: 'memory.after_messages.failed', value: appended.failed, unit: 'errors', target: { op: '<=', value: 0 } },
    );

    if (ctx.smoke || ctx.backend === 'postgres') {
      const seconds = ctx.soakSeconds;
      const soakSessions = [];
      for (let i = 0; i < 5; i++) soakSessions.push((await ctx.gql(server.url, CREATE_SESSION, { title: `soak ${i}` })).createSession.id);
      const readBody = JSON.stringify({ query: SESSION_READ, variables: { id: sessions[0] } });
      const samples: number[] = [];
      const sampler = setInterval(() => samples.push(server.rss()), 5_000);
      ctx.log(`soak: ${seconds} s of mixed load (5 readers, 10 writes/s, 100 subscribers), RSS sampled every 5 s…`);
      const soak = await ctx
        .load<{ reads: number; writes: number; failed: number; lost: number }>('soak', {
          url: server.url,
          sessionIds: soakSessions,
          readBody,
          durationS: seconds,
          readers: 5,
          subscribers: ctx.smoke ? 20 : 100,
          writesPerSecond: 10,
        })
        .finally(() => clearInterval(sampler));
      samples.push(server.rss());
      const early = samples[Math.min(samples.length - 1, Math.floor(samples.length / 5))];
      const end = samples[samples.length - 1];
      ctx.log(
        `soak: ${soak.reads} reads, ${soak.writes} writes, ${soak.failed} failed, lost ${soak.lost}; RSS ${(early / MB).toFixed(1)} → ${(end / MB).toFixed(1)} MB`,
      );
      rows.push(
        { metric: 'memory.soak.rss_early', value: round(early / MB, 1), unit: 'MB', note: `RSS a fifth into a ${seconds} s soak` },
        { metric: 'memory.soak.rss_end', value: round(end / MB, 1), unit: 'MB', note: `${soak.reads} reads, ${soak.writes} writes` },
        { metric: 'memory.soak.rss_max', value: round(Math.max(...samples) / MB, 1), unit: 'MB' },
        { metric: 'memory.soak.growth', value: round((end - early) / MB, 1), unit: 'MB', note: 'end − early: flat is ≈ 0' },
        { metric: 'memory.soak.failed', value: soak.failed, unit: 'errors', target: { op: '<=', value: 0 } },
        { metric: 'memory.soak.lost', value: soak.lost, unit: 'deliveries', target: { op: '<=', value: 0 } },
      );
    }
    return rows;
  },
};

export default memory;
