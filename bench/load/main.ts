/**
 * The load process: `node --import tsx bench/load/main.ts <mode>` with the mode's arguments as JSON
 * in BENCH_LOAD_ARGS (bench/proc.ts spawns it; bench/load/args.ts types each mode's arguments, and
 * each mode's function below says what it measures). It runs apart from the server under test
 * and the runner, talks to them over real sockets only, prints progress on stderr and its result as
 * one JSON line on stdout. Exit status: 0 with a result, 1 when the mode failed, 2 for an unknown
 * mode or a missing or bad argument.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import type WebSocket from 'ws';
import { cpuMsOf } from '../proc.js';
import {
  type HttpArgs,
  type RawWritesArgs,
  type FanoutArgs,
  type FanoutSide,
  type PacedArgs,
  type StreamArgs,
  type StreamTarget,
  type UsageArgs,
  type AppendArgs,
  type HoldArgs,
  type SoakArgs,
  type LoadArgs,
  LoadArgsError,
  parseLoadArgs,
} from './args.js';
import { post, gql, GraphQLCallError } from './http-client.js';
import { FILLER, APPEND, type Subscription } from './operations.js';
import { log, printLine } from './output.js';
import { pool } from './pool.js';
import { quantile } from './stats.js';
import { openSockets, Receipts, terminateAll } from './subscribers.js';
import { WriterThread } from './writer-thread.js';

/**
 * Mode `http`: autocannon POSTing GraphQL bodies (one per connection, cycled) for a duration.
 * Responses that are not 200 or carry `errors` count as failed, with connection errors and timeouts.
 */
async function runHttp({ url, connections, durationS, bodies }: HttpArgs) {
  let nextConnection = 0;
  let failed = 0;
  const firstErrors: string[] = [];
  const result = await autocannon({
    url,
    connections,
    duration: durationS,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    requests: [
      {
        setupRequest: (request, context: { body?: string }) => {
          if (context.body === undefined) context.body = bodies[nextConnection++ % bodies.length];
          return { ...request, body: context.body };
        },
        onResponse: (status, body) => {
          if (status !== 200 || body.includes('"errors"')) {
            failed++;
            if (firstErrors.length < 3) firstErrors.push(`${status} ${body.slice(0, 300)}`);
          }
        },
      },
    ],
  });
  return {
    rps: result.requests.total / result.duration,
    total: result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failed: failed + result.errors + result.timeouts,
    firstErrors,
  };
}

const LOCK = 'SELECT "messageCount" FROM "Session" WHERE id = $1 FOR UPDATE';
const INSERT = `INSERT INTO "Message" (id, "sessionId", position, role, parts, text, "toolCallIds", "toolResultIds",
      generating, "tokensO200k", "tokensCl100k", "createdAt", "updatedAt")
    VALUES (gen_random_uuid()::text, $1, $2, 'ASSISTANT', $3::jsonb, $4, '{}', '{}', false, 20, 20, now(), now())`;
const BUMP = `UPDATE "Session" SET "messageCount" = "messageCount" + 1, "eventSequence" = "eventSequence" + 1, "updatedAt" = now() WHERE id = $1`;

type Query = (sql: string, params: unknown[]) => Promise<{ rows: { messageCount: number }[] }>;

/** A database the loops write to: `transaction` commits what `work` did, or rolls back and rethrows. */
interface RawDatabase {
  transaction(work: (query: Query) => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

async function openDatabase(database: RawWritesArgs['database']): Promise<RawDatabase> {
  if (database.backend === 'postgres') {
    const { default: pg } = await import('pg');
    const pgPool = new pg.Pool({ connectionString: database.url, max: 10 });
    return {
      async transaction(work) {
        const client = await pgPool.connect();
        try {
          await client.query('BEGIN');
          await work((sql, params) => client.query(sql, params));
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {});
          throw error;
        } finally {
          client.release();
        }
      },
      close: () => pgPool.end(),
    };
  }
  const { PGlite } = await import('@electric-sql/pglite');
  const db = new PGlite(database.dataDir);
  await db.waitReady;
  return {
    transaction: (work) => db.transaction((tx) => work((sql, params) => tx.query(sql, params) as ReturnType<Query>)),
    close: () => db.close(),
  };
}

/**
 * Mode `raw-writes`, the write baseline with no server: the locked insert (BEGIN; SELECT … FOR UPDATE
 * on the session; INSERT the message at the next position; UPDATE the session's counters; COMMIT)
 * from `clients` concurrent loops for a duration, through `pg` (a pool of 10, as the server's) or
 * PGlite. Each attempt is timed, failed ones too.
 */
async function runRawWrites({ database, sessions, clients, durationS }: RawWritesArgs) {
  const text = `raw ${FILLER}`;
  const parts = JSON.stringify([{ type: 'text', text }]);
  const db = await openDatabase(database);
  const latencies: number[] = [];
  let errors = 0;
  const firstErrors: string[] = [];
  const started = performance.now();
  const deadline = started + durationS * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      const sessionId = sessions[i % sessions.length];
      while (performance.now() < deadline) {
        const t = performance.now();
        try {
          await db.transaction(async (query) => {
            const { rows } = await query(LOCK, [sessionId]);
            await query(INSERT, [sessionId, rows[0].messageCount, parts, text]);
            await query(BUMP, [sessionId]);
          });
        } catch (error) {
          errors++;
          if (firstErrors.length < 3) firstErrors.push((error as Error).message);
        }
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  await db.close();
  return {
    rps: latencies.length / elapsed,
    total: latencies.length,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    failed: errors,
    firstErrors,
  };
}

/** An open side: its `send` writes the next event of a group and answers the event's key. */
type OpenSide = Awaited<ReturnType<typeof openSide>>;

async function openSide(side: FanoutSide) {
  const { urls, groups } = side;
  const target = side.kind === 'server' ? 'server' : 'relay';
  const receipts = new Receipts();
  const total = groups.reduce((n, g) => n + g.subscribers, 0);
  const opened = performance.now();
  const sockets = await openSockets({ target, urls, groups, receipts });
  log(`${total} ${target} sockets open in ${((performance.now() - opened) / 1000).toFixed(1)} s`);
  const publisher = side.kind === 'relay' ? new Redis(side.redisUrl) : null;
  const writerThread = side.kind === 'server' ? new WriterThread() : null;
  const nextSequence = groups.map((g) => g.after + 1);
  /** Sends a group's next event; answers its key and, for the server's writer, when its thread sent it. */
  const send = async (gi: number): Promise<{ key: string; sentAt?: number }> => {
    const group = groups[gi];
    const sequence = nextSequence[gi]++;
    const key = `${gi}:${sequence}`;
    const channel = group.channel ?? group.sessionId;
    if (side.kind === 'durable-relay') {
      const body = JSON.stringify({ id: side.writer.messageId, text: `event ${sequence} ${FILLER}`, channel, sequence });
      const { status, text } = await post(side.writer.url, body);
      if (status !== 200) throw new Error(`durable relay writer answered ${status}: ${text.slice(0, 300)}`);
    } else if (side.kind === 'relay') {
      const message = JSON.stringify({
        sequence,
        type: 'MESSAGE_ADDED',
        at: new Date().toISOString(),
        text: 'x'.repeat(side.payloadBytes),
      });
      await publisher?.publish(`${side.relayPrefix}${channel}`, message);
    } else {
      const sentAt = await writerThread?.gql(urls[0], APPEND, {
        input: { sessionId: group.sessionId, messages: [{ role: 'ASSISTANT', text: `event ${sequence} ${FILLER}` }] },
      });
      return { key, sentAt };
    }
    return { key };
  };
  return {
    groups,
    receipts,
    total,
    send,
    want: (key: string) => groups[Number(key.split(':')[0])].subscribers,
    sentAt: new Map<string, number>(),
    writerLatencies: writerThread?.latencies,
    close() {
      terminateAll(sockets);
      publisher?.disconnect();
      writerThread?.close();
    },
  };
}

/** A warm-up event per group that every socket must see: from then on each subscription is live. */
async function warmUp(side: OpenSide, deadline: number) {
  const warm: string[] = [];
  await pool(side.groups.length, 10, async (gi) => void warm.push((await side.send(gi)).key));
  await side.receipts.all(warm, side.want, deadline);
  const warmed = warm.reduce((n, k) => n + side.receipts.count(k), 0);
  if (warmed < side.total)
    throw new Error(`only ${warmed} of ${side.total} sockets got the warm-up event; ${side.receipts.errors.join('; ')}`);
}

/** A side's figures over its paced events, once every delivery arrived or the deadline passed. */
async function figures(side: OpenSide, deadline: number) {
  const { receipts, sentAt, want } = side;
  await receipts.all([...sentAt.keys()], want, deadline);
  const latencies: number[] = [];
  let expected = 0;
  for (const [key, at] of sentAt) {
    expected += want(key);
    for (const received of receipts.seen.get(key) ?? []) latencies.push(received - at);
  }
  return {
    median: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    delivered: latencies.length,
    expected,
    lost: expected - latencies.length,
    duplicates: receipts.duplicates,
    errors: receipts.errors,
    writer: side.writerLatencies ? { median: quantile(side.writerLatencies, 0.5), p99: quantile(side.writerLatencies, 0.99) } : undefined,
    perEvent: process.env.BENCH_PER_EVENT
      ? [...sentAt].map(([key, at]) => Math.max(...(receipts.seen.get(key) ?? [Number.NaN])) - at)
      : undefined,
  };
}

/**
 * Mode `fanout`: paced events to groups of subscribers (per session, or per relay channel), each
 * timed from the moment it is sent to each socket's receipt; lost and duplicate deliveries counted.
 * With several `sides` (the server's, the relay's, the durable relay's), their events take turns at
 * even offsets within each interval, each side at the full pace: all are measured over the same
 * seconds of the machine. Answers each side's figures, in order.
 */
async function runFanout({ sides: given, events, intervalMs, deadlineMs }: FanoutArgs) {
  const sides: OpenSide[] = [];
  const deadline = () => performance.now() + deadlineMs;
  try {
    for (const side of given) sides.push(await openSide(side));
    for (const side of sides) await warmUp(side, deadline());
    // The writer's figures cover the paced events only.
    for (const side of sides) side.writerLatencies?.splice(0);
    const started = performance.now();
    for (let i = 0; i < events; i++) {
      for (let k = 0; k < sides.length; k++) {
        const side = sides[k];
        const wait = started + (i + k / sides.length) * intervalMs - performance.now();
        if (wait > 0) await sleep(wait);
        const gi = i % side.groups.length;
        const at = performance.now();
        // The server's event counts from when the writer's thread sent it: the hand-over to that
        // thread (its wake-up) is the load's time, which the relays' sends never pay.
        const { key, sentAt } = await side.send(gi);
        side.sentAt.set(key, sentAt ?? at);
      }
    }
    const results = [];
    for (const side of sides) results.push(await figures(side, deadline()));
    return results;
  } finally {
    for (const side of sides) side.close();
  }
}

/** Mode `paced`: `{ hello }` requests one at a time at the fan-out writer's pace: what one HTTP request costs then. */
async function runPaced({ url, count, intervalMs }: PacedArgs) {
  const latencies: number[] = [];
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const wait = started + i * intervalMs - performance.now();
    if (wait > 0) await sleep(wait);
    const t = performance.now();
    await gql(url, '{ hello }');
    latencies.push(performance.now() - t);
  }
  return { median: quantile(latencies, 0.5), p99: quantile(latencies, 0.99) };
}

const UPDATE_MESSAGE = `mutation ($input: UpdateMessageInput!) { updateMessage(input: $input) { id } }`;

/** One target's sockets and what its blocks measured so far. */
interface Run {
  t: StreamTarget;
  receipts: Receipts;
  sockets: WebSocket[];
  /** The sequence of the last update sent. */
  sequence: number;
  sentAt: Map<string, number>;
  roundTrips: number[];
  /** Summed over the blocks: time from each block's first update to its last delivery, CPU of the target and of this process. */
  elapsedMs: number;
  targetCpuMs: number;
  loadCpuMs: number;
}

/** Sends the run's next update; answers its key. */
async function update(run: Run): Promise<string> {
  const { t } = run;
  run.sequence++;
  if (t.target === 'raw') {
    const response = await post(t.url, JSON.stringify({ id: t.rawMessageId, text: ' token', channel: t.channel, sequence: run.sequence }));
    if (response.status !== 200) throw new Error(`raw update: HTTP ${response.status} ${response.text}`);
  } else {
    await gql(t.url, UPDATE_MESSAGE, { input: { messageId: t.messageId, appendText: ' token' } });
  }
  return `0:${run.sequence}`;
}

/**
 * Mode `stream`: `watchers` sockets on one generating message per target (the server, the raw
 * baseline, or both); one writer sends appendText updates back to back (the server's updateMessage,
 * or the raw baseline's update + publish) in blocks, the targets taking turns block by block.
 * Updates/s over the blocks, each block timed until every watcher has its last update; beside it,
 * the CPU per update of the process under test (read from /proc, the one thing this process learns
 * other than over sockets) and of this process.
 */
async function runStream({ targets, watchers, blocks, block }: StreamArgs) {
  const runs: Run[] = [];
  for (const t of targets) {
    const receipts = new Receipts();
    const sockets = await openSockets({
      target: t.target === 'raw' ? 'relay' : 'server',
      urls: [t.wsUrl],
      groups: [{ sessionId: t.sessionId, channel: t.target === 'raw' ? t.channel : undefined, after: t.after, subscribers: watchers }],
      receipts,
    });
    runs.push({ t, receipts, sockets, sequence: t.after, sentAt: new Map(), roundTrips: [], elapsedMs: 0, targetCpuMs: 0, loadCpuMs: 0 });
  }
  const want = () => watchers;
  // One block: `block` updates back to back, then until every watcher has the last one. The
  // targets take turns block by block (in alternating order), so that a change in the machine's
  // speed, which on this shared machine comes and goes within seconds, weighs on both alike.
  const runBlock = async (run: Run) => {
    const keys: string[] = [];
    const cpu = process.cpuUsage();
    const targetCpu = cpuMsOf(run.t.pid);
    const started = performance.now();
    for (let i = 0; i < block; i++) {
      const t = performance.now();
      const key = `0:${run.sequence + 1}`;
      run.sentAt.set(key, t);
      keys.push(key);
      await update(run);
      run.roundTrips.push(performance.now() - t);
    }
    await run.receipts.all(keys, want, performance.now() + 60_000);
    const last = run.receipts.seen.get(keys[keys.length - 1]);
    run.elapsedMs += (last?.length ? Math.max(...last) : performance.now()) - started;
    run.targetCpuMs += cpuMsOf(run.t.pid) - targetCpu;
    const used = process.cpuUsage(cpu);
    run.loadCpuMs += (used.user + used.system) / 1000;
  };
  try {
    for (const run of runs) {
      const warm = await update(run);
      await run.receipts.all([warm], want, performance.now() + 30_000);
      if (run.receipts.count(warm) < watchers)
        throw new Error(`only ${run.receipts.count(warm)} of ${watchers} watchers got the first update; ${run.receipts.errors.join('; ')}`);
    }
    for (let b = 0; b < blocks; b++) for (const run of b % 2 ? [...runs].reverse() : runs) await runBlock(run);
    const updates = blocks * block;
    return runs.map((run) => {
      const latencies: number[] = [];
      for (const [key, at] of run.sentAt) for (const received of run.receipts.seen.get(key) ?? []) latencies.push(received - at);
      return {
        target: run.t.target,
        rps: updates / (run.elapsedMs / 1000),
        p50: quantile(latencies, 0.5),
        p99: quantile(latencies, 0.99),
        lost: updates * watchers - latencies.length,
        duplicates: run.receipts.duplicates,
        failed: 0,
        // Diagnostics: the writer's round trip per update, the process under test's CPU per update,
        // and this process's (it parses every watcher's deliveries, on the same machine).
        write: { p50: quantile(run.roundTrips, 0.5), p99: quantile(run.roundTrips, 0.99) },
        cpuMs: run.targetCpuMs / updates,
        loadCpuMs: run.loadCpuMs / updates,
      };
    });
  } finally {
    for (const run of runs) terminateAll(run.sockets);
  }
}

const TURN_EVENTS: Subscription = {
  query: `subscription ($id: ID!, $after: Int) {
  turnEvents(sessionId: $id, afterSequence: $after) {
    sequence __typename at
    ... on TurnUsageUpdated { agentId callId model delta { inputTokens outputTokens cost } total { inputTokens outputTokens cost } }
  }
}`,
  field: 'turnEvents',
};
const REPORT_USAGE = `mutation ($input: ReportUsageInput!) { reportUsage(input: $input) { id } }`;

/**
 * Mode `usage`: a reportUsage burst, `calls` calls from `clients` concurrent clients to one turn,
 * with `subscribers` turnEvents sockets counting their deliveries: every successful call is one
 * TurnUsageUpdated event. Failed calls are counted by their error code.
 */
async function runUsage({ url, sessionId, turnId, after, clients, calls, subscribers }: UsageArgs) {
  const receipts = new Receipts();
  const sockets = await openSockets({
    target: 'server',
    urls: [url],
    groups: [{ sessionId, after, subscribers }],
    subscription: TURN_EVENTS,
    receipts,
  });
  try {
    const latencies: number[] = [];
    let failed = 0;
    const firstErrors: string[] = [];
    const codes: Record<string, number> = {};
    const started = performance.now();
    await pool(calls, clients, async (i) => {
      const t = performance.now();
      try {
        await gql(url, REPORT_USAGE, {
          input: {
            turnId,
            agentId: `agent-${i % 5}`,
            callId: `burst-${i}`,
            model: i % 3 ? 'model-a' : 'model-b',
            inputTokens: 100,
            outputTokens: 20,
            cost: 0.001,
          },
        });
      } catch (error) {
        failed++;
        const code = (error instanceof GraphQLCallError ? error.code : undefined) ?? 'other';
        codes[code] = (codes[code] ?? 0) + 1;
        if (firstErrors.length < 3) firstErrors.push((error as Error).message);
      }
      latencies.push(performance.now() - t);
    });
    const elapsed = (performance.now() - started) / 1000;
    // The successful calls' events are sequences after+1 … after+ok.
    const ok = calls - failed;
    const keys = Array.from({ length: ok }, (_, i) => `0:${after + 1 + i}`);
    await receipts.all(keys, () => subscribers, performance.now() + 60_000);
    const delivered = keys.reduce((n, k) => n + receipts.count(k), 0);
    return {
      rps: calls / elapsed,
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
      failed,
      codes,
      firstErrors,
      lost: ok * subscribers - delivered,
      duplicates: receipts.duplicates,
    };
  } finally {
    terminateAll(sockets);
  }
}

/** Mode `append`: appends `total` messages in batches of `batch` from `clients` clients, round robin over the sessions (the memory scenario's setup). */
async function runAppend({ url, sessionIds, total, batch, clients }: AppendArgs) {
  const calls = Math.ceil(total / batch);
  let failed = 0;
  await pool(calls, clients, async (i) => {
    const messages = Array.from({ length: batch }, (_, j) => ({ role: j % 2 ? 'ASSISTANT' : 'USER', text: `bulk ${i}.${j} ${FILLER}` }));
    try {
      await gql(url, APPEND, { input: { sessionId: sessionIds[i % sessionIds.length], messages } });
    } catch (error) {
      if (failed++ < 3) log((error as Error).message);
    }
  });
  return { appended: calls * batch, failed };
}

/**
 * Mode `hold`: opens `count` subscribers of one session, prints `{"ready":true,"opened":N}`, and
 * keeps them open until stdin ends (bench/proc.ts `holdLoad`); then closes them and answers.
 */
async function runHold({ urls, sessionId, count }: HoldArgs) {
  const receipts = new Receipts();
  const sockets = await openSockets({ target: 'server', urls, groups: [{ sessionId, after: 0, subscribers: count }], receipts });
  // Let the server settle what the subscribe messages started.
  await sleep(1_000);
  printLine({ ready: true, opened: sockets.length });
  await new Promise<void>((resolve) => {
    process.stdin.on('data', () => {});
    process.stdin.on('end', resolve);
    process.stdin.on('close', resolve);
  });
  terminateAll(sockets);
  return { closed: sockets.length, errors: receipts.errors };
}

/**
 * Mode `soak`: mixed load for a duration: `readers` back-to-back readers POSTing `readBody`, a
 * writer appending at `writesPerSecond` round robin over the sessions, and `subscribers` sockets
 * spread evenly over the sessions, whose deliveries must match the writes.
 */
async function runSoak({ url, sessionIds, readBody, durationS, readers, subscribers, writesPerSecond }: SoakArgs) {
  const perSession = Math.ceil(subscribers / sessionIds.length);
  const receipts = new Receipts();
  const sockets = await openSockets({
    target: 'server',
    urls: [url],
    groups: sessionIds.map((sessionId) => ({ sessionId, after: 0, subscribers: perSession })),
    receipts,
  });
  const deadline = performance.now() + durationS * 1000;
  let reads = 0;
  let writes = 0;
  let failed = 0;
  const readerLoops = Array.from({ length: readers }, async () => {
    while (performance.now() < deadline) {
      const { status, text } = await post(url, readBody);
      if (status !== 200 || text.includes('"errors"')) failed++;
      reads++;
    }
  });
  const writer = (async () => {
    const started = performance.now();
    for (let i = 0; performance.now() < deadline; i++) {
      const wait = started + (i * 1000) / writesPerSecond - performance.now();
      if (wait > 0) await sleep(wait);
      try {
        await gql(url, APPEND, {
          input: { sessionId: sessionIds[i % sessionIds.length], messages: [{ role: 'USER', text: `soak ${i} ${FILLER}` }] },
        });
        writes++;
      } catch {
        failed++;
      }
    }
  })();
  let lastReport = performance.now();
  const progress = setInterval(() => {
    if (performance.now() - lastReport >= 30_000) {
      lastReport = performance.now();
      log(
        `soak: ${reads} reads, ${writes} writes, ${failed} failed, ${Math.max(0, Math.round((deadline - performance.now()) / 1000))} s left`,
      );
    }
  }, 5_000);
  await Promise.all([...readerLoops, writer]);
  clearInterval(progress);
  await sleep(2_000);
  let delivered = 0;
  for (const times of receipts.seen.values()) delivered += times.length;
  terminateAll(sockets);
  return { reads, writes, failed, delivered, expected: writes * perSession, lost: writes * perSession - delivered };
}

function run(args: LoadArgs): Promise<unknown> {
  switch (args.mode) {
    case 'http':
      return runHttp(args);
    case 'raw-writes':
      return runRawWrites(args);
    case 'fanout':
      return runFanout(args);
    case 'paced':
      return runPaced(args);
    case 'stream':
      return runStream(args);
    case 'usage':
      return runUsage(args);
    case 'append':
      return runAppend(args);
    case 'hold':
      return runHold(args);
    case 'soak':
      return runSoak(args);
  }
}

function parsedArgs(): LoadArgs {
  try {
    return parseLoadArgs(process.argv[2], process.env.BENCH_LOAD_ARGS);
  } catch (error) {
    if (!(error instanceof LoadArgsError)) throw error;
    log(error.message);
    process.exit(2);
  }
}

run(parsedArgs()).then(
  (result) => {
    printLine(result);
    process.exit(0);
  },
  (error) => {
    log((error as Error).stack ?? String(error));
    process.exit(1);
  },
);
