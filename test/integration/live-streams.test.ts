import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventBus } from '../../src/pubsub/event-bus.js';
import type { SessionEventMessage } from '../../src/pubsub/bus.js';
import { appendEvents } from '../../src/db/stores/events.js';
import { SNAPSHOT_MAX_CHARS } from '../../src/db/session-events.js';
import { publishAll } from '../../src/services/event-log.js';
import { filterEvents } from '../../src/services/event-filter.js';
import { SESSION_DELETED, type SessionEventStream, sessionEventStream } from '../../src/services/event-stream.js';
import { createLogger } from '../../src/logger.js';
import { loadRedis } from '../../src/pubsub/redis-connection.js';
import {
  API_KEYS,
  backend,
  createTestApp,
  dropTestDatabases,
  gqlOk,
  rawIdOf,
  type TestApp,
  testDeviations,
  useTestApp,
} from '../helpers/app.js';
import { AppendMessages, CreateSession, UpdateMessage } from '../helpers/documents.js';
import { PrivateRedis } from '../helpers/private-redis.js';
import { subscribeWs, wsClient } from '../helpers/subscriptions.js';

const EVENTS = `
  subscription Events($id: ID!, $after: Int) {
    sessionEvents(sessionId: $id, afterSequence: $after) {
      __typename
      sequence
      ... on MessageAdded { index message { id text } }
      ... on MessageUpdated { appendText finished }
    }
  }`;

type Ev = { __typename: string; sequence: number; message?: { text: string }; appendText?: string | null };
const pick = (data: Record<string, unknown>) => data.sessionEvents as Ev;
const auth = { apiKey: API_KEYS.alpha };
const keys = [{ workspace: 'alpha', key: API_KEYS.alpha }];
const wsAuth = { Authorization: `Bearer ${API_KEYS.alpha}` };
const MESSAGE_FIELDS =
  'id index role text generating tokenCount agentId createdAt updatedAt parts { __typename ... on TextPart { text } ... on ToolCallPart { callId name arguments } }';
type FullMessage = Record<string, unknown>;
type FullEv = { sequence: number; message?: FullMessage };
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Waits until `check` holds, looking again after each event-loop tick of its timer. */
async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Waits until Redis has the app's SUBSCRIBE for a session (`backend.redisUrl`), then for the log
 * read its confirmation starts in each stream (one statement) to be over.
 */
async function channelSynced(app: TestApp, id: string) {
  const inspect = new (loadRedis())(backend.redisUrl!);
  try {
    const channel = `${app.redisPrefix}session-events:${rawIdOf(id)}`;
    await eventually(async () => ((await inspect.pubsub('NUMSUB', channel)) as [string, number])[1] >= 1, 'the SUBSCRIBE');
    await new Promise((resolve) => setTimeout(resolve, 250));
  } finally {
    inspect.disconnect();
  }
}

/** Waits until the app's bus answers (after a private Redis started or restarted). */
function redisReady(app: TestApp) {
  return eventually(
    () =>
      app.runtime.bus.ping().then(
        () => true,
        () => false,
      ),
    'Redis to be ready',
  );
}

/** Whether reads are kept until the next write (PGlite: this process is the database's only writer). */
const keepsReads = (app: TestApp) => app.runtime.db.sql.writes() !== null;

/**
 * A stream read through once, on a session of its own: PGlite makes each named statement's
 * function on its first call, which counts as a write (and so keeps nothing of that first read).
 */
async function warmStreamReads(app: TestApp) {
  const stream = sessionEventStream(
    { sql: app.runtime.db.sql.reads, bus: app.runtime.bus, shared: app.runtime.sharedReads },
    rawIdOf(await newSession(app, 'warm')),
    0,
  );
  await stream.next();
  await stream.return();
}

async function newSession(app: TestApp, title = 'live') {
  const data = await gqlOk(app, CreateSession, { input: { title, messages: [{ role: 'USER', text: 'first' }] } }, auth);
  return data.createSession.id;
}

async function append(app: TestApp, id: string, text: string) {
  await gqlOk(app, AppendMessages, { input: { sessionId: id, messages: [{ role: 'USER', text }] } }, auth);
}

describe(`live streams on a private Redis that crashes (${backend.label.split('+')[0]})`, () => {
  let redis: PrivateRedis;
  let app: TestApp;
  let url: string;

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    app = await createTestApp({ apiKeys: keys, redisUrl: redis.url });
    url = await app.listen(0, '127.0.0.1');
  });

  afterAll(async () => {
    await app?.close();
    await redis?.kill();
    await dropTestDatabases();
  });

  it("keeps a graphql-ws subscriber whole across a Redis SIGKILL and restart: its own instance's events go on arriving, another's come from the log once Redis is back, every event once, in order, without resubscribing", async () => {
    const id = await newSession(app);
    const client = wsClient(url, wsAuth);
    const sub = subscribeWs(client, EVENTS, { id, after: 1 }, pick);
    await append(app, id, 'before 1');
    await append(app, id, 'before 2');
    await sub.collector.until((e) => e.length >= 2, 10_000, 'the events before the crash');

    await redis.kill();
    // Mutations do not fail while Redis is down, readiness says so at once, and this instance's
    // own events reach its subscribers without Redis.
    await append(app, id, 'during 1');
    await append(app, id, 'during 2');
    await expect(app.runtime.bus.ping()).rejects.toThrow();
    const during = await sub.collector.until((e) => e.length >= 4, 10_000, "this instance's events during the outage");
    expect(during.map((e) => e.message?.text)).toEqual(['before 1', 'before 2', 'during 1', 'during 2']);
    // Another instance's event, whose publish is lost in the outage: written to the log only.
    await appendEvents(app.runtime.db.sql, rawIdOf(id), [{ type: 'SESSION_UPDATED', payload: { fields: ['title'] } }]);

    await redis.restart();
    // Once the server's connection is back, the stream fills what it missed from the log.
    const afterRestart = await sub.collector.until((e) => e.length >= 5, 20_000, "the other instance's event from the log");
    expect(afterRestart.map((e) => [e.sequence, e.__typename])).toEqual([
      [2, 'MessageAdded'],
      [3, 'MessageAdded'],
      [4, 'MessageAdded'],
      [5, 'MessageAdded'],
      [6, 'SessionUpdated'],
    ]);
    await redisReady(app);
    await append(app, id, 'after 1');
    await append(app, id, 'after 2');
    const all = await sub.collector.until((e) => e.length >= 7, 10_000, 'the events after the restart');
    expect(all.map((e) => e.sequence)).toEqual(range(2, 8));
    expect(all.map((e) => e.message?.text).slice(5)).toEqual(['after 1', 'after 2']);
    // Nothing arrives twice: one more event lands right after the last one.
    await append(app, id, 'after 3');
    expect((await sub.collector.until((e) => e.length >= 8)).map((e) => e.sequence)).toEqual(range(2, 9));
    sub.unsubscribe();
    await client.dispose();
  });

  it("hands an instance's own events to its listeners without the Redis round trip and skips Redis's copy; another instance hears each event once", async () => {
    await redisReady(app);
    const logger = createLogger('silent');
    const prefix = `own-events-${process.pid}:`;
    const own = createEventBus({ redisUrl: redis.url, prefix, logger });
    const other = createEventBus({ redisUrl: redis.url, prefix, logger });
    const heard = { own: [] as SessionEventMessage[], other: [] as SessionEventMessage[] };
    const synced = { own: 0, other: 0 };
    for (const [name, bus] of [
      ['own', own],
      ['other', other],
    ] as const) {
      bus.subscribe('s1', { event: (event) => heard[name].push(event), sync: () => synced[name]++ });
    }
    try {
      await eventually(() => synced.own > 0 && synced.other > 0, 'both SUBSCRIBEs to be confirmed');
      const event = (sequence: number): SessionEventMessage => ({
        id: `e${sequence}`,
        sessionId: 's1',
        sequence,
        type: 'SESSION_UPDATED',
        turnId: null,
        messageId: null,
        payload: { fields: ['title'] },
        createdAt: new Date().toISOString(),
      });
      const first = event(1);
      own.publish(first);
      // A session of few local listeners hears its instance's event inside the publish.
      expect(
        heard.own.map((e) => e.id),
        'inside the publish, without waiting for Redis',
      ).toEqual(['e1']);
      await eventually(() => heard.other.length === 1, 'the other instance to hear it');
      // Redis keeps a channel's order: once the own bus hears the other's next event, Redis's
      // copy of its own has come and gone.
      other.publish(event(2));
      await eventually(() => heard.own.length >= 2, "the other instance's event");
      expect(heard.own.map((e) => e.id)).toEqual(['e1', 'e2']);
      expect(heard.other.map((e) => e.id)).toEqual(['e1', 'e2']);
      expect(heard.other[0]).toMatchObject(first);
    } finally {
      await own.close();
      await other.close();
    }
  });

  it('replays stored events at once to a subscription opened while Redis is down, then goes live when it is back', async () => {
    const id = await newSession(app);
    await append(app, id, 'stored');
    await redis.kill();
    await append(app, id, 'written in the outage');
    const client = wsClient(url, wsAuth);
    const sub = subscribeWs(client, EVENTS, { id, after: 0 }, pick);
    const replayed = await sub.collector.until((e) => e.length >= 3, 10_000, 'the replay during the outage');
    expect(replayed.map((e) => e.message?.text)).toEqual(['first', 'stored', 'written in the outage']);

    await redis.restart();
    await eventually(
      async () =>
        app.runtime.bus.ping().then(
          () => true,
          () => false,
        ),
      'Redis to be ready again',
    );
    await append(app, id, 'live again');
    const all = await sub.collector.until((e) => e.length >= 4, 10_000, 'the first live event after the outage');
    expect(all.map((e) => e.sequence)).toEqual([1, 2, 3, 4]);
    sub.unsubscribe();
    await client.dispose();
  });

  it('holds one Redis channel per session however many local subscribers, and releases it when the last one leaves (20 cycles leave none)', async () => {
    await redisReady(app);
    const inspect = redis.client();
    const channels = () => inspect.pubsub('CHANNELS', `${app.redisPrefix}*`) as Promise<string[]>;
    try {
      const id = await newSession(app);
      const client = wsClient(url, wsAuth);
      const many = Array.from({ length: 5 }, () => subscribeWs(client, EVENTS, { id, after: 0 }, pick));
      for (const sub of many) await sub.collector.until((e) => e.length >= 1);
      await eventually(async () => (await channels()).length === 1, 'one channel for five subscribers');
      expect(app.runtime.bus.stats()).toEqual({ channels: 1, listeners: 5 });
      const [channel] = await channels();
      expect(await inspect.pubsub('NUMSUB', channel)).toEqual([channel, 1]);
      for (const sub of many) sub.unsubscribe();

      for (let cycle = 0; cycle < 20; cycle++) {
        const sub = subscribeWs(client, EVENTS, { id, after: 0 }, pick);
        await sub.collector.until((e) => e.length >= 1);
        sub.unsubscribe();
      }
      // Released when the client leaves, not at the session's next event (none comes).
      await eventually(() => app.runtime.bus.stats().listeners === 0, 'local listeners to be released');
      expect(app.runtime.bus.stats()).toEqual({ channels: 0, listeners: 0 });
      await eventually(async () => (await channels()).length === 0, 'Redis channels to be released');
      expect(await inspect.pubsub('NUMSUB', channel)).toEqual([channel, 0]);
      await client.dispose();
    } finally {
      inspect.disconnect();
    }
  });

  it('recovers many streams of one session after a Redis restart with one counter read and one log read, not one per stream', async () => {
    await redisReady(app);
    const id = await newSession(app);
    const streams = Array.from({ length: 10 }, () =>
      sessionEventStream({ sql: app.runtime.db.sql, bus: app.runtime.bus, shared: app.runtime.sharedReads }, rawIdOf(id), 0),
    );
    for (const stream of streams) expect((await stream.next()).value).toMatchObject({ sequence: 1 });
    const pending = streams.map((stream) => stream.next());
    await redis.kill();
    // Two events of another instance, whose publishes are lost in the outage.
    await appendEvents(app.runtime.db.sql, rawIdOf(id), [{ type: 'SESSION_UPDATED', payload: { fields: ['title'] } }]);
    await appendEvents(app.runtime.db.sql, rawIdOf(id), [{ type: 'SESSION_UPDATED', payload: { fields: ['title'] } }]);
    app.runtime.db.queries.reset();
    await redis.restart();
    expect((await Promise.all(pending)).map((step) => step.value?.sequence)).toEqual(streams.map(() => 2));
    expect((await Promise.all(streams.map((stream) => stream.next()))).map((step) => step.value?.sequence)).toEqual(streams.map(() => 3));
    const statements = app.runtime.db.queries.statements;
    const counterReads = statements.filter((sql) => /"eventSequence"/.test(sql) && /FROM ("public"\.)?"Session"(?!Event)/.test(sql));
    const logReads = statements.filter((sql) => /FROM ("public"\.)?"SessionEvent"/.test(sql));
    expect({ counterReads: counterReads.length, logReads: logReads.length }, statements.join('\n')).toEqual({
      counterReads: 1,
      logReads: 1,
    });
    for (const stream of streams) await stream.return();
  });

  it('shares one log read among streams of a session that start while another one reads: a burst of subscribers runs two reads at most, not one each', async () => {
    const id = await newSession(app);
    await warmStreamReads(app);
    app.runtime.db.queries.reset();
    const streams: SessionEventStream[] = [];
    const firsts: Promise<IteratorResult<SessionEventMessage>>[] = [];
    // Each stream starts its read before the next stream is made, so none can join the read in
    // flight (it started before they asked); all but the first wait for the one after it.
    for (let i = 0; i < 10; i++) {
      // The app's streams read through `reads` (statements that write nothing, and so keep the write count).
      const stream = sessionEventStream(
        { sql: app.runtime.db.sql.reads, bus: app.runtime.bus, shared: app.runtime.sharedReads },
        rawIdOf(id),
        0,
      );
      streams.push(stream);
      firsts.push(stream.next());
      // A stream starts a due read in a microtask (after every stream told of the same event has
      // noted it): let this one start before the next stream is made.
      await Promise.resolve();
    }
    expect((await Promise.all(firsts)).map((step) => step.value?.sequence)).toEqual(streams.map(() => 1));
    const logReads = app.runtime.db.queries.statements.filter((sql) => /FROM ("public"\.)?"SessionEvent"/.test(sql));
    // On PGlite (this process its only writer) the first read is kept until the next write, so the
    // streams that waited take it instead of reading again.
    expect(logReads.length, app.runtime.db.queries.statements.join('\n')).toBe(keepsReads(app) ? 1 : 2);
    for (const stream of streams) await stream.return();
  });

  it('ends a stream with SESSION_DELETED when the session was deleted on another instance while Redis was down', async () => {
    await redisReady(app);
    const id = await newSession(app);
    const stream = sessionEventStream({ sql: app.runtime.db.sql, bus: app.runtime.bus, shared: app.runtime.sharedReads }, rawIdOf(id), 0);
    expect((await stream.next()).value).toMatchObject({ sequence: 1 });
    const next = stream.next();
    await redis.kill();
    // Another instance's delete: the rows go, and its SESSION_DELETED publish is lost in the outage.
    await app.runtime.db.sql.query('DELETE FROM "Session" WHERE id = $1', [rawIdOf(id)]);
    await redis.restart();
    expect((await next).value).toMatchObject({ type: SESSION_DELETED, sequence: 2 });
    expect(await stream.next()).toEqual({ value: undefined, done: true });
    expect(app.runtime.bus.stats().listeners).toBe(0);
  });

  it.runIf(backend.postgresUrl)(
    'delivers writes made on one instance to a graphql-ws subscriber on another, in order, across a Redis restart',
    async () => {
      const second = await createTestApp({ apiKeys: keys, shareWith: app, redisUrl: redis.url });
      try {
        const secondUrl = await second.listen(0, '127.0.0.1');
        await redisReady(app);
        const id = await newSession(app);
        const client = wsClient(secondUrl, wsAuth);
        const sub = subscribeWs(client, EVENTS, { id, after: 1 }, pick);
        await append(app, id, 'one');
        await sub.collector.until((e) => e.length >= 1, 10_000, 'the first event from the other instance');
        await redis.kill();
        await append(app, id, 'two');
        await redis.restart();
        await sub.collector.until((e) => e.length >= 2, 20_000, 'the event written during the outage');
        await eventually(
          async () =>
            app.runtime.bus.ping().then(
              () => true,
              () => false,
            ),
          'Redis to be ready again',
        );
        await append(app, id, 'three');
        const all = await sub.collector.until((e) => e.length >= 3);
        expect(all.map((e) => [e.sequence, e.message?.text])).toEqual([
          [2, 'one'],
          [3, 'two'],
          [4, 'three'],
        ]);
        sub.unsubscribe();
        await client.dispose();
      } finally {
        await second.close();
      }
    },
  );
});

describe(`shared execution and token streaming (${backend.label})`, () => {
  let app: TestApp;
  let url: string;
  useTestApp(
    async (built) => {
      app = built;
      url = await app.listen(0, '127.0.0.1');
    },
    { apiKeys: keys },
  );

  it('lets subscribers that come one at a time share the workspace check and the log read until the next write (on PGlite), and replays that write to the next one', async () => {
    const id = await newSession(app);
    const client = wsClient(url, wsAuth);
    // Sequences only: a replayed event's message is read through Prisma, whose statements all count as writes.
    const SEQUENCES =
      'subscription ($id: ID!, $after: Int) { sessionEvents(sessionId: $id, afterSequence: $after) { __typename sequence } }';
    const warm = subscribeWs(client, SEQUENCES, { id: await newSession(app, 'warm'), after: 0 }, pick);
    await warm.collector.until((e) => e.length >= 1, 10_000, 'the warm-up subscriber');
    warm.unsubscribe();
    app.runtime.db.queries.reset();
    const subs = [];
    // One after another: each has its replayed event before the next subscribes, so no read overlaps.
    for (let i = 0; i < 4; i++) {
      const sub = subscribeWs(client, SEQUENCES, { id, after: 0 }, pick);
      await sub.collector.until((e) => e.length >= 1, 10_000, `subscriber ${i}'s replayed event`);
      subs.push(sub);
    }
    const statements = app.runtime.db.queries.statements;
    const checks = statements.filter((sql) => /^SELECT 1 FROM "Session"/.test(sql));
    const logReads = statements.filter((sql) => /FROM ("public"\.)?"SessionEvent"/.test(sql));
    const each = keepsReads(app) ? 1 : subs.length;
    expect({ checks: checks.length, logReads: logReads.length }, statements.join('\n')).toEqual({ checks: each, logReads: each });

    // A write moves the count: what was kept is not served again, and the next subscriber replays it.
    await append(app, id, 'after the kept reads');
    for (const sub of subs) await sub.collector.until((e) => e.length >= 2, 10_000, 'the live event');
    const late = subscribeWs(client, EVENTS, { id, after: 0 }, pick);
    const replayed = await late.collector.until((e) => e.length >= 2, 10_000, 'both events replayed');
    expect(replayed.map((e) => [e.sequence, e.message?.text])).toEqual([
      [1, 'first'],
      [2, 'after the kept reads'],
    ]);
    for (const sub of [...subs, late]) sub.unsubscribe();
    await client.dispose();
  });

  it('executes each event once per distinct selection, not once per subscriber, and reads no message (the live event carries it)', async () => {
    const id = await newSession(app);
    await append(app, id, 'second');
    const client = wsClient(url, wsAuth);
    // Where a subscriber starts (afterSequence) does not change what an event looks like: these share.
    const fromStart = Array.from({ length: 8 }, () => subscribeWs(client, EVENTS, { id, after: 0 }, pick));
    const fromSecond = Array.from({ length: 4 }, () => subscribeWs(client, EVENTS, { id, after: 1 }, pick));
    const other = subscribeWs(
      client,
      `subscription ($id: ID!) { sessionEvents(sessionId: $id, afterSequence: 0) { sequence ... on MessageAdded { message { text role } } } }`,
      { id },
      (d) => d.sessionEvents as Ev,
    );
    for (const sub of [...fromStart, other]) await sub.collector.until((e) => e.length >= 2, 10_000, 'the replayed events');
    for (const sub of fromSecond) await sub.collector.until((e) => e.length >= 1, 10_000, 'the replayed second event');
    const same = [...fromStart, ...fromSecond];

    // On Redis, the session's SUBSCRIBE may be confirmed after the replays, and its confirmation has
    // every stream read the log once (`sync`): that read must be over before the write, or it may
    // hand over the new event (read from the log, without its message) before the live one.
    if (backend.redisUrl) await channelSynced(app, id);
    const before = { ...app.sharing };
    app.runtime.db.queries.reset();
    await append(app, id, 'shared');
    for (const sub of [...same, other]) await sub.collector.until((e) => e.some((ev) => ev.sequence === 3), 10_000, 'the live event');
    const messageReads = app.runtime.db.queries.statements.filter((sql) => /^\s*SELECT/i.test(sql) && /FROM "public"\."Message"/.test(sql));

    expect(app.sharing.executions - before.executions).toBe(2);
    expect(app.sharing.shared - before.shared).toBe(same.length + 1 - 2);
    const live = (sub: { collector: { events: Ev[] } }) => sub.collector.events.find((ev) => ev.sequence === 3);
    expect(new Set(same.map((sub) => JSON.stringify(live(sub))))).toHaveLength(1);
    expect(live(same[0])).toMatchObject({ __typename: 'MessageAdded', sequence: 3, message: { text: 'shared' } });
    expect(live(other)).toMatchObject({ sequence: 3, message: { text: 'shared', role: 'USER' } });
    expect(messageReads, `message reads during delivery:\n${messageReads.join('\n')}`).toHaveLength(0);
    for (const sub of [...same, other]) sub.unsubscribe();
    await client.dispose();
  });

  it('masks what a WebSocket subscription sends with errors as Yoga masks it over HTTP: a refused start, and an event whose execution fails (once for every subscriber sharing it), the stream going on', async () => {
    const id = await newSession(app);
    // A session that does not exist (in this workspace): refused at the start, exactly as over HTTP (SSE).
    const missing = Buffer.from('Session:01900000-0000-7000-8000-000000000000').toString('base64');
    const client = wsClient(url, wsAuth);
    const refused = subscribeWs(client, EVENTS, { id: missing, after: 0 }, pick);
    await expect(refused.collector.until(() => false, 10_000, 'the refusal')).rejects.toThrow(/NOT_FOUND/);
    const sse = await app.yoga.fetch('http://localhost/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${API_KEYS.alpha}` },
      body: JSON.stringify({ query: EVENTS, variables: { id: missing, after: 0 } }),
    });
    const sseError = JSON.parse(/data: (.*)/.exec(await sse.text())![1]).errors[0];
    expect(sseError.extensions.code).toBe('NOT_FOUND');
    expect((refused.collector.errors[0] as { message: string; extensions: unknown }[])[0]).toMatchObject({
      message: sseError.message,
      extensions: sseError.extensions,
    });

    // An unexpected failure while executing one live event (injected where the event's message is
    // read: one too large to travel with its event, so that it is read).
    const received: { sequence?: number; errors?: { message: string; extensions?: Record<string, unknown> }[] }[][] = [[], [], []];
    const unsubscribes = received.map((into) =>
      client.subscribe(
        { query: EVENTS, variables: { id, after: 1 } },
        {
          next: (result) =>
            into.push(
              result.errors
                ? { errors: result.errors as never }
                : { sequence: (result.data as { sessionEvents: Ev }).sessionEvents.sequence },
            ),
          error: () => {},
          complete: () => {},
        },
      ),
    );
    await append(app, id, 'ready');
    await eventually(() => received.every((r) => r.length === 1), 'the first live event');
    const memo = app.runtime.eventEntities;
    const get = memo.get;
    const logged: unknown[] = [];
    const error = app.runtime.logger.error;
    memo.get = (eventId, what, compute) =>
      what === 'message' ? Promise.reject(new Error('secret detail of the failure')) : get.call(memo, eventId, what, compute);
    app.runtime.logger.error = (...args: unknown[]) => void logged.push(args);
    try {
      await append(app, id, `fails ${'x'.repeat(SNAPSHOT_MAX_CHARS)}`);
      await eventually(() => received.every((r) => r.length === 2), 'the failed event');
    } finally {
      memo.get = get;
      app.runtime.logger.error = error;
    }
    await append(app, id, 'after');
    await eventually(() => received.every((r) => r.length === 3), 'the event after the failure');
    const errorIds = new Set<unknown>();
    for (const r of received) {
      expect(r[0]).toEqual({ sequence: 2 });
      expect(r[1].errors).toHaveLength(1);
      expect(JSON.stringify(r[1])).not.toContain('secret detail');
      expect(r[1].errors![0].extensions).toMatchObject({ code: 'INTERNAL_SERVER_ERROR' });
      errorIds.add(r[1].errors![0].extensions!.errorId);
      expect(r[2]).toEqual({ sequence: 4 });
    }
    // One shared execution failed. Our own WebSocket server masks the shared result, and logs it,
    // once; graphql-ws's useServer (that deviation off) runs each subscriber's stream through
    // envelop, whose masking plugin masks each subscriber's copy, as over SSE: once per subscriber.
    const maskings = testDeviations.ownWebSocketServer ? 1 : received.length;
    expect(errorIds.size).toBe(maskings);
    expect(logged).toHaveLength(maskings);
    for (const unsubscribe of unsubscribes) unsubscribe();
    await client.dispose();
  });

  it('answers a live event from the message it carries, exactly as a read would, and reads a message too large to carry once', async () => {
    const id = await newSession(app);
    const client = wsClient(url, wsAuth);
    const FULL = `subscription ($id: ID!) { sessionEvents(sessionId: $id, afterSequence: 1) { sequence ... on MessageAdded { message { ${MESSAGE_FIELDS} } } ... on MessageUpdated { appendText message { ${MESSAGE_FIELDS} } } } }`;
    const subs = Array.from({ length: 3 }, () => subscribeWs(client, FULL, { id }, (d) => d.sessionEvents as FullEv));
    // Live from here on (not replaying the log, which reads messages as they are now).
    await append(app, id, 'ready');
    for (const sub of subs) await sub.collector.until((e) => e.length >= 1, 10_000, 'the first live event');
    const large = 'x'.repeat(SNAPSHOT_MAX_CHARS + 1);
    app.runtime.db.queries.reset();
    const appended = await gqlOk(
      app,
      `mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { ${MESSAGE_FIELDS} } } }`,
      {
        input: {
          sessionId: id,
          messages: [
            {
              role: 'ASSISTANT',
              parts: [{ text: { text: 'calling' } }, { toolCall: { callId: 'c1', name: 'look', arguments: { q: [1, 'é'] } } }],
            },
            // Too large to carry too, though it has no text part: the cap counts every string of the parts.
            { role: 'TOOL', parts: [{ toolResult: { callId: 'c1', content: large, isError: false } }] },
            { role: 'USER', text: large },
            { role: 'ASSISTANT', text: 'strea', generating: true, agentId: 'writer' },
          ],
        },
      },
      auth,
    );
    const [small, bigResult, big, streaming] = (appended as { appendMessages: { messages: FullMessage[] } }).appendMessages.messages;
    const updated = await gqlOk(
      app,
      `mutation ($input: UpdateMessageInput!) { updateMessage(input: $input) { ${MESSAGE_FIELDS} } }`,
      { input: { messageId: streaming.id, appendText: 'med', generating: false } },
      auth,
    );
    for (const sub of subs) await sub.collector.until((e) => e.length >= 6, 10_000, 'the five live events');
    const messageReads = app.runtime.db.queries.statements.filter((sql) => /^\s*SELECT/i.test(sql) && /FROM "public"\."Message"/.test(sql));
    for (const sub of subs) {
      expect(sub.collector.events.slice(1).map((e) => e.message)).toEqual([
        small,
        bigResult,
        big,
        streaming,
        (updated as { updateMessage: FullMessage }).updateMessage,
      ]);
    }
    // updateMessage finds and locks its message (two statements); the events read only the two large ones, once for every subscriber.
    const eventReads = messageReads.filter((sql) => !/"public"\."Message"\."sessionId" FROM/.test(sql));
    expect(eventReads, `message reads:\n${messageReads.join('\n')}`).toHaveLength(2);
    for (const sub of subs) sub.unsubscribe();
    await client.dispose();
  });

  it('streams a reply as deltas: a subscriber concatenating appendText gets exactly the final text, multi-byte characters included', async () => {
    const id = await newSession(app);
    const appended = await gqlOk(
      app,
      AppendMessages,
      { input: { sessionId: id, messages: [{ role: 'ASSISTANT', text: '', generating: true }] } },
      auth,
    );
    const messageId = appended.appendMessages.messages[0].id;
    const client = wsClient(url, wsAuth);
    const sub = subscribeWs(client, EVENTS, { id, after: 2 }, pick);
    const pieces = ['Hé', 'llo', ' ', '世界', '🙂', ' ', 'naïve ', 'café', '👩‍👩‍👧', ' ', 'Ωμέγα', '\n', 'ok', '🚀🚀', '…'];
    const chunks = Array.from({ length: 60 }, (_, i) => pieces[i % pieces.length]);
    let final = '';
    for (const [i, chunk] of chunks.entries()) {
      const updated = await gqlOk(
        app,
        UpdateMessage,
        { input: { messageId, appendText: chunk, generating: i === chunks.length - 1 ? false : undefined } },
        auth,
      );
      final = updated.updateMessage.text;
    }
    const events = await sub.collector.until((e) => e.length >= chunks.length, 20_000, 'every delta');
    expect(events.map((e) => e.__typename)).toEqual(chunks.map(() => 'MessageUpdated'));
    expect(events.map((e) => e.appendText)).toEqual(chunks);
    expect(events.map((e) => e.appendText).join('')).toBe(chunks.join(''));
    expect(final).toBe(chunks.join(''));
    sub.unsubscribe();
    await client.dispose();
  });

  it('fills a gap from the log when a publish was lost, and ends the stream after SESSION_DELETED', async () => {
    const id = await newSession(app);
    const sessionId = rawIdOf(id);
    const stream = sessionEventStream({ sql: app.runtime.db.sql, bus: app.runtime.bus, shared: app.runtime.sharedReads }, sessionId, 1);
    await append(app, id, 'second');
    expect((await stream.next()).value).toMatchObject({ sequence: 2, type: 'MESSAGE_ADDED' });
    // The stream is live now. Sequence 3 is written but never published (a lost publish); 4 is published.
    const first = stream.next();
    await appendEvents(app.runtime.db.sql, sessionId, [{ type: 'SESSION_UPDATED', payload: { fields: ['title'] } }]);
    await append(app, id, 'fourth');
    const seen = [(await first).value as SessionEventMessage, (await stream.next()).value as SessionEventMessage];
    expect(seen.map((e) => [e.sequence, e.type])).toEqual([
      [3, 'SESSION_UPDATED'],
      [4, 'MESSAGE_ADDED'],
    ]);
    const next = stream.next();
    app.runtime.bus.publish({ ...seen[1], id: 'deleted', sequence: 5, type: SESSION_DELETED, messageId: null, payload: {} });
    expect((await next).value).toMatchObject({ type: SESSION_DELETED });
    expect(await stream.next()).toEqual({ value: undefined, done: true });
  });

  it('gives a consumer that falls far behind every event once, in order, from the log instead of an unbounded backlog', async () => {
    const id = await newSession(app);
    const sessionId = rawIdOf(id);
    const stream = sessionEventStream({ sql: app.runtime.db.sql, bus: app.runtime.bus, shared: app.runtime.sharedReads }, sessionId, 0);
    expect((await stream.next()).value).toMatchObject({ sequence: 1 });
    const events = await appendEvents(
      app.runtime.db.sql,
      sessionId,
      Array.from({ length: 1_500 }, (_, i) => ({ type: 'SESSION_UPDATED' as const, payload: { fields: [`f${i}`] } })),
    );
    publishAll(app.runtime.bus, events);
    const seen: number[] = [];
    while (seen.length < 1_500) seen.push(((await stream.next()).value as SessionEventMessage).sequence);
    expect(seen).toEqual(range(2, 1_501));
    await stream.return();
  });

  it('releases a stream that is waiting for an event at once when it is closed', async () => {
    const bus = createEventBus({ redisUrl: null, prefix: 'x:', logger: createLogger('silent') });
    const id = await newSession(app);
    const stream = sessionEventStream({ sql: app.runtime.db.sql, bus: bus, shared: app.runtime.sharedReads }, rawIdOf(id), 0);
    expect((await stream.next()).value).toMatchObject({ sequence: 1 });
    const pending = stream.next();
    expect(bus.stats()).toEqual({ channels: 1, listeners: 1 });
    await stream.return();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(bus.stats()).toEqual({ channels: 0, listeners: 0 });
  });

  it('releases a filtered stream at once too', async () => {
    const bus = createEventBus({ redisUrl: null, prefix: 'x:', logger: createLogger('silent') });
    const id = await newSession(app);
    const stream = filterEvents(
      sessionEventStream({ sql: app.runtime.db.sql, bus: bus, shared: app.runtime.sharedReads }, rawIdOf(id), 0),
      (e) => e.type === 'SESSION_UPDATED',
    );
    const pending = stream.next();
    // The stored MESSAGE_ADDED is read and skipped; the filter then waits for a live event.
    await eventually(() => bus.stats().listeners === 1, 'the stream to listen');
    await stream.return();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(bus.stats()).toEqual({ channels: 0, listeners: 0 });
  });
});
