/**
 * Scenario `stream`: token streaming. One writer sends updateMessage(appendText) calls back to back
 * to a generating message while `watchers` graphql-ws subscribers of its session receive each
 * MessageUpdated, in blocks of `block` updates, each timed until every watcher has its last one;
 * updates/s = updates / the blocks' time. Baseline in the same run: bench/servers/raw.mjs doing the
 * raw work per update over HTTP (one UPDATE … SET text = text || $1 RETURNING, then PUBLISH on Redis
 * on PostgreSQL, in-process delivery on PGlite) to the same number of sockets. On PostgreSQL both
 * processes run on one database and every round takes turns between them block by block (a round
 * of whole runs one after the other moved the ratio by ±0.15 with the machine's speed, which
 * changes within seconds here); on PGlite (one process per folder) the server's rounds run first,
 * then the server stops and the raw rounds run on the same folder. Each round 0 is an unmeasured
 * warm-up. Target ≥ 0.80 of raw.
 */
import { parseGlobalId } from '../../src/schema/ids.js';
import type { ProcessScenario } from '../lib.js';
import { median, round } from '../lib.js';
import { CREATE_SESSION, type Round, summary, throughputRows } from './_shared.js';

const APPEND_GENERATING = `mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { id } } }`;

interface StreamRound extends Round {
  lost: number;
  duplicates: number;
  /** The writer's round trip per update (load process). */
  write: { p50: number; p99: number };
  /** The load process's CPU per update (it parses every watcher's deliveries). */
  loadCpuMs: number;
  /** The process under test's CPU per update (server or raw), from /proc, while the updates ran. */
  cpuMs: number;
}

const roundLine = (result: StreamRound) =>
  `${result.rps.toFixed(0)} updates/s, write p50 ${result.write.p50.toFixed(2)} ms, CPU per update ${result.cpuMs.toFixed(2)} ms (load process ${result.loadCpuMs.toFixed(2)} ms), delivery p99 ${result.p99.toFixed(1)} ms`;

const stream: ProcessScenario = {
  name: 'stream',
  mode: 'process',
  description: 'updateMessage(appendText) back to back with 100 watchers vs raw UPDATE + publish to the same sockets',
  async run(ctx) {
    const watchers = ctx.smoke ? 20 : 100;
    // Each round: `blocks` blocks of `block` updates per process under test.
    const block = ctx.smoke ? 10 : 100;
    const blocks = ctx.smoke ? 2 : 6;
    const db = await ctx.database();
    const server = await ctx.server(db, { redis: ctx.backend === 'postgres' });
    // Each process's round 0 is an unmeasured warm-up (a fresh process pays JIT warm-up on its first
    // updates); each round streams into a message of its own.
    const first = ctx.smoke ? 1 : 0;
    const messages: { sessionId: string; messageId: string }[] = [];
    for (let i = 0; i < 2 * (ctx.rounds + 1 - first); i++) {
      const { createSession } = await ctx.gql(server.url, CREATE_SESSION, { title: `stream ${i}` });
      const { appendMessages } = await ctx.gql(server.url, APPEND_GENERATING, {
        input: { sessionId: createSession.id, messages: [{ role: 'ASSISTANT', text: 'Streaming:', generating: true }] },
      });
      messages.push({ sessionId: createSession.id, messageId: appendMessages.messages[0].id });
    }
    const rawEnv = {
      ...db.env,
      ...(ctx.backend === 'postgres' && ctx.redisUrl ? { REDIS_URL: ctx.redisUrl } : {}),
      RELAY_PREFIX: `sgbench:stream:${process.pid}:`,
    };
    const serverTarget = () => {
      const m = messages.shift()!;
      return {
        target: 'server',
        pid: server.pid,
        url: server.url,
        wsUrl: server.url,
        sessionId: m.sessionId,
        messageId: m.messageId,
        after: 1,
      };
    };
    const rawTarget = (raw: { url: string; pid: number }, r: number) => {
      const m = messages.shift()!;
      return {
        target: 'raw',
        pid: raw.pid,
        url: `${raw.url}stream`,
        wsUrl: raw.url,
        sessionId: m.sessionId,
        channel: `stream-${r}`,
        rawMessageId: parseGlobalId(m.messageId, 'Message', 'messageId'),
        after: 0,
      };
    };
    const streamRound = (targets: object[]) => ctx.load<StreamRound[]>('stream', { targets, watchers, blocks, block });
    const serverRounds: StreamRound[] = [];
    const rawRounds: StreamRound[] = [];
    if (ctx.backend === 'postgres') {
      // Both processes can use one PostgreSQL database at once: each round takes turns between
      // them block by block, so a change in the machine's speed weighs on both alike.
      const raw = await ctx.raw(rawEnv);
      for (let r = first; r <= ctx.rounds; r++) {
        const [s, b] = await streamRound([serverTarget(), rawTarget(raw, r)]);
        ctx.log(`round ${r}: server ${roundLine(s)}, lost ${s.lost}`);
        ctx.log(`round ${r}: raw    ${roundLine(b)}`);
        if (r > 0) {
          serverRounds.push(s);
          rawRounds.push(b);
        }
      }
    } else {
      // One PGlite folder serves one process: the server's rounds first, then the raw baseline's.
      for (let r = first; r <= ctx.rounds; r++) {
        const [s] = await streamRound([serverTarget()]);
        ctx.log(`server round ${r}: ${roundLine(s)}, lost ${s.lost}`);
        if (r > 0) serverRounds.push(s);
      }
      await server.stop();
      const raw = await ctx.raw(rawEnv);
      for (let r = first; r <= ctx.rounds; r++) {
        const [b] = await streamRound([rawTarget(raw, r)]);
        ctx.log(`raw round ${r}: ${roundLine(b)}`);
        if (r > 0) rawRounds.push(b);
      }
    }
    const rows = throughputRows(
      'stream',
      `updateMessage(appendText), one writer back to back, ${watchers} watchers, ${blocks} blocks of ${block} per round`,
      'raw UPDATE + publish, same watchers',
      { server: summary(serverRounds), baseline: summary(rawRounds) },
      { op: '>=', value: 0.8 },
      'updates/s',
    );
    rows.push(
      {
        metric: 'stream.cpu_per_update',
        value: round(median(serverRounds.map((r) => r.cpuMs)), 2),
        unit: 'ms',
        note: "server's CPU (user + system) per update, from /proc; steadier than the rates on a busy machine",
      },
      {
        metric: 'stream.baseline.cpu_per_update',
        value: round(median(rawRounds.map((r) => r.cpuMs)), 2),
        unit: 'ms',
        note: 'raw baseline, same',
      },
      { metric: 'stream.lost', value: serverRounds.reduce((n, r) => n + r.lost, 0), unit: 'deliveries', target: { op: '<=', value: 0 } },
      {
        metric: 'stream.duplicates',
        value: serverRounds.reduce((n, r) => n + r.duplicates, 0),
        unit: 'deliveries',
        target: { op: '<=', value: 0 },
      },
    );
    return rows;
  },
};

export default stream;
