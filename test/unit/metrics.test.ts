import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { MAX_OPERATION_NAME_CHARS, OTHER_OPERATIONS, ServerMetrics } from '../../src/http/metrics.js';

type Hook = (payload: unknown) => { onExecuteDone?: (p: unknown) => unknown; onSubscribeResult?: (p: unknown) => unknown } | undefined;

/** Runs the operation metrics' execute hook as envelop does for one execution that ends with `result`. */
function execute(metrics: ServerMetrics, query: string, operationName?: string, result: unknown = { data: {} }) {
  const onExecute = metrics.plugins()[0].onExecute as unknown as Hook;
  return onExecute({ args: { document: parse(query), operationName } })?.onExecuteDone?.({ result });
}

/** `name{labels} value` samples of one metric, as `labels → value`. */
async function series(metrics: ServerMetrics, name: string) {
  const text = await metrics.registry.metrics();
  return Object.fromEntries([...text.matchAll(new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`, 'gm'))].map((m) => [m[1], Number(m[2])]));
}

describe('operation metrics (ServerMetrics)', () => {
  it("label each execution by its operation's name and type, as Yoga's Prometheus plugin names them", async () => {
    const metrics = new ServerMetrics(null);
    execute(metrics, 'query ListA { a }');
    execute(metrics, 'query ListA { a }');
    execute(metrics, 'mutation Write { a }');
    execute(metrics, '{ a }');
    // The request's operationName picks the operation of a document that has several.
    execute(metrics, 'query One { a } mutation Two { b }', 'Two');
    expect(await series(metrics, 'graphql_envelop_request')).toEqual({
      'operationName="ListA",operationType="query"': 2,
      'operationName="Write",operationType="mutation"': 1,
      'operationName="Anonymous",operationType="query"': 1,
      'operationName="Two",operationType="mutation"': 1,
    });
    const counts = await series(metrics, 'graphql_envelop_request_duration_count');
    expect(counts['operationName="ListA",operationType="query"']).toBe(2);
  });

  it('count a streamed result when it ends, not when it starts', async () => {
    const metrics = new ServerMetrics(null);
    const stream = { [Symbol.asyncIterator]: () => ({ next: async () => ({ done: true, value: undefined }) }) };
    const hooks = execute(metrics, 'query Streamed { a }', undefined, stream) as { onEnd: () => void };
    expect(await series(metrics, 'graphql_envelop_request')).toEqual({});
    hooks.onEnd();
    expect(await series(metrics, 'graphql_envelop_request')).toEqual({ 'operationName="Streamed",operationType="query"': 1 });
    // A subscription over SSE: counted when it ends; one refused before streaming, at once.
    const onSubscribe = metrics.plugins()[0].onSubscribe as unknown as Hook;
    const subscribe = (result: unknown) =>
      onSubscribe({ args: { document: parse('subscription Watch { a }') } })?.onSubscribeResult?.({ result }) as
        | { onEnd: () => void }
        | undefined;
    const live = subscribe(stream)!;
    subscribe({ errors: [{ message: 'refused' }] });
    const watch = 'operationName="Watch",operationType="subscription"';
    expect((await series(metrics, 'graphql_envelop_request'))[watch]).toBe(1);
    live.onEnd();
    expect((await series(metrics, 'graphql_envelop_request'))[watch]).toBe(2);
  });

  it('count names the document does not have, and names over MAX_OPERATION_NAME_CHARS, as one', async () => {
    const metrics = new ServerMetrics(null);
    execute(metrics, 'query Known { a }', 'Unknown');
    execute(metrics, 'query Known { a }', 'AnotherUnknown');
    const long = `L${'o'.repeat(MAX_OPERATION_NAME_CHARS)}ng`;
    execute(metrics, `query ${long} { a }`);
    execute(metrics, 'query Known { a }');
    expect(await series(metrics, 'graphql_envelop_request')).toEqual({
      [`operationName="${OTHER_OPERATIONS}",operationType="query"`]: 3,
      'operationName="Known",operationType="query"': 1,
    });
  });

  it('keep a bounded number of series: names past the bound count as one', async () => {
    const metrics = new ServerMetrics(null, 3);
    for (let i = 0; i < 10; i++) execute(metrics, `query Name${i} { a }`);
    execute(metrics, 'query Name1 { a }');
    const found = await series(metrics, 'graphql_envelop_request');
    expect(found).toEqual({
      'operationName="Name0",operationType="query"': 1,
      'operationName="Name1",operationType="query"': 2,
      'operationName="Name2",operationType="query"': 1,
      [`operationName="${OTHER_OPERATIONS}",operationType="query"`]: 7,
    });
  });
});

describe('a closed server (ServerMetrics.detach)', () => {
  it("leaves nothing the process's default collectors reach: the registry is empty, its gauges read no server", async () => {
    const metrics = new ServerMetrics(null);
    let pinged = 0;
    metrics.attach({
      liveSubscriptions: () => 0,
      webSocketConnections: () => 0,
      pingDatabase: async () => void pinged++,
      pingPubSub: async () => undefined,
      timeoutMs: 1000,
    });
    expect(await metrics.registry.metrics()).toContain('nodejs_gc_duration_seconds');
    expect(pinged).toBe(1);
    metrics.detach();
    expect(metrics.registry.getMetricsAsArray()).toEqual([]);
    expect((await metrics.registry.metrics()).trim()).toBe('');
    expect(pinged).toBe(1);
  });
});
