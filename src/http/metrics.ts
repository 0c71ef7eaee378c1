import { createHash, timingSafeEqual } from 'node:crypto';
import type { DocumentNode, ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { getOperationAST } from 'graphql';
import { isAsyncIterable } from 'graphql-yoga';
import type { ReplicaSet } from '../db/replicas.js';
import type { BusObserver } from '../pubsub/bus.js';
import { fastPathCovers } from './fast-path-contract.js';
import { within } from './guards.js';

/** What the gauges read at each scrape. */
export interface MetricsSources {
  /** Open subscriptions, over SSE and WebSocket (the subscription tracker's size). */
  liveSubscriptions(): number;
  webSocketConnections(): number;
  /** Round trips to the database and the pub/sub, each bounded by `timeoutMs` (a scrape must answer). */
  pingDatabase(): Promise<void>;
  pingPubSub(): Promise<void>;
  timeoutMs: number;
  /** The read replicas (DATABASE_REPLICA_URLS), whose routing the database metrics show; null: none. */
  replicas?: ReplicaSet | null;
}

/** Where `/metrics` answers. */
export const METRICS_PATH = '/metrics';

/**
 * Distinct operation names the operation metrics keep a series for. Names are the client's to
 * choose, and each one would be a series for ever: past this many, an operation is counted under
 * `OTHER_OPERATIONS`.
 */
export const MAX_OPERATION_SERIES = 1_000;
/** Longest operation name kept as a label value; a longer one is counted under `OTHER_OPERATIONS`. */
export const MAX_OPERATION_NAME_CHARS = 200;
/** The operation name of everything past `MAX_OPERATION_SERIES`, of names too long, and of names the document does not have. */
export const OTHER_OPERATIONS = '(other)';

/** One operation's series: its request count and its duration histogram, labels bound. */
interface OperationSeries {
  count: { inc(): void };
  time: { observe(seconds: number): void };
}

/** Counts one finished operation of `series` that started at `start` (`performance.now()`). */
function finish(series: OperationSeries, start: number) {
  series.count.inc();
  series.time.observe((performance.now() - start) / 1000);
}

/**
 * The server's Prometheus metrics, one registry per app: operations (`graphql_envelop_request` and
 * `graphql_envelop_request_duration` by operation name and type, the names and labels of Yoga's
 * Prometheus plugin), the process's default metrics, and the server's own: errors by
 * `extensions.code`, live subscriptions and WebSocket connections, events published, delivered
 * and their delivery lag, and the database's and pub/sub's round trips.
 *
 * Counting is the same on every path a request can take. The operation metrics live on envelop's
 * execute and subscribe hooks only, which the HTTP fast path runs as Yoga does (and a request it
 * hands over has executed nothing yet); a document that does not parse or validate executes
 * nothing and is not counted there. Errors are counted where a result leaves the server: Yoga's
 * `onResultProcess`, the fast path's answer (`countResult`, declared with `fastPathCovers`) and
 * graphql-ws (`countResult` and `countErrors`).
 */
export class ServerMetrics {
  readonly registry = new Registry();
  private sources: MetricsSources | null = null;
  private readonly errors = new Counter({
    name: 'session_graph_graphql_errors_total',
    help: 'GraphQL errors sent to clients, by extensions.code',
    labelNames: ['code'],
    registers: [this.registry],
  });
  private readonly published = new Counter({
    name: 'session_graph_events_published_total',
    help: 'Session events this instance published (after their transaction committed)',
    registers: [this.registry],
  });
  private readonly delivered = new Counter({
    name: 'session_graph_events_delivered_total',
    help: "Session events handed to this instance's subscriber streams (one per stream)",
    registers: [this.registry],
  });
  private readonly lag = new Histogram({
    name: 'session_graph_event_delivery_lag_seconds',
    help: "From an event's write to its arrival at this instance's subscriber streams",
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [this.registry],
  });
  private readonly requests = new Counter({
    name: 'graphql_envelop_request',
    help: 'GraphQL operations executed: queries and mutations, and subscriptions over SSE when they end',
    labelNames: ['operationName', 'operationType'],
    registers: [this.registry],
  });
  private readonly durations = new Histogram({
    name: 'graphql_envelop_request_duration',
    help: 'Execution time of the operations counted by graphql_envelop_request, seconds',
    labelNames: ['operationName', 'operationType'],
    registers: [this.registry],
  });
  /** Each document's series, by the request's `operationName` ('' for none) when the document has it: one lookup per operation. */
  private readonly seriesByDocument = new WeakMap<DocumentNode, Map<string, OperationSeries>>();
  /** Series by `type name`, at most `maxOperationSeries` of them plus one `OTHER_OPERATIONS` per type. */
  private readonly series = new Map<string, OperationSeries>();

  /** What the event bus reports (see `BusObserver`). */
  readonly bus: BusObserver = {
    published: () => this.published.inc(),
    delivered: (event, listeners) => {
      this.delivered.inc(listeners);
      const written = Date.parse(event.createdAt);
      if (!Number.isNaN(written)) this.lag.observe(Math.max(0, Date.now() - written) / 1000);
    },
  };

  constructor(
    private readonly token: string | null,
    private readonly maxOperationSeries = MAX_OPERATION_SERIES,
  ) {
    collectDefaultMetrics({ register: this.registry });
    const sources = () => this.sources;
    new Gauge({
      name: 'session_graph_live_subscriptions',
      help: 'Open subscriptions (SSE and WebSocket)',
      registers: [this.registry],
      collect() {
        this.set(sources()?.liveSubscriptions() ?? 0);
      },
    });
    new Gauge({
      name: 'session_graph_websocket_connections',
      help: 'Open graphql-ws connections',
      registers: [this.registry],
      collect() {
        this.set(sources()?.webSocketConnections() ?? 0);
      },
    });
    // One collect measures both dependencies and sets both gauges; it runs first, being registered first.
    const roundTrip = () => tripGauge;
    new Gauge({
      name: 'session_graph_dependency_up',
      help: 'Whether the dependency answered a round trip at this scrape (1) or not (0)',
      labelNames: ['dependency'],
      registers: [this.registry],
      async collect() {
        const found = sources();
        if (!found) return;
        const measure = async (dependency: string, ping: () => Promise<void>) => {
          const start = performance.now();
          const ok = await within(ping(), found.timeoutMs).then(
            () => 1,
            () => 0,
          );
          this.set({ dependency }, ok);
          roundTrip().set({ dependency }, ok ? (performance.now() - start) / 1000 : found.timeoutMs / 1000);
        };
        await Promise.all([measure('database', found.pingDatabase), measure('pubsub', found.pingPubSub)]);
      },
    });
    replicaMetrics(this.registry, () => sources()?.replicas ?? null);
    const tripGauge = new Gauge({
      name: 'session_graph_dependency_round_trip_seconds',
      help: 'Round-trip time of a ping to the dependency at this scrape (the timeout when it did not answer)',
      labelNames: ['dependency'],
      registers: [this.registry],
    });
  }

  /** Connects the gauges to the running server. */
  attach(sources: MetricsSources) {
    this.sources = sources;
  }

  /**
   * Lets go of the closed server: prom-client's default metrics (`collectDefaultMetrics`) keep
   * their collectors for the process's life (a GC observer, an event-loop delay monitor), and
   * through them this registry; emptied and detached, the registry no longer holds the gauges'
   * sources (the database, the pub/sub). A process that builds many apps (the tests) keeps none.
   */
  detach() {
    this.sources = null;
    this.registry.clear();
  }

  /** Counts the errors of a result sent to a client. */
  countResult(result: ExecutionResult) {
    if (result.errors?.length) this.countErrors(result.errors);
  }

  countErrors(errors: readonly { extensions?: Record<string, unknown> }[]) {
    for (const error of errors) this.errors.inc({ code: String(error.extensions?.code ?? 'UNKNOWN') });
  }

  /** The series an execution of `operationName` in `document` counts in (its name as Yoga's Prometheus plugin labels it). */
  private seriesOf(document: DocumentNode, operationName: string | null | undefined): OperationSeries {
    let byName = this.seriesByDocument.get(document);
    if (!byName) this.seriesByDocument.set(document, (byName = new Map()));
    const key = operationName ?? '';
    let found = byName.get(key);
    if (found) return found;
    const operation = getOperationAST(document, operationName);
    const type = operation?.operation ?? 'query';
    let name = operation ? operationName || operation.name?.value || 'Anonymous' : OTHER_OPERATIONS;
    if (name.length > MAX_OPERATION_NAME_CHARS) name = OTHER_OPERATIONS;
    if (!this.series.has(`${type} ${name}`) && this.series.size >= this.maxOperationSeries) name = OTHER_OPERATIONS;
    const id = `${type} ${name}`;
    found = this.series.get(id);
    if (!found) {
      found = { count: this.requests.labels(name, type), time: this.durations.labels(name, type) };
      this.series.set(id, found);
    }
    // Kept per document only for a name the document has: a client can send any name with a cached
    // document, and such a request executes nothing but an error.
    if (operation) byName.set(key, found);
    return found;
  }

  /** The app's plugins: the operation metrics, the error count, and the `/metrics` endpoint. */
  plugins(): Plugin[] {
    // A subscription (over SSE: graphql-ws's run outside envelop) is counted when it ends, as the
    // time it was open; an operation refused before it started streaming, at once.
    const started = (args: { document: DocumentNode; operationName?: string | null }) => {
      const series = this.seriesOf(args.document, args.operationName);
      const start = performance.now();
      return ({ result }: { result: unknown }) => {
        if (!isAsyncIterable(result)) return finish(series, start);
        return { onEnd: () => finish(series, start) };
      };
    };
    const operations: Plugin = {
      onExecute: ({ args }) => ({ onExecuteDone: started(args) }),
      onSubscribe: ({ args }) => ({ onSubscribeResult: started(args) }),
    };
    // The fast path counts the results it answers with the same `countResult`.
    const errors = fastPathCovers<Plugin>(
      {
        onResultProcess: ({ result }) => {
          if (Array.isArray(result)) for (const one of result) this.countResult(one);
          else if (!isAsyncIterable(result)) this.countResult(result as ExecutionResult);
        },
      },
      ['onResultProcess'],
    );
    return [operations, errors, this.endpoint()];
  }

  /**
   * `/metrics` in Prometheus text. With a token: `Authorization: Bearer <token>` required, 401
   * without one, 403 with another. The fast path takes only POSTs to the GraphQL endpoint.
   */
  private endpoint(): Plugin {
    const expected = this.token === null ? null : digest(this.token);
    return fastPathCovers<Plugin>(
      {
        onRequest: async ({ url, request, fetchAPI, endResponse }) => {
          if (url.pathname !== METRICS_PATH) return;
          if (expected) {
            const sent = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get('authorization') ?? '')?.[1];
            if (!sent) {
              return endResponse(
                new fetchAPI.Response('Send the metrics token as `Authorization: Bearer <METRICS_TOKEN>`.\n', {
                  status: 401,
                  headers: { 'content-type': 'text/plain', 'www-authenticate': 'Bearer realm="metrics"' },
                }),
              );
            }
            if (!timingSafeEqual(digest(sent), expected)) {
              return endResponse(
                new fetchAPI.Response('This is not the metrics token.\n', { status: 403, headers: { 'content-type': 'text/plain' } }),
              );
            }
          }
          const text = await this.registry.metrics();
          endResponse(new fetchAPI.Response(text, { status: 200, headers: { 'content-type': this.registry.contentType } }));
        },
      },
      ['onRequest'],
    );
  }
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * With read replicas: statements by where they ran (`target`: primary, replica, and `fallback` for
 * those that failed on a replica and ran again on the primary), and whether each replica serves
 * reads now (0: down or lagging, skipped).
 */
function replicaMetrics(registry: Registry, replicas: () => ReplicaSet | null) {
  new Counter({
    name: 'session_graph_database_queries_total',
    help: 'Statements sent with read replicas configured, by target: primary, replica, fallback (failed on a replica, run again on the primary)',
    labelNames: ['target'],
    registers: [registry],
    collect() {
      const set = replicas();
      this.reset();
      if (!set) return;
      this.inc({ target: 'primary' }, set.counts.primary);
      this.inc({ target: 'replica' }, set.counts.replica);
      this.inc({ target: 'fallback' }, set.counts.fallbacks);
    },
  });
  new Gauge({
    name: 'session_graph_replica_serving',
    help: 'Whether the read replica serves reads (1) or is skipped as down or lagging past REPLICA_MAX_LAG_MS (0)',
    labelNames: ['replica'],
    registers: [registry],
    collect() {
      this.reset();
      for (const replica of replicas()?.replicas ?? []) this.set({ replica: String(replica.index) }, replica.problem === null ? 1 : 0);
    },
  });
}
