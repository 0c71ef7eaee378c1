import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEYS, backend, createTestApp, dropTestDatabases, gql, rawIdOf, type TestApp } from '../helpers/app.js';
import { subscribeWs, wsClient } from '../helpers/subscriptions.js';

/**
 * Two instances on one PostgreSQL and a Redis Cluster (`TEST_REDIS_CLUSTER_NODES`, e.g. what
 * `scripts/redis-cluster.sh up` starts): sharded pub/sub, a primary killed mid-stream, shared rate
 * limits. The killed node is started again with `scripts/redis-cluster.sh start PORT` (the
 * cluster's own script: `TEST_REDIS_CLUSTER_SCRIPT` names another).
 */
const nodes = process.env.TEST_REDIS_CLUSTER_NODES?.split(',') ?? null;
const script = process.env.TEST_REDIS_CLUSTER_SCRIPT ?? 'scripts/redis-cluster.sh';
const run = promisify(execFile);
const keys = [{ workspace: 'alpha', key: API_KEYS.alpha }];
const authorization = `Bearer ${API_KEYS.alpha}`;
const EVENTS = 'subscription ($id: ID!, $after: Int) { sessionEvents(sessionId: $id, afterSequence: $after) { sequence } }';
const CREATE = 'mutation ($title: String!) { createSession(input: { title: $title, messages: [{ role: USER, text: "first" }] }) { id } }';
const APPEND =
  'mutation ($id: ID!, $text: String!) { appendMessages(input: { sessionId: $id, messages: [{ role: USER, text: $text }] }) { session { id } } }';

/** A request over the instance's socket, as a client sends it. */
async function post(app: TestApp, query: string, variables: Record<string, unknown>) {
  const response = await fetch(app.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization },
    body: JSON.stringify({ query, variables }),
  });
  return (await response.json()) as {
    data?: Record<string, { id?: string; session?: { id: string } }>;
    errors?: { extensions?: { code?: string } }[];
  };
}

async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A plain connection to one node, for CLUSTER and INFO. */
function node(hostPort: string) {
  const at = hostPort.lastIndexOf(':');
  return new Redis({
    host: hostPort.slice(0, at),
    port: Number(hostPort.slice(at + 1)),
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  });
}

/** Asks the seeds in turn (one may be the node killed). */
async function ask<T>(command: (client: Redis) => Promise<T>): Promise<T> {
  let last: unknown;
  for (const seed of nodes!) {
    const client = node(seed);
    client.on('error', () => {});
    try {
      await client.connect();
      return await command(client);
    } catch (error) {
      last = error;
    } finally {
      client.disconnect();
    }
  }
  throw last;
}

/** The `host:port` of the primary that owns `channel`'s slot. */
async function ownerOf(channel: string): Promise<string> {
  return ask(async (client) => {
    const slot = Number(await client.call('CLUSTER', 'KEYSLOT', channel));
    const ranges = (await client.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    const range = ranges.find(([from, to]) => slot >= from && slot <= to);
    if (!range) throw new Error(`slot ${slot} has no owner`);
    return `${range[2][0]}:${range[2][1]}`;
  });
}

async function clusterOk() {
  return ask(async (client) => (/cluster_state:ok/.test(String(await client.call('CLUSTER', 'INFO'))) ? true : undefined));
}

describe.runIf(nodes && backend.postgresUrl)(`two instances on a Redis Cluster (${nodes?.join(',')})`, () => {
  let one: TestApp;
  let two: TestApp;
  let killed: string | null = null;
  const config = { redisClusterNodes: nodes, rateLimit: { requests: 0, windowMs: 60_000 } };

  beforeAll(async () => {
    one = await createTestApp({ apiKeys: keys, config });
    two = await createTestApp({ apiKeys: keys, config, shareWith: one });
  });

  afterAll(async () => {
    await one?.close();
    await two?.close();
    // The cluster as it was found: the killed node back (as a replica of its successor).
    if (killed) await run(script, ['start', killed.split(':')[1]]);
    await dropTestDatabases();
  }, 60_000);

  it('is ready on both instances, the bus naming the cluster', async () => {
    for (const app of [one, two]) {
      const response = await fetch(new URL('/readyz', app.url));
      expect(await response.json()).toEqual({ status: 'ok', database: 'ok', pubsub: 'ok' });
      expect(app.runtime.bus.description).toMatch(/^sharded pub\/sub on Redis Cluster/);
    }
  });

  it('delivers 1,000 events written on one instance to a subscriber on the other once and in order, with the primary of their channel killed midway', async () => {
    const created = await post(one, CREATE, { title: 'cluster' });
    const id = created.data!.createSession.id!;
    const channel = `${one.redisPrefix}session-events:${rawIdOf(id)}`;
    const client = wsClient(two.url, { Authorization: authorization });
    const sub = subscribeWs(client, EVENTS, { id, after: 1 }, (data) => data.sessionEvents as { sequence: number });
    const primary = await ownerOf(channel);
    // The channel is sharded: subscribed on the primary that owns its slot, not as a classic channel.
    await eventually(async () => {
      const owner = node(primary);
      try {
        await owner.connect();
        const [, shard] = (await owner.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number];
        const [, classic] = (await owner.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
        return shard === 1 && classic === 0 ? true : undefined;
      } finally {
        owner.disconnect();
      }
    }, 'the SSUBSCRIBE on the owning primary');

    // A second session on the same primary, written only while it is dead: nothing written after
    // wakes its subscriber, so what it gets comes from the resubscription's read of the log.
    let quiet = '';
    for (let tries = 0; tries < 50 && !quiet; tries++) {
      const other = (await post(one, CREATE, { title: 'quiet' })).data!.createSession.id!;
      if ((await ownerOf(`${one.redisPrefix}session-events:${rawIdOf(other)}`)) === primary) quiet = other;
    }
    expect(quiet).not.toBe('');
    const quietSub = subscribeWs(client, EVENTS, { id: quiet, after: 1 }, (data) => data.sessionEvents as { sequence: number });
    await post(one, APPEND, { id: quiet, text: 'live' });
    await quietSub.collector.until((events) => events.length >= 1, 30_000, 'the quiet session before the kill');

    const total = 1_000;
    const killAt = 300;
    for (let i = 1; i <= total; i++) {
      const result = await post(one, APPEND, { id, text: `m${i}` });
      expect(result.errors).toBeUndefined();
      if (i === 100) await sub.collector.until((events) => events.length >= 50, 30_000, 'live events before the kill');
      if (i === killAt) {
        const victim = node(primary);
        await victim.connect();
        const pid = Number(/process_id:(\d+)/.exec(String(await victim.info('server')))![1]);
        victim.disconnect();
        killed = primary;
        process.kill(pid, 'SIGKILL');
        for (let j = 0; j < 5; j++) expect((await post(one, APPEND, { id: quiet, text: `q${j}` })).errors).toBeUndefined();
      }
    }
    // Event 1 is the session's first message, then one per append.
    const events = await sub.collector.until((events) => events.length >= total, 60_000, `${total} events`);
    // Nothing more is coming: no duplicate arrives late.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const sequences = sub.collector.events.map((event) => event.sequence);
    expect(sequences).toEqual(Array.from({ length: total }, (_, i) => i + 2));
    expect(events.length).toBe(total);
    const quietEvents = await quietSub.collector.until((events) => events.length >= 6, 30_000, 'the quiet session after the failover');
    expect(quietEvents.map((event) => event.sequence)).toEqual([2, 3, 4, 5, 6, 7]);
    quietSub.unsubscribe();
    // The kill did fail the slot over to the replica.
    await eventually(async () => ((await ownerOf(channel)) !== primary ? true : undefined), 'the failover');
    sub.unsubscribe();
    await client.dispose();

    // After the failover the live path works again (not only the log): a new write reaches a new subscriber.
    const client2 = wsClient(two.url, { Authorization: authorization });
    const late = subscribeWs(client2, EVENTS, { id, after: total + 1 }, (data) => data.sessionEvents as { sequence: number });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await post(one, APPEND, { id, text: 'after' })).errors).toBeUndefined();
    expect((await late.collector.until((e) => e.length >= 1, 30_000, 'the event after the failover')).map((e) => e.sequence)).toEqual([
      total + 2,
    ]);
    late.unsubscribe();
    await client2.dispose();
    await eventually(async () => {
      const response = await fetch(new URL('/readyz', two.url));
      return ((await response.json()) as { status: string }).status === 'ok' ? true : undefined;
    }, 'readiness after the failover');
  }, 180_000);

  it('shares one rate-limit budget across instances, in one slot per identity', async () => {
    await eventually(clusterOk, 'the cluster to be ok');
    const limited = { ...config, rateLimit: { requests: 4, windowMs: 60_000 } };
    const first = await createTestApp({ apiKeys: keys, config: limited });
    const second = await createTestApp({ apiKeys: keys, config: limited, shareWith: first });
    try {
      const codes: (string | undefined)[] = [];
      for (let i = 0; i < 6; i++) {
        const result = await gql(i % 2 ? second : first, '{ sessions(first: 1) { totalCount } }', undefined, { apiKey: API_KEYS.alpha });
        codes.push(result.errors?.[0]?.extensions?.code as string | undefined);
      }
      expect(codes).toEqual([undefined, undefined, undefined, undefined, 'RATE_LIMITED', 'RATE_LIMITED']);
    } finally {
      await first.close();
      await second.close();
    }
  }, 60_000);
});
