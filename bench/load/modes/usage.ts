/**
 * Mode `usage`: a reportUsage burst, `calls` calls from `clients` concurrent clients to one turn,
 * with `subscribers` turnEvents sockets counting their deliveries: every successful call is one
 * TurnUsageUpdated event. Failed calls are counted by their error code.
 */
import type { UsageArgs } from '../args.js';
import { GraphQLCallError, gql } from '../http-client.js';
import type { Subscription } from '../operations.js';
import { pool } from '../pool.js';
import { quantile } from '../stats.js';
import { openSockets, Receipts, terminateAll } from '../subscribers.js';

const TURN_EVENTS: Subscription = {
  query: `subscription ($id: ID!, $after: Int) {
  turnEvents(sessionId: $id, afterSequence: $after) {
    sequence __typename at
    ... on TurnUsageUpdated { agentId callId model delta { inputTokens outputTokens cost } total { inputTokens outputTokens cost } }
  }
}`,
  field: 'turnEvents',
};
const REPORT_USAGE = `mutation ($input: ReportUsageInput!) { reportUsage(input: $input) { id } }`;

export async function runUsage({ url, sessionId, turnId, after, clients, calls, subscribers }: UsageArgs) {
  const receipts = new Receipts();
  const sockets = await openSockets({
    target: 'server',
    urls: [url],
    groups: [{ sessionId, after, subscribers }],
    subscription: TURN_EVENTS,
    receipts,
  });
  try {
    const latencies: number[] = [];
    let failed = 0;
    const firstErrors: string[] = [];
    const codes: Record<string, number> = {};
    const started = performance.now();
    await pool(calls, clients, async (i) => {
      const t = performance.now();
      try {
        await gql(url, REPORT_USAGE, {
          input: {
            turnId,
            agentId: `agent-${i % 5}`,
            callId: `burst-${i}`,
            model: i % 3 ? 'model-a' : 'model-b',
            inputTokens: 100,
            outputTokens: 20,
            cost: 0.001,
          },
        });
      } catch (error) {
        failed++;
        const code = (error instanceof GraphQLCallError ? error.code : undefined) ?? 'other';
        codes[code] = (codes[code] ?? 0) + 1;
        if (firstErrors.length < 3) firstErrors.push((error as Error).message);
      }
      latencies.push(performance.now() - t);
    });
    const elapsed = (performance.now() - started) / 1000;
    // The successful calls' events are sequences after+1 … after+ok.
    const ok = calls - failed;
    const keys = Array.from({ length: ok }, (_, i) => `0:${after + 1 + i}`);
    await receipts.all(keys, () => subscribers, performance.now() + 60_000);
    const delivered = keys.reduce((n, k) => n + receipts.count(k), 0);
    return {
      rps: calls / elapsed,
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
      failed,
      codes,
      firstErrors,
      lost: ok * subscribers - delivered,
      duplicates: receipts.duplicates,
    };
  } finally {
    terminateAll(sockets);
  }
}
