/** Helpers shared by the scenarios that run over real sockets (files starting with `_` are not scenarios). */
import { median, type ProcessContext, round, type Row, type Target } from '../lib.js';

export const CREATE_SESSION = `mutation ($title: String!) { createSession(input: { title: $title }) { id } }`;
export const APPEND = `mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { session { messageCount } } }`;
export const SESSION_READ = `query ($id: ID!) {
  session(id: $id) {
    title messageCount
    messages(first: 20) { edges { node { id index role text tokenCount generating createdAt } } pageInfo { hasNextPage endCursor } }
  }
}`;
export const FILLER = 'lorem ipsum '.repeat(8);

/** What one round of a throughput measurement returns (load modes http, raw-writes, stream, usage). */
export interface Round {
  rps: number;
  p50: number;
  p99: number;
  failed: number;
  firstErrors?: string[];
}

/** Creates `count` sessions with `messages` messages each (in batches of 100); returns their global IDs. */
export async function seedSessions(ctx: ProcessContext, url: string, count: number, messages: number, title = 'bench'): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const { createSession } = await ctx.gql<{ createSession: { id: string } }>(url, CREATE_SESSION, { title: `${title} ${i}` });
    for (let done = 0; done < messages; done += 100) {
      const batch = Array.from({ length: Math.min(100, messages - done) }, (_, j) => ({
        role: (done + j) % 2 ? 'ASSISTANT' : 'USER',
        text: `message ${done + j} ${FILLER}`,
      }));
      await ctx.gql(url, APPEND, { input: { sessionId: createSession.id, messages: batch } });
    }
    ids.push(createSession.id);
  }
  return ids;
}

/**
 * Runs `rounds` rounds of each side, interleaved (server, baseline, server, baseline …) so both see
 * the same machine, and returns the median throughput and median p99 of each.
 */
export async function interleaved(
  ctx: ProcessContext,
  label: string,
  sides: { server: () => Promise<Round>; baseline: () => Promise<Round> },
) {
  const server: Round[] = [];
  const baseline: Round[] = [];
  for (let r = 0; r < ctx.rounds; r++) {
    const s = await sides.server();
    const b = await sides.baseline();
    server.push(s);
    baseline.push(b);
    ctx.log(
      `${label} round ${r + 1}/${ctx.rounds}: server ${s.rps.toFixed(0)}/s p99 ${s.p99.toFixed(1)} ms (${s.failed} failed); baseline ${b.rps.toFixed(0)}/s p99 ${b.p99.toFixed(1)} ms`,
    );
    if (s.failed && s.firstErrors?.length) ctx.log(`  first errors: ${s.firstErrors.join(' | ')}`);
  }
  return { server: summary(server), baseline: summary(baseline) };
}

export function summary(rounds: Round[]) {
  return {
    rps: median(rounds.map((r) => r.rps)),
    p50: median(rounds.map((r) => r.p50)),
    p99: median(rounds.map((r) => r.p99)),
    failed: rounds.reduce((n, r) => n + r.failed, 0),
  };
}

/** The usual rows of a throughput comparison. */
export function throughputRows(
  prefix: string,
  note: string,
  baselineNote: string,
  result: { server: ReturnType<typeof summary>; baseline: ReturnType<typeof summary> },
  target: Target | null,
  unit = 'req/s',
): Row[] {
  return [
    { metric: `${prefix}.rps`, value: round(result.server.rps, 1), unit, note },
    { metric: `${prefix}.p99`, value: round(result.server.p99, 1), unit: 'ms' },
    { metric: `${prefix}.failed`, value: result.server.failed, unit: 'errors', target: { op: '<=', value: 0 } },
    { metric: `${prefix}.baseline.rps`, value: round(result.baseline.rps, 1), unit, note: baselineNote },
    { metric: `${prefix}.baseline.p99`, value: round(result.baseline.p99, 1), unit: 'ms' },
    {
      metric: `${prefix}.ratio`,
      value: round(result.server.rps / Math.max(result.baseline.rps, 0.001), 3),
      unit: 'ratio',
      target,
      note: 'server / baseline, medians of the rounds',
    },
  ];
}
