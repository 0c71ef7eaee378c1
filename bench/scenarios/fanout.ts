/**
 * Scenario `fanout`: live delivery of session events to many graphql-ws subscribers over real
 * sockets, against a raw Redis relay (a bare `ws` server forwarding one Redis channel to the same
 * number of sockets) in the same run.
 *
 * - `two.*`: 100 subscribers split over two server instances sharing the database and Redis, the
 *   writer on the first (only when Redis answers; on PGlite both instances share one database
 *   in process).
 * - `one.*`: 1,000 subscribers of one session on one instance (Redis when it answers).
 * - `turns.*`: 100 `turnEvents` subscribers of one session over the two instances, the writer on
 *   the first calling reportUsage (each call a TurnUsageUpdated event) on the session's active turn.
 *
 * A writer appends one message every 50 ms (20 events/s); latency is measured from the moment the
 * mutation's response arrives to each socket's receipt (0 when the event beat the response),
 * then median and p99 over every delivery; lost = expected deliveries not seen within the
 * deadline; duplicates = deliveries seen more than once. The load runs in this process.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import WebSocket, { WebSocketServer } from 'ws';
import { buildApp, type App } from '../../src/app.js';
import { median, quantile, round, type BenchContext, type Row, type Scenario } from '../lib.js';

const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const EVENTS = 40;
const INTERVAL_MS = 50;
const DEADLINE_MS = 60_000;
const CONNECT_CONCURRENCY = 50;

const SUBSCRIPTION = `subscription ($id: ID!, $after: Int) {
  sessionEvents(sessionId: $id, afterSequence: $after) {
    sequence __typename at
    ... on MessageAdded { index message { id role text tokenCount } }
  }
}`;
const CREATE = `mutation { createSession(input: { title: "fan-out" }) { id } }`;
const APPEND = `mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { session { messageCount } } }`;
const TURN_SUBSCRIPTION = `subscription ($id: ID!, $after: Int) {
  turnEvents(sessionId: $id, afterSequence: $after) {
    sequence __typename at
    ... on TurnUsageUpdated { agentId callId model delta { inputTokens outputTokens cost } total { inputTokens outputTokens cost } }
  }
}`;
const START_TURN = `mutation ($input: StartTurnInput!) { startTurn(input: $input) { id } }`;
const REPORT_USAGE = `mutation ($input: ReportUsageInput!) { reportUsage(input: $input) { id } }`;

type Post = <T>(query: string, variables?: Record<string, unknown>) => Promise<T>;

/**
 * What the subscribers watch and what the writer does: after `setup`, the session's log is at
 * `after` (subscribers start there), and each `write` adds exactly one event the stream delivers.
 */
interface Workload {
  subscription: string;
  field: 'sessionEvents' | 'turnEvents';
  setup(post: Post): Promise<{ sessionId: string; after: number; write(label: string): Promise<unknown> }>;
}

const SESSION_EVENTS: Workload = {
  subscription: SUBSCRIPTION,
  field: 'sessionEvents',
  async setup(post) {
    const { createSession } = await post<{ createSession: { id: string } }>(CREATE);
    const sessionId = createSession.id;
    return {
      sessionId,
      after: 0,
      write: (label) =>
        post(APPEND, { input: { sessionId, messages: [{ role: 'ASSISTANT', text: `${label} ${'lorem ipsum '.repeat(8)}` }] } }),
    };
  },
};

const TURN_EVENTS: Workload = {
  subscription: TURN_SUBSCRIPTION,
  field: 'turnEvents',
  async setup(post) {
    const { createSession } = await post<{ createSession: { id: string } }>(CREATE);
    const sessionId = createSession.id;
    // TurnStarted is the session's event 1.
    const { startTurn } = await post<{ startTurn: { id: string } }>(START_TURN, { input: { sessionId, agentIds: ['bench-agent'] } });
    let call = 0;
    return {
      sessionId,
      after: 1,
      write: () =>
        post(REPORT_USAGE, {
          input: {
            turnId: startTurn.id,
            agentId: 'bench-agent',
            callId: `call-${++call}`,
            model: 'bench-model',
            inputTokens: 1200,
            outputTokens: 300,
            cost: 0.0042,
          },
        }),
    };
  },
};

/** Receipts of one run: per sequence, the receive times of every socket. */
class Receipts {
  readonly seen = new Map<number, number[]>();
  duplicates = 0;
  private readonly perSocket: Set<number>[] = [];
  private waiters: (() => void)[] = [];

  socket(): (sequence: number) => void {
    const mine = new Set<number>();
    this.perSocket.push(mine);
    return (sequence) => {
      const at = performance.now();
      if (mine.has(sequence)) {
        this.duplicates++;
        return;
      }
      mine.add(sequence);
      let times = this.seen.get(sequence);
      if (!times) this.seen.set(sequence, (times = []));
      times.push(at);
      for (const wake of this.waiters.splice(0)) wake();
    };
  }

  count(sequence: number) {
    return this.seen.get(sequence)?.length ?? 0;
  }

  /** Waits until every socket has `sequence`, or the deadline passes. */
  async all(sequences: number[], deadline: number) {
    const want = this.perSocket.length;
    while (sequences.some((s) => this.count(s) < want) && performance.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, deadline - performance.now()));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}

/** Opens `count` raw graphql-transport-ws sockets to `urls` (round robin) and subscribes each. */
async function openSubscribers(urls: string[], count: number, workload: Workload, sessionId: string, after: number, receipts: Receipts) {
  const sockets: WebSocket[] = [];
  let next = 0;
  const openOne = async (i: number) => {
    const onSequence = receipts.socket();
    const socket = new WebSocket(urls[i % urls.length].replace(/^http/, 'ws'), 'graphql-transport-ws');
    sockets.push(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: {} })));
      socket.on('message', (raw) => {
        const message = JSON.parse(String(raw)) as {
          type: string;
          payload?: { data?: Record<string, { sequence: number } | undefined>; errors?: unknown };
        };
        if (message.type === 'connection_ack') {
          socket.send(
            JSON.stringify({ id: '1', type: 'subscribe', payload: { query: workload.subscription, variables: { id: sessionId, after } } }),
          );
          resolve();
        } else if (message.type === 'next') {
          const sequence = message.payload?.data?.[workload.field]?.sequence;
          if (typeof sequence === 'number') onSequence(sequence);
          else reject(new Error(`unexpected payload ${JSON.stringify(message.payload)}`));
        } else if (message.type === 'error') {
          reject(new Error(JSON.stringify(message.payload)));
        }
      });
    });
  };
  const workers = Array.from({ length: Math.min(CONNECT_CONCURRENCY, count) }, async () => {
    while (next < count) await openOne(next++);
  });
  await Promise.all(workers);
  return sockets;
}

/** A raw relay: every message on the Redis channel goes to every socket as is. */
async function startRelay(channel: string) {
  const subscriber = new Redis(REDIS_URL, { lazyConnect: true });
  await subscriber.connect();
  const server: Server = createServer();
  const wss = new WebSocketServer({ server });
  await subscriber.subscribe(channel);
  subscriber.on('message', (_channel, message) => {
    for (const client of wss.clients) client.send(message);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    async close() {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
      subscriber.disconnect();
    },
  };
}

interface Figures {
  median: number;
  p99: number;
  lost: number;
  duplicates: number;
}

function figures(receipts: Receipts, sentAt: Map<number, number>, sockets: number): Figures {
  const latencies: number[] = [];
  let delivered = 0;
  for (const [sequence, at] of sentAt) {
    for (const received of receipts.seen.get(sequence) ?? []) {
      latencies.push(Math.max(0, received - at));
      delivered++;
    }
  }
  return {
    median: median(latencies),
    p99: quantile(latencies, 0.99),
    lost: sentAt.size * sockets - delivered,
    duplicates: receipts.duplicates,
  };
}

async function paced(count: number, send: (i: number) => Promise<void>) {
  const started = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const due = started + i * INTERVAL_MS;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    // Sequential writes keep the sequence of each append known (1 + i after the warm-up).
    pending.push(send(i));
    await pending[pending.length - 1];
  }
  await Promise.all(pending);
}

/** Fan-out through the server: subscribers on `apps` (round robin), the writer on `apps[0]`. */
async function throughServer(
  ctx: BenchContext,
  apps: App[],
  urls: string[],
  subscribers: number,
  workload = SESSION_EVENTS,
): Promise<Figures> {
  const post: Post = async <T>(query: string, variables?: Record<string, unknown>) => {
    const response = await fetch(urls[0], {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await response.json()) as { data?: T; errors?: unknown };
    if (!body.data) throw new Error(`GraphQL error: ${JSON.stringify(body.errors)}`);
    return body.data;
  };
  const { sessionId, after, write } = await workload.setup(post);
  const receipts = new Receipts();
  const sockets = await openSubscribers(urls, subscribers, workload, sessionId, after, receipts);
  try {
    // A warm-up event every socket must see: from then on each subscription is live.
    await write('warm-up');
    await receipts.all([after + 1], performance.now() + DEADLINE_MS);
    if (receipts.count(after + 1) < subscribers) {
      throw new Error(`only ${receipts.count(after + 1)} of ${subscribers} subscribers got the warm-up event`);
    }
    const sentAt = new Map<number, number>();
    await paced(EVENTS, async (i) => {
      await write(`event ${i}`);
      sentAt.set(after + 2 + i, performance.now());
    });
    await receipts.all([...sentAt.keys()], performance.now() + DEADLINE_MS);
    return figures(receipts, sentAt, subscribers);
  } finally {
    for (const socket of sockets) socket.terminate();
    void apps;
    ctx.collectGarbage();
  }
}

async function throughRelay(ctx: BenchContext, relays: number, subscribers: number): Promise<Figures> {
  const channel = `sgbench:relay:${process.pid}:${Date.now()}`;
  const servers = await Promise.all(Array.from({ length: relays }, () => startRelay(channel)));
  const publisher = new Redis(REDIS_URL);
  const receipts = new Receipts();
  const sockets: WebSocket[] = [];
  try {
    let next = 0;
    const openOne = async (i: number) => {
      const onSequence = receipts.socket();
      const socket = new WebSocket(servers[i % servers.length].url);
      sockets.push(socket);
      socket.on('message', (raw) => onSequence((JSON.parse(String(raw)) as { sequence: number }).sequence));
      await new Promise((resolve, reject) => {
        socket.once('open', resolve);
        socket.once('error', reject);
      });
    };
    await Promise.all(
      Array.from({ length: Math.min(CONNECT_CONCURRENCY, subscribers) }, async () => {
        while (next < subscribers) await openOne(next++);
      }),
    );
    // The same payload size as the server's event, so the socket writes cost the same.
    const payload = (sequence: number) =>
      JSON.stringify({
        sequence,
        type: 'MESSAGE_ADDED',
        at: new Date().toISOString(),
        text: `event ${sequence} ${'lorem ipsum '.repeat(8)}`,
      });
    await publisher.publish(channel, payload(1));
    await receipts.all([1], performance.now() + DEADLINE_MS);
    const sentAt = new Map<number, number>();
    await paced(EVENTS, async (i) => {
      await publisher.publish(channel, payload(2 + i));
      sentAt.set(2 + i, performance.now());
    });
    await receipts.all([...sentAt.keys()], performance.now() + DEADLINE_MS);
    return figures(receipts, sentAt, subscribers);
  } finally {
    for (const socket of sockets) socket.terminate();
    publisher.disconnect();
    await Promise.all(servers.map((s) => s.close()));
    ctx.collectGarbage();
  }
}

async function redisAnswers(): Promise<boolean> {
  const client = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000 });
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** Instances of the app on Redis, sharing `ctx.app`'s database (its close stays with ctx.app). */
async function redisInstances(ctx: BenchContext, count: number): Promise<App[]> {
  const base = ctx.app.runtime.config;
  const shared = Object.create(ctx.app.runtime.db, { close: { value: async () => {} } });
  const apps: App[] = [];
  for (let i = 0; i < count; i++) {
    apps.push(await buildApp({ ...base, redisUrl: REDIS_URL, redisPrefix: `${base.redisPrefix}fanout:` }, { database: shared }));
  }
  return apps;
}

function rows(prefix: string, label: string, server: Figures, relay: Figures): Row[] {
  return [
    { metric: `${prefix}.median`, value: round(server.median, 2), unit: 'ms', note: label },
    { metric: `${prefix}.p99`, value: round(server.p99, 2), unit: 'ms' },
    { metric: `${prefix}.lost`, value: server.lost, unit: 'deliveries', target: { op: '<=', value: 0 } },
    { metric: `${prefix}.duplicates`, value: server.duplicates, unit: 'deliveries', target: { op: '<=', value: 0 } },
    { metric: `${prefix}.relay.median`, value: round(relay.median, 2), unit: 'ms', note: 'raw Redis relay, same sockets' },
    { metric: `${prefix}.relay.p99`, value: round(relay.p99, 2), unit: 'ms' },
    {
      metric: `${prefix}.p99_vs_relay`,
      value: round(server.p99 / Math.max(relay.p99, 0.001), 2),
      unit: 'ratio',
      target: { op: '<=', value: 2 },
      note: 'server p99 / relay p99',
    },
  ];
}

const fanout: Scenario = {
  name: 'fanout',
  description: `live delivery of ${EVENTS} events at 20/s to 100 subscribers over two instances (session events, then turn events from reportUsage) and 1,000 of one session, vs a raw Redis relay`,
  async run(ctx) {
    const out: Row[] = [];
    if (!(await redisAnswers())) {
      ctx.log(`Redis at ${REDIS_URL} does not answer: fan-out needs it for the relay baseline; skipped`);
      return out;
    }
    // FANOUT_CASES=two, =turns or =one (or a comma list) runs only those cases (for comparing runs quickly).
    const cases = (process.env.FANOUT_CASES ?? 'two,turns,one').split(',');
    const apps = await redisInstances(ctx, 2);
    try {
      const urls = await Promise.all(apps.map((a) => a.listen(0, '127.0.0.1')));
      if (cases.includes('two')) {
        ctx.log('100 subscribers over two instances…');
        // One unmeasured round first: the first events through a fresh process pay for JIT warm-up.
        await throughServer(ctx, apps, urls, 100);
        const two = await throughServer(ctx, apps, urls, 100);
        const twoRelay = await throughRelay(ctx, 2, 100);
        out.push(...rows('two.100', '100 subscribers, two instances over Redis, writer on the first', two, twoRelay));
        ctx.log(
          `  server p50 ${two.median.toFixed(1)} ms p99 ${two.p99.toFixed(1)} ms lost ${two.lost}; relay p99 ${twoRelay.p99.toFixed(1)} ms`,
        );
      }
      if (cases.includes('turns')) {
        ctx.log('100 turnEvents subscribers over two instances, reportUsage on the first…');
        await throughServer(ctx, apps, urls, 100, TURN_EVENTS);
        const turns = await throughServer(ctx, apps, urls, 100, TURN_EVENTS);
        const turnsRelay = await throughRelay(ctx, 2, 100);
        out.push(...rows('turns.100', '100 turnEvents subscribers, two instances over Redis, reportUsage on the first', turns, turnsRelay));
        ctx.log(
          `  server p50 ${turns.median.toFixed(1)} ms p99 ${turns.p99.toFixed(1)} ms lost ${turns.lost} dup ${turns.duplicates}; relay p99 ${turnsRelay.p99.toFixed(1)} ms`,
        );
      }
      if (cases.includes('one')) {
        ctx.log('1,000 subscribers of one session on one instance…');
        const one = await throughServer(ctx, apps, urls.slice(0, 1), 1_000);
        const oneRelay = await throughRelay(ctx, 1, 1_000);
        out.push(...rows('one.1000', '1,000 subscribers of one session, one instance over Redis', one, oneRelay));
        ctx.log(
          `  server p50 ${one.median.toFixed(1)} ms p99 ${one.p99.toFixed(1)} ms lost ${one.lost}; relay p99 ${oneRelay.p99.toFixed(1)} ms`,
        );
      }
    } finally {
      for (const app of apps) await app.close();
    }
    return out;
  },
};

export default fanout;
