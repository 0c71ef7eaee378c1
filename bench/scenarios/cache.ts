import { median, round, type Scenario } from '../lib.js';

/*
 * Issue 47's conversation: 150 turns, the user's about 200 o200k tokens, the assistant's about
 * 400, assembled in ANTHROPIC_MESSAGES at maxTokens 8,000 after each turn, once per cacheStrategy,
 * in two sessions holding the same messages. What a provider's prompt cache can serve of each
 * call is `reusedPrefixTokens`; the rows are its share of the call, and the tokens left to pay at
 * full price, over the calls after the budget first binds.
 */
const TURNS = 150;
const SMOKE_TURNS = 40;
const MAX_TOKENS = 8_000;
const VOCABULARY =
  'the report shows revenue growing in every region with strong gains in the north where a new distribution centre opened so we should keep the retry budget small because each retry doubles load on the upstream service during an incident and caching the lookup removes most latency but must be invalidated when an order is refunded'.split(
    ' ',
  );
const prose = (seed: number, words: number) =>
  Array.from({ length: words }, (_, k) => VOCABULARY[(seed * 13 + k * 7 + ((k * k) % 5)) % VOCABULARY.length]).join(' ');
const userTurn = (t: number) => ({ role: 'USER', text: `Turn ${t}: ${prose(t, 196)}?` });
const assistantTurn = (t: number) => ({ role: 'ASSISTANT', text: `Answer ${t}: ${prose(t + 1_000, 396)}.` });

const CREATE = 'mutation ($input: CreateSessionInput!) { createSession(input: $input) { id } }';
const APPEND = 'mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { session { messageCount } } }';
const ASSEMBLE = `mutation ($id: ID!, $strategy: CacheStrategy!) {
  assembleContext(input: { sessionId: $id, format: ANTHROPIC_MESSAGES, maxTokens: ${MAX_TOKENS}, cacheStrategy: $strategy }) {
    tokenCount reusedPrefixTokens truncated payload
  }
}`;

interface Call {
  tokenCount: number;
  reused: number;
  truncated: boolean;
  marks: number;
  ms: number;
}

export default {
  name: 'cache',
  description: `Prompt-cache reuse: a ${TURNS}-turn conversation (user ~200, assistant ~400 tokens a turn) assembled in ANTHROPIC_MESSAGES at maxTokens ${MAX_TOKENS.toLocaleString('en')} after each turn, cacheStrategy STABLE_PREFIX against NEWEST_FIRST: reusedPrefixTokens / tokenCount, tokens not reused, cache_control marks.`,
  smoke: true,
  async run(ctx) {
    const turns = ctx.smoke ? SMOKE_TURNS : TURNS;
    const strategies = ['STABLE_PREFIX', 'NEWEST_FIRST'] as const;
    const seeded = 8;
    const seed = Array.from({ length: seeded }, (_, t) => [userTurn(t), assistantTurn(t)]).flat();
    const sessions = [];
    for (const strategy of strategies) {
      const created = await ctx.gql<{ createSession: { id: string } }>(CREATE, {
        input: { title: `cache bench ${strategy}`, messages: [...seed, userTurn(seeded)] },
      });
      sessions.push({ strategy, id: created.createSession.id, calls: [] as Call[] });
    }
    ctx.log(`cache: ${turns} turns, assembled after each in both strategies`);
    ctx.collectGarbage();
    for (let t = seeded; t < turns; t++) {
      for (const session of sessions) {
        if (t > seeded) {
          await ctx.gql(APPEND, { input: { sessionId: session.id, messages: [assistantTurn(t - 1), userTurn(t)] } });
        }
        const { ms, result } = await ctx.time(() =>
          ctx.gql<{ assembleContext: { tokenCount: number; reusedPrefixTokens: number; truncated: boolean; payload: unknown } }>(ASSEMBLE, {
            id: session.id,
            strategy: session.strategy,
          }),
        );
        const c = result.assembleContext;
        session.calls.push({
          tokenCount: c.tokenCount,
          reused: c.reusedPrefixTokens,
          truncated: c.truncated,
          marks: JSON.stringify(c.payload).split('"cache_control"').length - 1,
          ms,
        });
      }
    }
    const [stable, newest] = sessions;
    const binds = newest.calls.findIndex((c) => c.truncated);
    if (binds < 0) throw new Error('cache: the budget never bound');
    const sinceBound = (calls: Call[]) => calls.slice(binds + 1);
    const reuse = (calls: Call[]) => median(sinceBound(calls).map((c) => c.reused / c.tokenCount));
    const notReused = (calls: Call[]) => sinceBound(calls).reduce((n, c) => n + c.tokenCount - c.reused, 0);
    const over = [...stable.calls, ...newest.calls].filter((c) => c.tokenCount > MAX_TOKENS).length;
    const calls = sinceBound(stable.calls).length;
    return [
      {
        metric: 'stable.reuse.median',
        value: round(reuse(stable.calls), 3),
        unit: 'ratio',
        target: { op: '>=', value: 0.8 },
        note: `median reusedPrefixTokens / tokenCount over the ${calls} calls after the budget first binds (call ${binds})`,
      },
      { metric: 'newest.reuse.median', value: round(reuse(newest.calls), 3), unit: 'ratio', note: 'the same with NEWEST_FIRST' },
      {
        metric: 'stable.not_reused.share',
        value: round(notReused(stable.calls) / notReused(newest.calls), 3),
        unit: 'ratio',
        target: { op: '<=', value: 0.4 },
        note: `tokens not reused, STABLE_PREFIX / NEWEST_FIRST: ${notReused(stable.calls)} / ${notReused(newest.calls)}`,
      },
      {
        metric: 'marks.max',
        value: Math.max(...[...stable.calls, ...newest.calls].map((c) => c.marks)),
        unit: 'marks',
        target: { op: '<=', value: 4 },
        note: 'cache_control marks in one payload (Anthropic allows 4)',
      },
      { metric: 'over_budget', value: over, unit: 'errors', target: { op: '<=', value: 0 }, note: 'payloads over maxTokens' },
      {
        metric: 'stable.assemble.median',
        value: round(median(stable.calls.map((c) => c.ms)), 2),
        unit: 'ms',
        note: 'each call after two appended messages: session read, window, payload, prefix compared and stored',
      },
      { metric: 'newest.assemble.median', value: round(median(newest.calls.map((c) => c.ms)), 2), unit: 'ms' },
    ];
  },
} satisfies Scenario;
