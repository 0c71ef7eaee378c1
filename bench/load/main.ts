/**
 * The load process: `node --import tsx bench/load/main.ts <mode>` with its arguments as JSON in
 * BENCH_LOAD_ARGS. It runs apart from the server under test and the runner, talks to them over real
 * sockets only, prints progress on stderr and its result as one JSON line on stdout.
 *
 * Modes:
 * - `http`: autocannon POSTing GraphQL bodies (one per connection, cycled) for a duration; counts
 *   responses that are not 200 or carry `errors`.
 * - `raw-writes`: the write baseline, no server: the locked insert (BEGIN; SELECT … FOR UPDATE on the
 *   session; INSERT the message at the next position; UPDATE the session's counters; COMMIT) from
 *   `clients` concurrent loops through `pg` (pool of 10, as the server's) or PGlite.
 * - `fanout`: graphql-transport-ws subscribers (or raw relay sockets) in groups per session, a paced
 *   writer; per-delivery latency from the moment each write is sent, lost and duplicate deliveries.
 *   Several `sides` (the server's and the relay's) at once, their events taking turns.
 * - `stream`: watchers of one generating message per target (the server, the raw baseline, or
 *   both); one writer sends appendText updates back to back (updateMessage, or the raw server's
 *   update + publish) in blocks, the targets taking turns block by block; updates/s over the
 *   blocks, each timed until every watcher has its last update; beside it, the CPU per update of
 *   the process under test (read from /proc, the one thing this process learns other than over
 *   sockets) and of this process.
 * - `usage`: a reportUsage burst from `clients` concurrent clients to one turn, with turnEvents
 *   subscribers counting their deliveries.
 * - `append`: appends `total` messages in batches (setup for the memory scenario).
 * - `hold`: opens `count` subscribers, prints `{"ready":…}`, keeps them until stdin ends.
 * - `soak`: mixed load (readers, a paced writer, subscribers) for a duration.
 */
import { Agent, request as httpRequest } from 'node:http';
import { Worker } from 'node:worker_threads';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import WebSocket from 'ws';
import { cpuMsOf } from '../proc.js';

// biome-ignore lint/suspicious/noExplicitAny: arguments arrive as JSON
const args = JSON.parse(process.env.BENCH_LOAD_ARGS ?? '{}') as any;
const mode = process.argv[2];
const log = (message: string) => process.stderr.write(`    (load) ${message}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function quantile(samples: number[], q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = Float64Array.from(samples).sort();
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/**
 * Keep-alive connections for the load's GraphQL requests. `node:http` rather than `fetch`: on this
 * machine undici's `fetch` adds about 1 ms to the median of a paced request and 2-5 ms to its p99
 * (bare Yoga `{ hello }` at 20/s: 4.0 / 9-13 ms through `fetch`, 2.6-3.0 / 7.4-7.7 ms through
 * `node:http`), time that belongs to the client, not to the server it measures. The relay's writer
 * is as light (ioredis on one connection).
 */
const agent = new Agent({ keepAlive: true });

/** One POST over a kept-alive connection: the status and the body's text. */
function post(url: string, body: string): Promise<{ status: number; text: string }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

// biome-ignore lint/suspicious/noExplicitAny: GraphQL data read by path
async function gql(url: string, query: string, variables?: Record<string, unknown>): Promise<any> {
  const response = await post(url, JSON.stringify({ query, variables }));
  const { text } = response;
  let body: { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] };
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`HTTP ${response.status}: ${text.slice(0, 200)}`);
  }
  if (body.errors?.length || !body.data) {
    const error = new Error(`GraphQL error: ${JSON.stringify(body.errors ?? body).slice(0, 300)}`) as Error & { code?: string };
    error.code = body.errors?.[0]?.extensions?.code;
    throw error;
  }
  return body.data;
}

/**
 * The fan-out writer's POSTs, sent and timed on a thread of their own: this thread parses every
 * delivery to the load's sockets (thousands per event), and a response that arrives while it does
 * would wait behind them, time that belongs to the load, not to the server's answer to the writer.
 * The thread also runs at a raised priority (nice -10, that thread alone; kept at 0 where the OS
 * refuses): on two cores, the load's own socket reads otherwise hold the CPU the writer's thread
 * needs to send a request and read its answer.
 */
class WriterThread {
  private readonly worker = new Worker(
    `const { parentPort } = require('node:worker_threads');
    try { require('node:os').setPriority(-10); } catch {}
    const http = require('node:http');
    const agent = new http.Agent({ keepAlive: true });
    parentPort.on('message', ({ id, url, body }) => {
      const target = new URL(url);
      const started = performance.now();
      const done = (status, text) =>
        parentPort.postMessage({ id, status, text, ms: performance.now() - started, sentAt: performance.timeOrigin + started });
      const request = http.request(
        { host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (response) => {
          const chunks = [];
          response.on('data', (chunk) => chunks.push(chunk));
          response.on('end', () => done(response.statusCode, Buffer.concat(chunks).toString('utf8')));
          response.on('error', (error) => done(0, String(error)));
        },
      );
      request.on('error', (error) => done(0, String(error)));
      request.end(body);
    });`,
    { eval: true },
  );
  private readonly pending = new Map<number, (answer: WriterAnswer) => void>();
  private nextId = 0;
  /** Each call's time from its send to its response's end, on the writer's thread. */
  readonly latencies: number[] = [];

  constructor() {
    this.worker.on('message', (answer: WriterAnswer) => {
      this.pending.get(answer.id)?.(answer);
      this.pending.delete(answer.id);
    });
  }

  /**
   * A GraphQL call; throws on an HTTP or GraphQL error. Answers when the writer's thread sent it, on
   * this thread's clock (`performance.now()`): after the hand-over to that thread, not before it.
   */
  async gql(url: string, query: string, variables: Record<string, unknown>): Promise<number> {
    const id = this.nextId++;
    const answer = await new Promise<WriterAnswer>((resolve) => {
      this.pending.set(id, resolve);
      this.worker.postMessage({ id, url, body: JSON.stringify({ query, variables }) });
    });
    if (answer.status !== 200 || answer.text.includes('"errors"')) {
      throw new Error(`writer: HTTP ${answer.status}: ${answer.text.slice(0, 300)}`);
    }
    this.latencies.push(answer.ms);
    return answer.sentAt - performance.timeOrigin;
  }

  close() {
    void this.worker.terminate();
  }
}

/** A writer thread's answer: the HTTP status and body, the call's time, and when it was sent (ms since the epoch). */
interface WriterAnswer {
  id: number;
  status: number;
  text: string;
  ms: number;
  sentAt: number;
}

/** Runs `count` tasks with at most `concurrency` at once. */
async function pool(count: number, concurrency: number, task: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Subscribers

/** Receipts by key (`group:sequence`): receive times, one per socket; duplicates counted. */
class Receipts {
  readonly seen = new Map<string, number[]>();
  duplicates = 0;
  errors: string[] = [];
  private waiters: (() => void)[] = [];

  socket(): (key: string) => void {
    const mine = new Set<string>();
    return (key) => {
      const at = performance.now();
      if (mine.has(key)) {
        this.duplicates++;
        return;
      }
      mine.add(key);
      let times = this.seen.get(key);
      if (!times) this.seen.set(key, (times = []));
      times.push(at);
      if (this.waiters.length) for (const wake of this.waiters.splice(0)) wake();
    };
  }

  count(key: string) {
    return this.seen.get(key)?.length ?? 0;
  }

  /** Waits until each key has `want(key)` receipts, or the deadline passes. */
  async all(keys: string[], want: (key: string) => number, deadline: number) {
    while (keys.some((k) => this.count(k) < want(k)) && performance.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, Math.min(1_000, deadline - performance.now())));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}

interface Group {
  /** The session's global ID (server) or the relay channel (relay). */
  sessionId: string;
  channel?: string;
  after: number;
  subscribers: number;
}

/**
 * The load's sockets skip ws's UTF-8 check of each text message: they read only a sequence number
 * out of it, and the check is CPU the load would take from the processes it measures.
 */
const RECEIVER = { skipUTF8Validation: true } as const;

/** How every relay message starts (`{"sequence":N,…}`, bench/servers/raw.mjs). */
const RELAY_SEQUENCE = Buffer.from('{"sequence":');

/**
 * The integer right after `marker` in a raw message, or null when the marker is absent. The load
 * receives thousands of deliveries per event on the cores the processes it measures need: it finds
 * each one's sequence without decoding and parsing the whole message (`JSON.parse` stays for the
 * rest: acks, errors).
 */
function sequenceAfter(raw: Buffer, marker: Buffer): number | null {
  const at = raw.indexOf(marker);
  if (at < 0) return null;
  let value = 0;
  let i = at + marker.length;
  const start = i;
  for (; i < raw.length; i++) {
    const digit = raw[i] - 48;
    if (digit < 0 || digit > 9) break;
    value = value * 10 + digit;
  }
  return i > start ? value : null;
}

/** Opens graphql-transport-ws subscriptions (server) or relay sockets, round robin over `urls`. */
async function openSockets(options: {
  target: 'server' | 'relay';
  urls: string[];
  groups: Group[];
  subscription?: string;
  field?: string;
  receipts: Receipts;
  concurrency?: number;
}): Promise<WebSocket[]> {
  const plan: number[] = [];
  options.groups.forEach((g, gi) => {
    for (let i = 0; i < g.subscribers; i++) plan.push(gi);
  });
  const sockets: WebSocket[] = [];
  /** How a `next` message of the subscription's field starts its data (its first field is `sequence`). */
  const marker = Buffer.from(`"${options.field ?? 'sessionEvents'}":{"sequence":`);
  await pool(plan.length, options.concurrency ?? 50, async (i) => {
    const gi = plan[i];
    const group = options.groups[gi];
    const onKey = options.receipts.socket();
    const base = options.urls[i % options.urls.length].replace(/^http/, 'ws');
    if (options.target === 'relay') {
      const socket = new WebSocket(`${base}?channel=${encodeURIComponent(group.channel ?? group.sessionId)}`, RECEIVER);
      sockets.push(socket);
      socket.on('message', (raw: Buffer) => {
        const sequence = sequenceAfter(raw, RELAY_SEQUENCE) ?? (JSON.parse(String(raw)) as { sequence: number }).sequence;
        onKey(`${gi}:${sequence}`);
      });
      await new Promise((resolve, reject) => {
        socket.once('open', resolve);
        socket.once('error', reject);
      });
      return;
    }
    const socket = new WebSocket(base, 'graphql-transport-ws', RECEIVER);
    sockets.push(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: {} })));
      socket.on('message', (raw: Buffer) => {
        const known = sequenceAfter(raw, marker);
        if (known !== null) return onKey(`${gi}:${known}`);
        const message = JSON.parse(String(raw)) as {
          type: string;
          payload?: { data?: Record<string, { sequence: number } | undefined>; errors?: unknown };
        };
        if (message.type === 'connection_ack') {
          socket.send(
            JSON.stringify({
              id: '1',
              type: 'subscribe',
              payload: { query: options.subscription, variables: { id: group.sessionId, after: group.after } },
            }),
          );
          resolve();
        } else if (message.type === 'next') {
          const sequence = message.payload?.data?.[options.field ?? 'sessionEvents']?.sequence;
          if (typeof sequence === 'number') onKey(`${gi}:${sequence}`);
          else if (options.receipts.errors.length < 5) options.receipts.errors.push(JSON.stringify(message.payload).slice(0, 300));
        } else if (message.type === 'error') {
          if (options.receipts.errors.length < 5) options.receipts.errors.push(JSON.stringify(message.payload).slice(0, 300));
          reject(new Error(JSON.stringify(message.payload)));
        }
      });
    });
  });
  return sockets;
}

const SESSION_EVENTS = `subscription ($id: ID!, $after: Int) {
  sessionEvents(sessionId: $id, afterSequence: $after) {
    sequence __typename at
    ... on MessageAdded { index message { id role text tokenCount } }
    ... on MessageUpdated { appendText finished message { id generating } }
  }
}`;
const TURN_EVENTS = `subscription ($id: ID!, $after: Int) {
  turnEvents(sessionId: $id, afterSequence: $after) {
    sequence __typename at
    ... on TurnUsageUpdated { agentId callId model delta { inputTokens outputTokens cost } total { inputTokens outputTokens cost } }
  }
}`;
const APPEND = `mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { session { messageCount } } }`;
const REPORT_USAGE = `mutation ($input: ReportUsageInput!) { reportUsage(input: $input) { id } }`;
const UPDATE_MESSAGE = `mutation ($input: UpdateMessageInput!) { updateMessage(input: $input) { id } }`;
const FILLER = 'lorem ipsum '.repeat(8);

// ---------------------------------------------------------------------------------------------
// Modes

async function http() {
  const { url, connections, durationS, bodies } = args as { url: string; connections: number; durationS: number; bodies: string[] };
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

async function rawWrites() {
  const { databaseUrl, dataDir, sessions, clients, durationS } = args as {
    databaseUrl?: string;
    dataDir?: string;
    sessions: string[];
    clients: number;
    durationS: number;
  };
  const text = `raw ${FILLER}`;
  const parts = JSON.stringify([{ type: 'text', text }]);
  const LOCK = 'SELECT "messageCount" FROM "Session" WHERE id = $1 FOR UPDATE';
  const INSERT = `INSERT INTO "Message" (id, "sessionId", position, role, parts, text, "toolCallIds", "toolResultIds",
      generating, "tokensO200k", "tokensCl100k", "createdAt", "updatedAt")
    VALUES (gen_random_uuid()::text, $1, $2, 'ASSISTANT', $3::jsonb, $4, '{}', '{}', false, 20, 20, now(), now())`;
  const BUMP = `UPDATE "Session" SET "messageCount" = "messageCount" + 1, "eventSequence" = "eventSequence" + 1, "updatedAt" = now() WHERE id = $1`;
  type Q = (sql: string, params: unknown[]) => Promise<{ rows: { messageCount: number }[] }>;
  let transaction: (work: (q: Q) => Promise<void>) => Promise<void>;
  let close: () => Promise<void>;
  if (databaseUrl) {
    const { default: pg } = await import('pg');
    const pgPool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
    transaction = async (work) => {
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
    };
    close = () => pgPool.end();
  } else {
    const { PGlite } = await import('@electric-sql/pglite');
    const db = new PGlite(dataDir);
    await db.waitReady;
    transaction = (work) => db.transaction((tx) => work((sql, params) => tx.query(sql, params) as ReturnType<Q>));
    close = () => db.close();
  }
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
          await transaction(async (q) => {
            const { rows } = await q(LOCK, [sessionId]);
            await q(INSERT, [sessionId, rows[0].messageCount, parts, text]);
            await q(BUMP, [sessionId]);
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
  await close();
  return {
    rps: latencies.length / elapsed,
    total: latencies.length,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    failed: errors,
    firstErrors,
  };
}

/** One side of the `fanout` mode: the server's subscribers and writer, or the raw relay's. */
interface FanoutSide {
  target: 'server' | 'relay';
  urls: string[];
  groups: Group[];
  redisUrl?: string;
  relayPrefix?: string;
  payloadBytes?: number;
  /**
   * The durable relay's writer: the raw baseline's POST /event, which writes `messageId`'s row and
   * then publishes the event (instead of the load publishing it itself).
   */
  writer?: { url: string; messageId: string };
}

/** Opens one side's sockets; its `send` writes the next event of a group and returns the event's key. */
async function openFanoutSide(side: FanoutSide) {
  const { target, urls, groups, redisUrl, relayPrefix, payloadBytes, writer } = side;
  const receipts = new Receipts();
  const total = groups.reduce((n, g) => n + g.subscribers, 0);
  const opened = performance.now();
  const sockets = await openSockets({
    target,
    urls,
    groups,
    subscription: SESSION_EVENTS,
    receipts,
  });
  log(`${total} ${target} sockets open in ${((performance.now() - opened) / 1000).toFixed(1)} s`);
  const publisher = target === 'relay' && !writer ? new Redis(redisUrl ?? 'redis://127.0.0.1:6379') : null;
  const writerThread = target === 'server' ? new WriterThread() : null;
  const nextSequence = groups.map((g) => g.after + 1);
  /** Sends a group's next event; answers its key and, for the server's writer, when its thread sent it. */
  const send = async (gi: number): Promise<{ key: string; sentAt?: number }> => {
    const group = groups[gi];
    const sequence = nextSequence[gi]++;
    const key = `${gi}:${sequence}`;
    if (writer) {
      const body = JSON.stringify({
        id: writer.messageId,
        text: `event ${sequence} ${FILLER}`,
        channel: group.channel ?? group.sessionId,
        sequence,
      });
      const { status, text } = await post(writer.url, body);
      if (status !== 200) throw new Error(`durable relay writer answered ${status}: ${text.slice(0, 300)}`);
    } else if (publisher) {
      const message = JSON.stringify({
        sequence,
        type: 'MESSAGE_ADDED',
        at: new Date().toISOString(),
        text: 'x'.repeat(payloadBytes ?? 300),
      });
      await publisher.publish(`${relayPrefix}${group.channel ?? group.sessionId}`, message);
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
      for (const socket of sockets) socket.terminate();
      publisher?.disconnect();
      writerThread?.close();
    },
  };
}

/**
 * Paced events to subscribers, from the moment each is sent to each socket's receipt. With several
 * `sides` (the server and the raw relay), their events take turns at even offsets within each
 * interval, each side at the full pace: both are measured over the same seconds of the machine.
 * Answers each side's figures, in order.
 */
async function fanout() {
  const {
    sides: given,
    events,
    intervalMs,
    deadlineMs,
  } = args as {
    sides: FanoutSide[];
    events: number;
    intervalMs: number;
    deadlineMs?: number;
  };
  const sides: Awaited<ReturnType<typeof openFanoutSide>>[] = [];
  const deadline = () => performance.now() + (deadlineMs ?? 60_000);
  try {
    for (const side of given) sides.push(await openFanoutSide(side));
    // A warm-up event per group that every socket must see: from then on each subscription is live.
    for (const side of sides) {
      const warm: string[] = [];
      await pool(side.groups.length, 10, async (gi) => void warm.push((await side.send(gi)).key));
      await side.receipts.all(warm, side.want, deadline());
      const warmed = warm.reduce((n, k) => n + side.receipts.count(k), 0);
      if (warmed < side.total)
        throw new Error(`only ${warmed} of ${side.total} sockets got the warm-up event; ${side.receipts.errors.join('; ')}`);
    }
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
    const figures = [];
    for (const side of sides) {
      const { receipts, sentAt, want } = side;
      await receipts.all([...sentAt.keys()], want, deadline());
      const latencies: number[] = [];
      let expected = 0;
      for (const [key, at] of sentAt) {
        expected += want(key);
        for (const received of receipts.seen.get(key) ?? []) latencies.push(received - at);
      }
      figures.push({
        median: quantile(latencies, 0.5),
        p99: quantile(latencies, 0.99),
        delivered: latencies.length,
        expected,
        lost: expected - latencies.length,
        duplicates: receipts.duplicates,
        errors: receipts.errors,
        writer: side.writerLatencies
          ? { median: quantile(side.writerLatencies, 0.5), p99: quantile(side.writerLatencies, 0.99) }
          : undefined,
        perEvent: process.env.BENCH_PER_EVENT
          ? [...sentAt].map(([key, at]) => Math.max(...(receipts.seen.get(key) ?? [Number.NaN])) - at)
          : undefined,
      });
    }
    return figures;
  } finally {
    for (const side of sides) side.close();
  }
}

/** `{ hello }` requests one at a time at the fan-out writer's pace: what one HTTP request costs then. */
async function paced() {
  const { url, count, intervalMs } = args as { url: string; count: number; intervalMs: number };
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

/** One process under test in the `stream` mode: the server's updateMessage, or the raw baseline's update + publish. */
interface StreamTarget {
  target: 'server' | 'raw';
  /** The process under test, whose CPU per update is read from /proc. */
  pid: number;
  url: string;
  wsUrl: string;
  sessionId: string;
  messageId?: string;
  after: number;
  rawMessageId?: string;
  channel?: string;
}

async function stream() {
  const { targets, watchers, blocks, block } = args as { targets: StreamTarget[]; watchers: number; blocks: number; block: number };
  const runs = [];
  for (const t of targets) {
    const receipts = new Receipts();
    const sockets = await openSockets({
      target: t.target === 'raw' ? 'relay' : 'server',
      urls: [t.wsUrl],
      groups: [{ sessionId: t.sessionId, channel: t.channel, after: t.after, subscribers: watchers }],
      subscription: SESSION_EVENTS,
      receipts,
    });
    runs.push({
      t,
      receipts,
      sockets,
      sequence: t.after,
      sentAt: new Map<string, number>(),
      roundTrips: [] as number[],
      /** Time from each block's first update to its last delivery, CPU of the target and of this process, summed over the blocks. */
      elapsedMs: 0,
      targetCpuMs: 0,
      loadCpuMs: 0,
    });
  }
  type Run = (typeof runs)[number];
  const update = async (run: Run) => {
    const { t } = run;
    run.sequence++;
    if (t.target === 'raw') {
      const response = await post(
        t.url,
        JSON.stringify({ id: t.rawMessageId, text: ' token', channel: t.channel, sequence: run.sequence }),
      );
      if (response.status !== 200) throw new Error(`raw update: HTTP ${response.status} ${response.text}`);
    } else {
      await gql(t.url, UPDATE_MESSAGE, { input: { messageId: t.messageId, appendText: ' token' } });
    }
    return `0:${run.sequence}`;
  };
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
    for (const run of runs) for (const socket of run.sockets) socket.terminate();
  }
}

async function usage() {
  const { url, sessionId, turnId, after, clients, calls, subscribers } = args as {
    url: string;
    sessionId: string;
    turnId: string;
    after: number;
    clients: number;
    calls: number;
    subscribers: number;
  };
  const receipts = new Receipts();
  const sockets = await openSockets({
    target: 'server',
    urls: [url],
    groups: [{ sessionId, after, subscribers }],
    subscription: TURN_EVENTS,
    field: 'turnEvents',
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
        const code = (error as { code?: string }).code ?? 'other';
        codes[code] = (codes[code] ?? 0) + 1;
        if (firstErrors.length < 3) firstErrors.push((error as Error).message);
      }
      latencies.push(performance.now() - t);
    });
    const elapsed = (performance.now() - started) / 1000;
    // Every successful call is one TurnUsageUpdated event, sequences after+1 … after+ok.
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
    for (const socket of sockets) socket.terminate();
  }
}

async function append() {
  const { url, sessionIds, total, batch, clients } = args as {
    url: string;
    sessionIds: string[];
    total: number;
    batch: number;
    clients: number;
  };
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

async function hold() {
  const { urls, sessionId, count } = args as { urls: string[]; sessionId: string; count: number };
  const receipts = new Receipts();
  const sockets = await openSockets({
    target: 'server',
    urls,
    groups: [{ sessionId, after: 0, subscribers: count }],
    subscription: SESSION_EVENTS,
    receipts,
  });
  // Let the server settle what the subscribe messages started.
  await sleep(1_000);
  process.stdout.write(`${JSON.stringify({ ready: true, opened: sockets.length })}\n`);
  await new Promise<void>((resolve) => {
    process.stdin.on('data', () => {});
    process.stdin.on('end', resolve);
    process.stdin.on('close', resolve);
  });
  for (const socket of sockets) socket.terminate();
  return { closed: sockets.length, errors: receipts.errors };
}

async function soak() {
  const { url, sessionIds, readBody, durationS, readers, subscribers, writesPerSecond } = args as {
    url: string;
    sessionIds: string[];
    readBody: string;
    durationS: number;
    readers: number;
    subscribers: number;
    writesPerSecond: number;
  };
  const receipts = new Receipts();
  const sockets = await openSockets({
    target: 'server',
    urls: [url],
    groups: sessionIds.map((sessionId) => ({ sessionId, after: 0, subscribers: Math.ceil(subscribers / sessionIds.length) })),
    subscription: SESSION_EVENTS,
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
  for (const socket of sockets) socket.terminate();
  const perSession = Math.ceil(subscribers / sessionIds.length);
  return { reads, writes, failed, delivered, expected: writes * perSession, lost: writes * perSession - delivered };
}

const modes: Record<string, () => Promise<unknown>> = { http, 'raw-writes': rawWrites, fanout, paced, stream, usage, append, hold, soak };
const run = modes[mode];
if (!run) {
  log(`unknown mode ${mode}; known: ${Object.keys(modes).join(', ')}`);
  process.exit(2);
}
run().then(
  (result) => {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    process.exit(0);
  },
  (error) => {
    log((error as Error).stack ?? String(error));
    process.exit(1);
  },
);
