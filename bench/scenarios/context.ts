import { monitorEventLoopDelay } from 'node:perf_hooks';
import { countStoredTokens } from '../../src/domain/tokens.js';
import type { StoredPart } from '../../src/domain/types.js';
import { uuidv7 } from '../../src/db/ids.js';
import { parseGlobalId } from '../../src/schema/ids.js';
import { median, p95, round, type Scenario } from '../lib.js';

const MESSAGES = 10_000;
const BUDGET = 128_000;
const RUNS = 30;
const WARMUP = 15;
/** The long session of the 1M-token row: the stored session's conversation repeated to 100,000 messages. */
const LONG_MESSAGES = 100_000;
const LONG_BUDGET = 1_000_000;
/** The stored session's messages [0, LONG_PERIOD) make up the long one: a multiple of 6, so its tool rounds stay whole. */
const LONG_PERIOD = MESSAGES - (MESSAGES % 6);
const LONG_RUNS = 20;
/** As many as the 128k rows: the first runs of a 6,500-message window still warm the JIT up. */
const LONG_WARMUP = 15;

/*
 * Sizes follow what agent sessions look like: short user turns, assistant answers of a few hundred
 * tokens (often with code), tool results of several hundred (file contents, JSON). Average about
 * 250 o200k tokens a message; the report gives the exact figure.
 */
const CODE_LINES = [
  'export async function loadOrders(db: Db, customerId: string): Promise<Order[]> {',
  '  const rows = await db.query("SELECT * FROM orders WHERE customer_id = $1 ORDER BY created_at DESC", [customerId]);',
  '  return rows.map((row) => ({ id: row.id, total: Number(row.total), items: JSON.parse(row.items) }));',
  '}',
  'const totals = orders.reduce((sum, order) => sum + order.total, 0);',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: sample source code, not a template
  'if (totals > LIMIT) throw new Error(`limit exceeded for ${customerId}: ${totals}`);',
];
const PROSE = [
  'The quarterly report shows revenue growing in every region, with the strongest gains in the north where the new distribution centre opened in March.',
  'We should keep the retry budget small, because every retry doubles the load on the upstream service during an incident.',
  'Caching the lookup in memory removes most of the latency, but the cache has to be invalidated when an order is refunded.',
  'The migration can run online: the new column is nullable, the backfill runs in batches, and the constraint is added last.',
];
const pick = <T>(list: T[], i: number, k: number) => list[(i * 7 + k * 3) % list.length];
const prose = (i: number, sentences: number) => Array.from({ length: sentences }, (_, k) => pick(PROSE, i, k)).join(' ');
const code = (i: number, lines: number) => Array.from({ length: lines }, (_, k) => pick(CODE_LINES, i, k)).join('\n');
const json = (i: number, items: number) =>
  JSON.stringify({
    query: `orders for customer ${i}`,
    results: Array.from({ length: items }, (_, k) => ({
      id: `ord_${i}_${k}`,
      total: (i * 13 + k * 7) % 1000,
      currency: 'EUR',
      status: k % 3 ? 'paid' : 'refunded',
      items: [{ sku: `SKU-${k}`, qty: (k % 4) + 1 }],
    })),
  });

/** Message i of a mixed conversation: prose, code, JSON and tool rounds (call then result). */
function messageAt(i: number): { role: 'USER' | 'ASSISTANT' | 'TOOL'; parts: StoredPart[] } {
  switch (i % 6) {
    case 0:
      return { role: 'USER', parts: [{ type: 'text', text: `${prose(i, 1 + (i % 3))} What should we change next?` }] };
    case 1:
      return {
        role: 'ASSISTANT',
        parts: [{ type: 'text', text: `${prose(i, 3)}\n\n\`\`\`ts\n${code(i, 12 + (i % 10))}\n\`\`\`\n${prose(i + 1, 2)}` }],
      };
    case 2:
      return { role: 'USER', parts: [{ type: 'text', text: `Here is what the API returned: ${json(i, 2)} Does that look right?` }] };
    case 3:
      return {
        role: 'ASSISTANT',
        parts: [
          { type: 'text', text: 'Let me look up the orders.' },
          // As the server stores a tool call since its arguments are kept byte for byte: the text beside the value.
          {
            type: 'toolCall',
            callId: `call-${i}`,
            name: 'search_orders',
            arguments: { customer: `c-${i}`, limit: 20 },
            argumentsJson: JSON.stringify({ customer: `c-${i}`, limit: 20 }),
          },
        ],
      };
    case 4:
      return { role: 'TOOL', parts: [{ type: 'toolResult', callId: `call-${i - 1}`, content: json(i, 10 + (i % 8)), isError: false }] };
    default:
      return { role: 'ASSISTANT', parts: [{ type: 'text', text: prose(i, 6 + (i % 5)) }] };
  }
}

const ASSEMBLE = `mutation ($id: ID!) {
  assembleContext(input: { sessionId: $id, maxTokens: ${BUDGET}, format: OPENAI_CHAT }) { tokenCount truncated droppedMessageCount contextHash }
}`;

const ASSEMBLE_1M = `mutation ($id: ID!) {
  assembleContext(input: { sessionId: $id, maxTokens: ${LONG_BUDGET}, format: OPENAI_CHAT }) { tokenCount truncated droppedMessageCount contextHash }
}`;

/** The same with the payload (what a client sends its model): the response's size. */
const ASSEMBLE_1M_PAYLOAD = `mutation ($id: ID!) {
  assembleContext(input: { sessionId: $id, maxTokens: ${LONG_BUDGET}, format: OPENAI_CHAT }) { tokenCount payload }
}`;

const APPEND = `mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { session { messageCount } } }`;

export default {
  name: 'context',
  description: `assembleContext of a ${MESSAGES.toLocaleString('en')}-message session (text, code, JSON, tool rounds) at a ${BUDGET.toLocaleString('en')}-token budget, with stored token counts and with every message recounted.`,
  async run(ctx) {
    const prisma = ctx.app.runtime.db.prisma;
    /** A session holding the generated conversation; `counted: false` stores no token counts (legacy rows). */
    const seed = async (counted: boolean) => {
      const created = await ctx.gql<{ createSession: { id: string } }>(
        `mutation { createSession(input: { title: "context bench${counted ? '' : ', no counts'}" }) { id } }`,
      );
      const id = created.createSession.id;
      const rawId = parseGlobalId(id, 'Session', 'id');
      ctx.log(`context: seeding ${MESSAGES} messages ${counted ? 'with' : 'without'} their token counts`);
      let o200k = 0;
      const rows = Array.from({ length: MESSAGES }, (_, i) => {
        const { role, parts } = messageAt(i);
        const tokens = countStoredTokens(parts);
        o200k += tokens.O200K_BASE;
        return {
          id: uuidv7(),
          sessionId: rawId,
          position: i,
          role,
          parts: parts as never,
          text: parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n'),
          toolCallIds: parts.flatMap((p) => (p.type === 'toolCall' ? [p.callId] : [])),
          toolResultIds: parts.flatMap((p) => (p.type === 'toolResult' ? [p.callId] : [])),
          tokensO200k: counted ? tokens.O200K_BASE : null,
          tokensCl100k: counted ? tokens.CL100K_BASE : null,
        };
      });
      for (let i = 0; i < rows.length; i += 2_000) await prisma.message.createMany({ data: rows.slice(i, i + 2_000) });
      await prisma.session.update({ where: { id: rawId }, data: { messageCount: MESSAGES } });
      return { id, averageTokens: o200k / MESSAGES };
    };
    // Two sessions with the same messages: one as the server writes them (counted once, when
    // written), one without counts, so that every message is tokenized again on each call.
    const storedSession = await seed(true);
    const recountSession = await seed(false);
    const averageTokens = storedSession.averageTokens;

    const measure = async (id: string) => {
      const samples: number[] = [];
      let last: { assembleContext: { tokenCount: number; contextHash: string } } | null = null;
      ctx.collectGarbage();
      for (let run = 0; run < RUNS + WARMUP; run++) {
        const { ms, result } = await ctx.time(() => ctx.gql(ASSEMBLE, { id }));
        if (run >= WARMUP) samples.push(ms);
        last = result as typeof last;
      }
      // BENCH_DEBUG=1 prints every sample (to see warm-up and GC pauses).
      if (process.env.BENCH_DEBUG) ctx.log(samples.map((x) => x.toFixed(1)).join(' '));
      return { samples, last: last!.assembleContext };
    };

    /**
     * The long session: the stored session's messages [0, LONG_PERIOD) repeated, call ids made
     * unique per repetition; their stored counts are copied (a renamed call id may differ by a
     * token, which the figures do not feel).
     */
    const seedLong = async (fromId: string) => {
      const created = await ctx.gql<{ createSession: { id: string } }>(
        'mutation { createSession(input: { title: "context bench, 1M" }) { id } }',
      );
      const id = created.createSession.id;
      const rawId = parseGlobalId(id, 'Session', 'id');
      const from = parseGlobalId(fromId, 'Session', 'id');
      const started = performance.now();
      await prisma.$executeRaw`
        INSERT INTO "Message" (id, "sessionId", position, role, parts, text, "toolCallIds", "toolResultIds",
                               generating, "tokensO200k", "tokensCl100k", "createdAt", "updatedAt")
        SELECT gen_random_uuid()::text, ${rawId}, k * ${LONG_PERIOD}::int + m.position, m.role,
               CASE WHEN cardinality(m."toolCallIds") + cardinality(m."toolResultIds") > 0
                    THEN replace(m.parts::text, '"call-', '"call-' || k || '-')::jsonb ELSE m.parts END,
               m.text,
               ARRAY(SELECT replace(c, 'call-', 'call-' || k || '-') FROM unnest(m."toolCallIds") c),
               ARRAY(SELECT replace(c, 'call-', 'call-' || k || '-') FROM unnest(m."toolResultIds") c),
               false, m."tokensO200k", m."tokensCl100k", m."createdAt", m."updatedAt"
        FROM "Message" m, generate_series(0, ${Math.ceil(LONG_MESSAGES / LONG_PERIOD)}::int) AS k
        WHERE m."sessionId" = ${from} AND m.position < ${LONG_PERIOD}::int AND k * ${LONG_PERIOD}::int + m.position < ${LONG_MESSAGES}::int`;
      await prisma.session.update({ where: { id: rawId }, data: { messageCount: LONG_MESSAGES } });
      await prisma.$executeRawUnsafe('ANALYZE "Message"');
      ctx.log(`context: ${LONG_MESSAGES} messages copied in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      return id;
    };

    /** Times `fn` and the longest the event loop was held in one piece meanwhile (the in-process client's own work included). */
    const measureBlocking = async <T>(fn: () => Promise<T>, runs: number, warmup: number) => {
      const samples: number[] = [];
      const delay = monitorEventLoopDelay({ resolution: 1 });
      let last: T | undefined;
      ctx.collectGarbage();
      for (let run = 0; run < runs + warmup; run++) {
        if (run === warmup) delay.enable();
        // Back to the event loop between calls, as between requests, so a stall is one call's at most.
        await new Promise((resolve) => setImmediate(resolve));
        const { ms, result } = await ctx.time(fn);
        if (run >= warmup) samples.push(ms);
        last = result;
      }
      delay.disable();
      if (process.env.BENCH_DEBUG) ctx.log(samples.map((x) => x.toFixed(1)).join(' '));
      return { samples, last: last as T, maxBlockMs: delay.max / 1e6 };
    };

    const stored = await measure(storedSession.id);
    const recount = await measure(recountSession.id);
    if (recount.last.contextHash !== stored.last.contextHash) throw new Error('recounting changed the assembled context');

    // A 1M-token budget over a 100,000-message session: the window is paged newest first on the
    // stored counts, so the cost follows the budget (a few thousand messages), not the session.
    const long = await seedLong(storedSession.id);
    // The first assembly reads the window's rows and parts from the database (nothing cached yet).
    const first = await ctx.time(() => ctx.gql(ASSEMBLE_1M, { id: long }));
    const longRun = await measureBlocking(() => ctx.gql(ASSEMBLE_1M, { id: long }), LONG_RUNS, LONG_WARMUP);
    const payloadRun = await measureBlocking(
      async () => Buffer.byteLength(JSON.stringify(await ctx.gql(ASSEMBLE_1M_PAYLOAD, { id: long }))),
      5,
      1,
    );
    const longLast = longRun.last as { assembleContext: { tokenCount: number; droppedMessageCount: number } };

    // As an agent loop uses it: a question and an answer are appended (not timed) before each
    // assembly, so every call reads new messages and the window slides.
    const incremental: number[] = [];
    ctx.collectGarbage();
    for (let run = 0; run < RUNS + WARMUP; run++) {
      const i = MESSAGES + 2 * run;
      await ctx.gql(APPEND, {
        input: {
          sessionId: storedSession.id,
          messages: [
            { role: 'ASSISTANT', text: `${prose(i, 3)}\n\n\`\`\`ts\n${code(i, 12)}\n\`\`\`` },
            { role: 'USER', text: `${prose(i + 1, 2)} What should we change next?` },
          ],
        },
      });
      const { ms } = await ctx.time(() => ctx.gql(ASSEMBLE, { id: storedSession.id }));
      if (run >= WARMUP) incremental.push(ms);
    }

    const storedMedian = median(stored.samples);
    const recountMedian = median(recount.samples);
    return [
      {
        metric: 'assemble.stored.median',
        value: round(storedMedian, 2),
        unit: 'ms',
        target: ctx.backend === 'postgres' ? { op: '<', value: 50 } : null,
        note: `${stored.last.tokenCount} tokens assembled`,
      },
      { metric: 'assemble.stored.p95', value: round(p95(stored.samples), 2), unit: 'ms' },
      {
        metric: 'assemble.incremental.median',
        value: round(median(incremental), 2),
        unit: 'ms',
        note: 'two messages appended before each call (not timed)',
      },
      {
        metric: 'assemble.1m.median',
        value: round(median(longRun.samples), 2),
        unit: 'ms',
        target: ctx.backend === 'postgres' ? { op: '<', value: 50 } : null,
        note: `maxTokens ${LONG_BUDGET.toLocaleString('en')} over ${LONG_MESSAGES.toLocaleString('en')} messages: ${longLast.assembleContext.tokenCount} tokens, ${LONG_MESSAGES - longLast.assembleContext.droppedMessageCount} messages kept`,
      },
      { metric: 'assemble.1m.p95', value: round(p95(longRun.samples), 2), unit: 'ms' },
      { metric: 'assemble.1m.first', value: round(first.ms, 2), unit: 'ms', note: 'the first call: rows and parts read from the database' },
      {
        metric: 'assemble.1m.max_block',
        value: round(longRun.maxBlockMs, 1),
        unit: 'ms',
        note: "longest event-loop stall in the timed runs (monitorEventLoopDelay); on PGlite the database runs on this thread, so a call's statements stall it too",
      },
      {
        metric: 'assemble.1m.payload.median',
        value: round(median(payloadRun.samples), 2),
        unit: 'ms',
        note: `with the OPENAI_CHAT payload selected: ${(payloadRun.last / 1e6).toFixed(1)} MB of JSON; longest stall ${round(payloadRun.maxBlockMs, 1)} ms, the in-process client's parse of it included`,
      },
      { metric: 'session.average_tokens_per_message', value: round(averageTokens, 1), unit: 'tokens', note: 'o200k content tokens' },
      {
        metric: 'assemble.recount.median',
        value: round(recountMedian, 2),
        unit: 'ms',
        note: `${RUNS} runs after ${WARMUP} warm-up, as stored`,
      },
      {
        metric: 'assemble.speedup',
        value: round(recountMedian / storedMedian, 2),
        unit: 'ratio',
        target: { op: '>=', value: 10 },
        note: 'recount median / stored median',
      },
    ];
  },
} satisfies Scenario;
