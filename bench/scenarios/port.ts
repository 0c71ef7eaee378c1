/**
 * Scenario `port`: export and import of a long session (issue 48). `GET /export/sessions/<id>`
 * streams a 100,000-message session and `POST /import` takes that stream back, each in constant
 * memory: the peak of the JS heap above its level before the call is measured for a 10,000- and a
 * 100,000-message session, and must not grow with the length (the rows say both). Rates are
 * messages per second, in process (`yoga.fetch`, the body read or sent as a stream).
 */
import { round, type Row, type Scenario } from '../lib.js';

const gc = (globalThis as { gc?: () => void }).gc;

/**
 * `fn` timed, then run again for its memory: the live JS heap (after a full collection, every
 * 250 ms: garbage not yet collected is not memory the call holds) at its highest, above its level
 * before. Two runs, so the collections do not count in the time.
 */
async function measured<T>(fn: () => Promise<T>): Promise<{ result: T; ms: number; peakMb: number }> {
  gc?.();
  const started = performance.now();
  const result = await fn();
  const ms = performance.now() - started;
  gc?.();
  const base = process.memoryUsage().heapUsed;
  let peak = base;
  const timer = setInterval(() => {
    gc?.();
    peak = Math.max(peak, process.memoryUsage().heapUsed);
  }, 250);
  try {
    await fn();
  } finally {
    clearInterval(timer);
  }
  return { result, ms, peakMb: (peak - base) / 2 ** 20 };
}

const port: Scenario = {
  name: 'port',
  description: 'export and import (JSON Lines) of a 10,000- and a 100,000-message session: rates and peak heap above the start',
  smoke: true,
  async run(ctx) {
    const rows: Row[] = [];
    const sizes = ctx.smoke ? [1_000, 5_000] : [10_000, 100_000];
    const fetchApp = (path: string, init?: RequestInit) =>
      (ctx.app.yoga.fetch as (input: string, init?: RequestInit) => Promise<Response>)(`http://localhost${path}`, init);
    for (const size of sizes) {
      const label = size >= 1000 ? `${size / 1000}k` : String(size);
      const session = await ctx.seedSession({ title: `port ${label}`, messages: size, tokens: 3 });
      const exported = await measured(async () => {
        const response = await fetchApp(`/export/sessions/${encodeURIComponent(session.id)}`);
        if (response.status !== 200 || !response.body) throw new Error(`export answered ${response.status}`);
        let bytes = 0;
        let lines = 0;
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          bytes += chunk.length;
          for (const byte of chunk) if (byte === 10) lines++;
        }
        return { bytes, lines };
      });
      // Header, session, messages, end.
      if (exported.result.lines !== size + 3) throw new Error(`export wrote ${exported.result.lines} lines for ${size} messages`);
      const imported = await measured(async () => {
        const source = await fetchApp(`/export/sessions/${encodeURIComponent(session.id)}`);
        const response = await fetchApp('/import', { method: 'POST', body: source.body, duplex: 'half' } as RequestInit);
        const body = (await response.json()) as { sessions?: { id: string }[] };
        if (response.status !== 200 || body.sessions?.length !== 1)
          throw new Error(`import answered ${response.status}: ${JSON.stringify(body)}`);
        return body.sessions[0].id;
      });
      const check = await ctx.gql<{ node: { messageCount: number } }>(
        'query ($id: ID!) { node(id: $id) { ... on Session { messageCount } } }',
        {
          id: imported.result,
        },
      );
      if (check.node.messageCount !== size) throw new Error(`imported ${check.node.messageCount} of ${size} messages`);
      const mb = round(exported.result.bytes / 2 ** 20);
      rows.push(
        {
          metric: `port.export.${label}.rate`,
          value: round(size / (exported.ms / 1000)),
          unit: 'messages/s',
          note: `GET /export/sessions/<id> of ${size.toLocaleString('en-US')} messages (${mb} MiB of lines), read as a stream, in process`,
        },
        {
          metric: `port.export.${label}.peak_heap`,
          value: round(exported.peakMb),
          unit: 'MiB',
          note: 'the live JS heap above its level before the export, at its highest (collected and sampled every 250 ms): about one page, whatever the length',
        },
        {
          metric: `port.import.${label}.rate`,
          value: round(size / (imported.ms / 1000)),
          unit: 'messages/s',
          note: 'POST /import of that export, streamed from the export (both in the time): every line checked, then one transaction; the messages imported twice (timed, then measured)',
        },
        {
          metric: `port.import.${label}.peak_heap`,
          value: round(imported.peakMb),
          unit: 'MiB',
          note: 'the live JS heap above its level before, at its highest, export included (the import body is kept in a temporary file past 1 MiB)',
        },
      );
    }
    return rows;
  },
};

export default port;
