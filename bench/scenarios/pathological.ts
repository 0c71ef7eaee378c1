/**
 * Scenario `pathological`: the longest event-loop stall each input of issue 11 section 1 causes,
 * sent over real HTTP to a listening app (the rule: nothing blocks the loop for more than 50 ms),
 * and the token counter on long pieces against gpt-tokenizer's own (quadratic) merge.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { clearMergeCache, encode as encodeO200k } from 'gpt-tokenizer/encoding/o200k_base';
import { LONG_TEXT } from '../../src/caches/token-precount.js';
import { createBpeCounter } from '../../src/domain/tokens.js';
import { HUGE_TEXT, pathologicalInputs, sendWhileSampling } from '../../test/helpers/pathological.js';
import { type BenchContext, round, type Row, type Scenario } from '../lib.js';

/** Wall time, and CPU time (the honest figure when the machine is shared and the wall clock is not). */
function timed(fn: () => unknown) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  fn();
  const used = process.cpuUsage(cpu);
  return { wall: performance.now() - started, cpu: (used.user + used.system) / 1000 };
}

const pathological: Scenario = {
  name: 'pathological',
  description:
    'event-loop stall per pathological request (texts at the string cap of the backend, 1 Mi on PostgreSQL and 256 Ki on PGlite; 5 MiB texts refused, fragment bomb, deep nesting); token counting on long pieces',
  async run(ctx) {
    const rows: Row[] = [];
    // A fresh counter and an empty gpt-tokenizer cache: both cache by text, and the scenario runs
    // once per backend in the same process.
    const counter = createBpeCounter('O200K_BASE');
    clearMergeCache();
    for (const n of [10_000, 40_000]) {
      const text = 'x'.repeat(n);
      const before = timed(() => encodeO200k(text, { disallowedSpecial: new Set() }));
      const after = timed(() => counter.count(text));
      rows.push({
        metric: `tokens.x${n / 1000}k.gpt-tokenizer`,
        value: round(before.cpu, 1),
        unit: 'ms cpu',
        note: `one piece, gpt-tokenizer's merge; ${round(before.wall, 0)} ms wall`,
      });
      rows.push({
        metric: `tokens.x${n / 1000}k.heap`,
        value: round(after.cpu, 1),
        unit: 'ms cpu',
        note: `same piece, heap merge; ${round(after.wall, 0)} ms wall`,
      });
    }
    const big = 'x'.repeat(HUGE_TEXT);
    const huge = timed(() => counter.count(big));
    rows.push({ metric: 'tokens.x5MiB.heap', value: round(huge.cpu, 1), unit: 'ms cpu', note: `${round(huge.wall, 0)} ms wall` });

    const url = await ctx.app.listen(0, '127.0.0.1');
    const { createSession } = await ctx.gql<{ createSession: { id: string } }>(
      'mutation { createSession(input: { title: "stall" }) { id } }',
    );
    // Warm up as a running server is: the token worker started, the message insert compiled.
    const cap = ctx.app.runtime.caps.stringLength;
    const [warmUp] = pathologicalInputs(cap);
    await sendWhileSampling(
      url,
      { ...warmUp, variables: (id) => warmUp.variables(id).replace(/x{1000,}/, 'x'.repeat(LONG_TEXT)) },
      createSession.id,
    );
    for (const input of pathologicalInputs(cap)) {
      const { maxStallMs, totalMs, body } = await sendWhileSampling(url, input, createSession.id);
      const answer = body.errors?.[0]?.extensions?.code ?? 'ok';
      const slug = input.name
        .replace(/[^a-z0-9]+/gi, '-')
        .replace(/^-|-$/g, '')
        .toLowerCase();
      rows.push({
        metric: `stall.${slug}`,
        value: round(maxStallMs, 1),
        unit: 'ms',
        target: { op: '<=', value: 50 },
        note: `${answer}; answered in ${round(totalMs, 0)} ms`,
      });
    }
    rows.push(await largeResponse(ctx, url, 10 * 1024 * 1024));
    return rows;
  },
};

/** Aliases of one field the query limits let a document ask for. */
const ALIASES = 30;

/**
 * The longest stall while the server builds and sends the largest answer a client can ask of a
 * session holding `bytes` of message text (messages at the string cap). The client only counts the bytes it reads, so the stall sampled
 * in this shared process is the server's.
 */
async function largeResponse(ctx: BenchContext, url: string, bytes: number): Promise<Row> {
  const { createSession } = await ctx.gql<{ createSession: { id: string } }>(
    'mutation { createSession(input: { title: "large" }) { id } }',
  );
  const text = 'y'.repeat(ctx.app.runtime.caps.stringLength);
  const count = Math.ceil(bytes / text.length);
  for (let i = 0; i < count; i++) {
    await ctx.gql('mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { index } } }', {
      input: { sessionId: createSession.id, messages: [{ role: 'USER', text }] },
    });
  }
  // The worst a client can ask of it: the largest page, text and parts, under as many aliases as
  // the query limits allow; the answer is bounded by the page and request content budgets.
  const page = `messages(first: 500) { edges { node { text parts { ... on TextPart { text } } } } }`;
  const aliases = Array.from({ length: ALIASES }, (_, i) => `p${i}: ${page}`).join(' ');
  const query = `query ($id: ID!) { session(id: $id) { ${aliases} } }`;
  // The document once, on another session, as a client sending it again would have: what a new
  // document costs to check is the other rows' subject; this one measures building the answer.
  const other = await ctx.gql<{ createSession: { id: string } }>('mutation { createSession(input: { title: "warm" }) { id } }');
  await ctx.gql(query, { id: other.createSession.id });
  const body = JSON.stringify({ query, variables: { id: createSession.id } });
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  const started = performance.now();
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  let received = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) received += chunk.length;
  const totalMs = performance.now() - started;
  histogram.disable();
  const mb = round(received / 1024 / 1024, 1);
  return {
    metric: `stall.large-response-${round(bytes / 1024 / 1024, 0)}-mib`,
    value: round(histogram.max / 1e6, 1),
    unit: 'ms',
    target: { op: '<=', value: 50 },
    note: `${count} messages of ${text.length} characters; ${ALIASES} aliases of messages(first: 500) with text and parts, ${mb} MiB answered in ${round(totalMs, 0)} ms`,
  };
}

export default pathological;
