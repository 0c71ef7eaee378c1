/**
 * Scenario `usage`: a reportUsage burst over HTTP from 50 concurrent clients to one turn (distinct
 * callIds), with turnEvents subscribers of the session counting their TurnUsageUpdated deliveries.
 * No call may fail (0 conflict errors) and no delivery may be lost. The raw-driver baseline of the
 * same SQL work is the in-process `turns` scenario's; this one checks the burst end to end.
 */
import type { ProcessScenario, Row } from '../lib.js';
import { median, round } from '../lib.js';
import { CREATE_SESSION, type Round } from './_shared.js';

const START_TURN = `mutation ($input: StartTurnInput!) { startTurn(input: $input) { id } }`;

interface UsageRound extends Round {
  lost: number;
  duplicates: number;
  codes: Record<string, number>;
}

const usage: ProcessScenario = {
  name: 'usage',
  mode: 'process',
  description: 'reportUsage burst from 50 clients to one turn with turnEvents subscribers (0 errors, 0 lost)',
  async run(ctx) {
    const calls = ctx.smoke ? 100 : 2_000;
    const subscribers = ctx.smoke ? 5 : 20;
    const db = await ctx.database();
    const server = await ctx.server(db, { redis: ctx.backend === 'postgres' });
    const rounds: UsageRound[] = [];
    for (let r = 0; r < ctx.rounds; r++) {
      const { createSession } = await ctx.gql(server.url, CREATE_SESSION, { title: `usage ${r}` });
      const { startTurn } = await ctx.gql(server.url, START_TURN, {
        input: { sessionId: createSession.id, agentIds: ['agent-0', 'agent-1', 'agent-2', 'agent-3', 'agent-4'] },
      });
      const result = await ctx.load<UsageRound>('usage', {
        url: server.url,
        sessionId: createSession.id,
        turnId: startTurn.id,
        after: 1,
        clients: 50,
        calls,
        subscribers,
      });
      ctx.log(
        `round ${r + 1}: ${result.rps.toFixed(0)} calls/s p99 ${result.p99.toFixed(1)} ms, ${result.failed} failed ${JSON.stringify(result.codes)}, lost ${result.lost}`,
      );
      if (result.failed) ctx.log(`  first errors: ${result.firstErrors?.join(' | ')}`);
      rounds.push(result);
    }
    const rows: Row[] = [
      {
        metric: 'usage.rps',
        value: round(median(rounds.map((r) => r.rps)), 1),
        unit: 'calls/s',
        note: `${calls} reportUsage calls, 50 clients, one turn, ${subscribers} turnEvents subscribers`,
      },
      { metric: 'usage.p99', value: round(median(rounds.map((r) => r.p99)), 1), unit: 'ms' },
      { metric: 'usage.failed', value: rounds.reduce((n, r) => n + r.failed, 0), unit: 'errors', target: { op: '<=', value: 0 } },
      { metric: 'usage.lost', value: rounds.reduce((n, r) => n + r.lost, 0), unit: 'deliveries', target: { op: '<=', value: 0 } },
      {
        metric: 'usage.duplicates',
        value: rounds.reduce((n, r) => n + r.duplicates, 0),
        unit: 'deliveries',
        target: { op: '<=', value: 0 },
      },
    ];
    return rows;
  },
};

export default usage;
