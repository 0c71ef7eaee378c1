import { AsyncLocalStorage } from 'node:async_hooks';
import type { Span } from '@opentelemetry/api';
import type { Plugin } from 'graphql-yoga';
import { getOperationAST } from 'graphql';

/** Longest statement text put on a span. */
const MAX_STATEMENT_CHARS = 2_000;

/** OpenTelemetry traces of the app: a span per executed operation, and its database statements under it. */
export interface Tracing {
  /** The envelop plugin that opens a span around each query and mutation (after the app's own plugins). */
  plugin: Plugin;
  /** Starts the span of a statement sent while an operation runs (null outside one); returns its end. */
  statementSpan(sql: string): (() => void) | undefined;
  /** Sends every finished span now. */
  flush(): Promise<void>;
  /** Flushes and stops the exporter. */
  shutdown(): Promise<void>;
}

/**
 * Whether traces are wanted: OpenTelemetry's own variables, `OTEL_EXPORTER_OTLP_ENDPOINT` (the
 * exporter adds `/v1/traces`) or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; `OTEL_SDK_DISABLED=true`
 * turns them off. Unset: `startTracing` is never imported, and nothing of OpenTelemetry is loaded.
 */
export const tracingWanted = (env: NodeJS.ProcessEnv) =>
  env.OTEL_SDK_DISABLED?.trim().toLowerCase() !== 'true' &&
  Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());

/**
 * Starts exporting traces over OTLP/HTTP (JSON). Loads OpenTelemetry's SDK and exporter here, on
 * demand. `url` overrides the exporter's own reading of the OTEL_EXPORTER_OTLP_* variables (tests);
 * the service is `OTEL_SERVICE_NAME`, else `session-graph`. Registers nothing globally: the tracer
 * and the current operation live here, so two apps in one process trace apart.
 */
export async function startTracing(options: { url?: string; serviceName?: string } = {}): Promise<Tracing> {
  const [api, sdk, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const exporter = new OTLPTraceExporter(options.url ? { url: options.url } : {});
  const provider = new sdk.BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName ?? process.env.OTEL_SERVICE_NAME ?? 'session-graph' }),
    spanProcessors: [new sdk.BatchSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('session-graph');
  const operation = new AsyncLocalStorage<Span>();

  const plugin: Plugin = {
    onExecute({ args, executeFn, setExecuteFn }) {
      const ast = getOperationAST(args.document, args.operationName);
      const type = ast?.operation ?? 'query';
      const name = ast?.name?.value;
      const span = tracer.startSpan(name ? `${type} ${name}` : type, {
        kind: api.SpanKind.SERVER,
        attributes: { 'graphql.operation.type': type, ...(name ? { 'graphql.operation.name': name } : {}) },
      });
      setExecuteFn((executeArgs) => operation.run(span, () => executeFn(executeArgs)));
      return {
        onExecuteDone({ result }) {
          const errors = (result as { errors?: readonly { extensions?: Record<string, unknown> }[] }).errors;
          if (errors?.length) {
            span.setStatus({ code: api.SpanStatusCode.ERROR });
            span.setAttribute(
              'graphql.error.codes',
              errors.map((e) => String(e.extensions?.code ?? 'UNKNOWN')),
            );
          }
          span.end();
        },
      };
    },
  };

  return {
    plugin,
    statementSpan(sql) {
      const parent = operation.getStore();
      if (!parent) return undefined;
      const span = tracer.startSpan(
        'db.statement',
        { kind: api.SpanKind.CLIENT, attributes: { 'db.system': 'postgresql', 'db.statement': sql.slice(0, MAX_STATEMENT_CHARS) } },
        api.trace.setSpan(api.ROOT_CONTEXT, parent),
      );
      return () => span.end();
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
