import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTracing, tracingWanted, type Tracing } from '../../src/graphql/tracing.js';
import { backend, createTestApp, dropTestDatabases, gql, gqlOk, type TestApp } from '../helpers/app.js';
import { CreateSession } from '../helpers/documents.js';

interface ExportedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: { key: string; value: { stringValue?: string } }[];
}

/** A local OTLP/HTTP receiver: collects the spans of every JSON trace export it is sent. */
class OtlpReceiver {
  readonly spans: ExportedSpan[] = [];
  private server: Server | undefined;
  url = '';

  async start() {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        const exported = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: ExportedSpan[] }[] }[] };
        for (const resource of exported.resourceSpans) for (const scope of resource.scopeSpans) this.spans.push(...scope.spans);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1/traces`;
  }

  stop() {
    return new Promise((resolve) => this.server?.close(resolve));
  }
}

const attribute = (span: ExportedSpan, key: string) => span.attributes.find((a) => a.key === key)?.value.stringValue;

describe(`OpenTelemetry traces (${backend.label})`, () => {
  const receiver = new OtlpReceiver();
  let tracing: Tracing;
  let app: TestApp;
  beforeAll(async () => {
    await receiver.start();
    tracing = await startTracing({ url: receiver.url, serviceName: 'session-graph-test' });
    app = await createTestApp({ tracing });
  });
  afterAll(async () => {
    await app?.close();
    await receiver.stop();
    await dropTestDatabases();
  });

  it('are wanted only when an OTLP endpoint is configured through OpenTelemetry’s own variables', () => {
    expect(tracingWanted({})).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false);
  });

  it('export a span per operation, on the fast path and Yoga’s, with its database statements under it', async () => {
    await gqlOk(app, CreateSession, { input: { title: 'traced', messages: [{ role: 'USER', text: 'hi' }] } });
    await gql(app, 'query ListTraced { sessions(first: 3) { totalCount edges { node { title } } } }', undefined, {
      headers: { origin: 'http://browser.example' },
    });
    await tracing.flush();
    const operations = receiver.spans.filter((span) => attribute(span, 'graphql.operation.type'));
    expect(operations.map((span) => span.name).sort()).toEqual(['mutation CreateSession', 'query ListTraced']);
    for (const operation of operations) {
      const statements = receiver.spans.filter((span) => span.parentSpanId === operation.spanId);
      expect(statements.length, operation.name).toBeGreaterThan(0);
      expect(statements.every((span) => span.name === 'db.statement' && span.traceId === operation.traceId)).toBe(true);
      expect(statements.some((span) => /"Session"/.test(attribute(span, 'db.statement') ?? ''))).toBe(true);
    }
  });
});
