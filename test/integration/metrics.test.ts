import { describe, expect, it } from 'vitest';
import { backend, createTestApp, gql, gqlOk, type TestApp, testDeviations, useTestApp } from '../helpers/app.js';
import { AppendMessages, CreateSession } from '../helpers/documents.js';
import { subscribeWs, wsClient } from '../helpers/subscriptions.js';

const TOKEN = 'scrape-token-0123456789';
const LIST = 'query ListForMetrics { sessions(first: 1) { totalCount } }';
const MISSING = 'mutation RenameMissing { updateSession(input: { sessionId: "U2Vzc2lvbjpub3Bl", title: "x" }) { id } }';
const INVALID = 'query BrokenForMetrics { sessions(first: 1) { noSuchField } }';
const EVENTS = `subscription MetricsEvents($id: ID!) { sessionEvents(sessionId: $id) { sequence } }`;

/** The samples of a Prometheus text exposition: `name{labels} value` lines. */
function samples(text: string) {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const match = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line)!;
      const labels = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
      return { name: match[1], labels, value: Number(match[3]) };
    });
}

/** The sum of the samples of `name` whose labels include `labels`. */
function value(text: string, name: string, labels: Record<string, string> = {}) {
  return samples(text)
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

const metricsUrl = (app: TestApp) => app.url.replace(/\/graphql$/, '/metrics');
async function scrape(app: TestApp, token: string | null = TOKEN) {
  const response = await fetch(metricsUrl(app), token ? { headers: { authorization: `Bearer ${token}` } } : {});
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return response.text();
}

/** What a request changes in the metrics it counts, and which path answered it. */
async function increments(app: TestApp, run: () => Promise<unknown>) {
  const before = await scrape(app);
  const answered = app.fastPath.answered;
  await run();
  const after = await scrape(app);
  const diff = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);
  const errorCodes = Object.fromEntries(
    samples(after)
      .filter((s) => s.name === 'session_graph_graphql_errors_total')
      .map((s) => [s.labels.code, diff('session_graph_graphql_errors_total', { code: s.labels.code })])
      .filter(([, n]) => n !== 0),
  );
  return {
    fastPath: app.fastPath.answered > answered,
    requests: diff('graphql_envelop_request'),
    durations: diff('graphql_envelop_request_duration_count'),
    errorCodes,
  };
}

describe(`/metrics (${backend.label})`, () => {
  let app: TestApp;
  useTestApp(
    (built) => {
      app = built;
    },
    { config: { metricsToken: TOKEN } },
  );

  it('with METRICS_TOKEN: 401 without a token, 403 with another, 200 Prometheus text with it', async () => {
    const without = await fetch(metricsUrl(app));
    expect(without.status).toBe(401);
    expect(without.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const wrong = await fetch(metricsUrl(app), { headers: { authorization: 'Bearer not-the-token' } });
    expect(wrong.status).toBe(403);
    const text = await scrape(app);
    // The process's default metrics, and both dependencies answering.
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain('nodejs_eventloop_lag_seconds');
    expect(value(text, 'session_graph_dependency_up', { dependency: 'database' })).toBe(1);
    expect(value(text, 'session_graph_dependency_up', { dependency: 'pubsub' })).toBe(1);
  });

  it('counts an operation by name and type, its errors by code, the same on the fast path as on Yoga’s path', async () => {
    const viaYoga = { headers: { origin: 'http://browser.example' } };
    const cases: [string, string, Record<string, string>][] = [
      [LIST, 'ListForMetrics', {}],
      [MISSING, 'RenameMissing', { NOT_FOUND: '1' }],
    ];
    for (const [query, name] of cases) {
      const fast = await increments(app, () => gql(app, query));
      const yoga = await increments(app, () => gql(app, query, undefined, viaYoga));
      // With the fast path off (TEST_DEVIATIONS=off) both are Yoga's, and count the same all the more.
      expect(fast.fastPath).toBe(testDeviations.httpFastPath);
      expect(yoga.fastPath).toBe(false);
      expect({ ...fast, fastPath: null }).toEqual({ ...yoga, fastPath: null });
      expect(fast.requests).toBe(1);
      expect(fast.durations).toBe(1);
      const labels = { operationName: name, operationType: query.startsWith('query') ? 'query' : 'mutation' };
      expect(value(await scrape(app), 'graphql_envelop_request', labels)).toBe(2);
    }
    // A document that does not validate: the fast path hands it to Yoga after validating it once
    // itself; it is counted once all the same, and nothing executed.
    const fastInvalid = await increments(app, () => gql(app, INVALID));
    const yogaInvalid = await increments(app, () => gql(app, INVALID, undefined, viaYoga));
    expect(fastInvalid).toEqual(yogaInvalid);
    expect(fastInvalid.requests).toBe(0);
    expect(Object.values(fastInvalid.errorCodes)).toEqual([1]);
    const missing = await increments(app, () => gql(app, MISSING));
    expect(missing.errorCodes).toEqual({ NOT_FOUND: 1 });

    // Over graphql-ws the same operation counts the same.
    const client = wsClient(app.url);
    try {
      const run = (query: string) =>
        new Promise<void>((done) => client.subscribe({ query }, { next: () => {}, error: () => done(), complete: () => done() }));
      const overWs = await increments(app, () => run(LIST));
      expect({ requests: overWs.requests, durations: overWs.durations, errorCodes: overWs.errorCodes }).toEqual({
        requests: 1,
        durations: 1,
        errorCodes: {},
      });
      expect((await increments(app, () => run(MISSING))).errorCodes).toEqual({ NOT_FOUND: 1 });
    } finally {
      await client.dispose();
    }
  });

  it('gauges live subscriptions and WebSocket connections; counts events published and delivered, with their delivery lag', async () => {
    const { createSession } = await gqlOk(app, CreateSession, { input: { title: 'watched' } });
    const before = await scrape(app);
    expect(value(before, 'session_graph_live_subscriptions')).toBe(0);
    const client = wsClient(app.url);
    try {
      const sub = subscribeWs(client, EVENTS, { id: createSession.id }, (d) => d.sessionEvents as { sequence: number });
      let during = '';
      for (let i = 0; i < 100 && value(during, 'session_graph_live_subscriptions') !== 1; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        during = await scrape(app);
      }
      expect(value(during, 'session_graph_live_subscriptions')).toBe(1);
      expect(value(during, 'session_graph_websocket_connections')).toBe(1);
      await gqlOk(app, AppendMessages, { input: { sessionId: createSession.id, messages: [{ role: 'USER', text: 'hello' }] } });
      await sub.collector.until((events) => events.length >= 1, 10_000, 'the live event');
      const after = await scrape(app);
      expect(value(after, 'session_graph_events_published_total') - value(before, 'session_graph_events_published_total')).toBe(1);
      expect(value(after, 'session_graph_events_delivered_total') - value(before, 'session_graph_events_delivered_total')).toBe(1);
      const lagCount = (text: string) => value(text, 'session_graph_event_delivery_lag_seconds_count');
      expect(lagCount(after) - lagCount(before)).toBe(1);
      sub.unsubscribe();
    } finally {
      await client.dispose();
    }
    let closed = '';
    for (let i = 0; i < 100 && value(closed, 'session_graph_websocket_connections', {}) !== 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      closed = await scrape(app);
    }
    expect(value(closed, 'session_graph_live_subscriptions')).toBe(0);
    expect(value(closed, 'session_graph_websocket_connections')).toBe(0);
  });

  it('without METRICS_TOKEN /metrics is open', async () => {
    const open = await createTestApp();
    try {
      expect(await scrape(open, null)).toContain('session_graph_live_subscriptions');
    } finally {
      await open.close();
    }
  });
});
