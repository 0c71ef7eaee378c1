/**
 * Scenario `gauge`: `Session.contextGauge` must be cheap enough for a UI to poll (issue 47: < 5 ms at
 * 10,000 messages on PostgreSQL), since it sums stored counts instead of assembling. Beside it, an
 * unbudgeted assembleContext of the same session (what a client polled before the gauge existed).
 */
import { median, p95, round, type Row, type Scenario } from '../lib.js';

const WARMUP = 5;
const ITERATIONS = 50;

const GAUGE = `query ($id: ID!) {
  node(id: $id) { ... on Session { contextGauge(model: "claude-sonnet-4-5", format: ANTHROPIC_MESSAGES) { usedTokens maxTokens messagesUntilDrop byRole { user assistant } } } }
}`;

/** The same read without the gauge: what the node and GraphQL cost alone, at the same moment. */
const NODE = `query ($id: ID!) { node(id: $id) { ... on Session { messageCount } } }`;

const ASSEMBLE = `mutation ($id: ID!) { assembleContext(input: { sessionId: $id, format: ANTHROPIC_MESSAGES }) { tokenCount } }`;

interface GaugeResult {
  node: { contextGauge: { usedTokens: number; maxTokens: number; messagesUntilDrop: number } };
}

const gauge: Scenario = {
  name: 'gauge',
  description: 'contextGauge latency at 10,000 messages (polled: rows cached), against an unbudgeted assembleContext of the same session',
  smoke: true,
  async run(ctx) {
    const rows: Row[] = [];
    const size = ctx.smoke ? 1_000 : 10_000;
    const label = ctx.smoke ? '1k' : '10k';
    const session = await ctx.seedSession({ title: `gauge ${label}`, messages: size, tokens: 200 });
    // The first call reads every row; the next ones find them in the rows cache (what polling sees).
    const cold = await ctx.time(() => ctx.gql<GaugeResult>(GAUGE, { id: session.id }));
    const { contextGauge } = cold.result.node;
    // 200 tokens and 4 of framing a message, 3 of reply priming.
    if (contextGauge.usedTokens !== size * 204 + 3) throw new Error(`unexpected gauge: ${JSON.stringify(contextGauge)}`);
    const assembled = await ctx.gql<{ assembleContext: { tokenCount: number } }>(ASSEMBLE, { id: session.id });
    if (assembled.assembleContext.tokenCount !== contextGauge.usedTokens) {
      throw new Error(`gauge ${contextGauge.usedTokens} != assembled ${assembled.assembleContext.tokenCount}`);
    }
    const { count } = await ctx.countQueries(() => ctx.gql(GAUGE, { id: session.id }));

    const samples = { gauge: [] as number[], node: [] as number[], assemble: [] as number[] };
    ctx.collectGarbage();
    for (let i = 0; i < WARMUP + ITERATIONS; i++) {
      const g = await ctx.time(() => ctx.gql(GAUGE, { id: session.id }));
      const n = await ctx.time(() => ctx.gql(NODE, { id: session.id }));
      // Fewer assemblies: each builds the whole payload.
      const a = i % 5 === 0 ? await ctx.time(() => ctx.gql(ASSEMBLE, { id: session.id })) : null;
      if (i >= WARMUP) {
        samples.gauge.push(g.ms);
        samples.node.push(n.ms);
        if (a) samples.assemble.push(a.ms);
      }
    }
    rows.push(
      {
        metric: `gauge.${label}.median`,
        value: round(median(samples.gauge)),
        unit: 'ms',
        // Issue 47: cheap enough to poll, on PostgreSQL.
        target: ctx.backend === 'postgres' && !ctx.smoke ? { op: '<', value: 5 } : null,
        note: `contextGauge over ${size.toLocaleString('en-US')} messages (model default budget), in process, ${ITERATIONS} calls`,
      },
      { metric: `gauge.${label}.p95`, value: round(p95(samples.gauge)), unit: 'ms', note: 'the same calls' },
      {
        metric: `gauge.${label}.node_median`,
        value: round(median(samples.node)),
        unit: 'ms',
        note: 'the same node read without contextGauge, each right after a gauge call (the floor under it)',
      },
      {
        metric: `gauge.${label}.cold`,
        value: round(cold.ms),
        unit: 'ms',
        note: 'the first call, every light row read (one call, no target)',
      },
      {
        metric: 'gauge.statements',
        value: count,
        unit: 'statements',
        note: 'a polled session with nothing new: its node only (the settled gauge is kept until a message, transform or compaction)',
      },
      {
        metric: `gauge.${label}.assemble_median`,
        value: round(median(samples.assemble)),
        unit: 'ms',
        note: 'assembleContext of the same session without maxTokens (what the gauge spares)',
      },
    );
    return rows;
  },
};

export default gauge;
