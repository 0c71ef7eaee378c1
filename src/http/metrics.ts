import { createHash, timingSafeEqual } from 'node:crypto';
import type { ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { Counter, collectDefaultMetrics, Gauge, Histogram, isAsyncIterable, Registry, usePrometheus } from '../packages/index.js';
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
}

/** Where `/metrics` answers. */
export const METRICS_PATH = '/metrics';

/**
 * The server's Prometheus metrics, one registry per app: Yoga's Prometheus plugin for operations
 * (`graphql_envelop_request` and `graphql_envelop_request_duration` by operation name and type),
 * the process's default metrics, and the server's own:
 * errors by `extensions.code`, live subscriptions and WebSocket connections, events published,
 * delivered and their delivery lag, and the database's and pub/sub's round trips.
 *
 * Counting is the same on every path a request can take. The operation metrics live on envelop's
 * execute and subscribe hooks only, which the HTTP fast path runs as Yoga does (and a request it
 * hands over has executed nothing yet); the phases the fast path may run once more after handing a
 * request over (parse, validate, context) are not measured. Errors are counted where a result
 * leaves the server: Yoga's `onResultProcess`, the fast path's answer (`countResult`, declared with
 * `fastPathCovers`) and graphql-ws (`countResult` and `countErrors`).
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

  /** What the event bus reports (see `BusObserver`). */
  readonly bus: BusObserver = {
    published: () => this.published.inc(),
    delivered: (event, listeners) => {
      this.delivered.inc(listeners);
      const written = Date.parse(event.createdAt);
      if (!Number.isNaN(written)) this.lag.observe(Math.max(0, Date.now() - written) / 1000);
    },
  };

  constructor(private readonly token: string | null) {
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

  /** Counts the errors of a result sent to a client. */
  countResult(result: ExecutionResult) {
    if (result.errors?.length) this.countErrors(result.errors);
  }

  countErrors(errors: readonly { extensions?: Record<string, unknown> }[]) {
    for (const error of errors) this.errors.inc({ code: String(error.extensions?.code ?? 'UNKNOWN') });
  }

  /** The app's plugins: the operation metrics, the error count, and the `/metrics` endpoint. */
  plugins(): Plugin[] {
    const operations = usePrometheus({
      registry: this.registry,
      // Served below, behind METRICS_TOKEN.
      endpoint: false,
      metrics: {
        graphql_envelop_request: true,
        graphql_envelop_request_duration: true,
        // Off: phases the fast path can run a second time for a request it hands to Yoga (parse,
        // validate, context), Yoga's request hooks it does not run (HTTP duration), the execute and
        // subscribe phases (the request duration already measures them), a summary, and work per
        // request nothing here needs (the deprecated-field walk, resolver timing).
        graphql_envelop_phase_execute: false,
        graphql_envelop_phase_subscribe: false,
        graphql_envelop_phase_parse: false,
        graphql_envelop_phase_validate: false,
        graphql_envelop_phase_context: false,
        graphql_envelop_error_result: false,
        graphql_envelop_request_time_summary: false,
        graphql_envelop_deprecated_field: false,
        graphql_envelop_schema_change: false,
        graphql_envelop_execute_resolver: false,
        graphql_yoga_http_duration: false,
      },
    });
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
