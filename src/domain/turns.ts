/**
 * The turn lifecycle as pure rules over plain rows: what a start, a usage report, an agent's
 * completion or a cancellation may do, and what it changes. The service (services/turns.ts) reads
 * the rows under the session's lock, asks these functions, and writes what they decide.
 */
import { badInput, DomainError } from './errors.js';
import type { ModelCatalog } from './model-catalog.js';

export type TurnStatus = 'ACTIVE' | 'COMPLETED' | 'FAILED' | 'CANCELLED';
export type TurnAgentStatus = 'ACTIVE' | 'COMPLETED' | 'FAILED' | 'CANCELLED';

/** Token counts and cost. Counts are whole numbers; totals may exceed 2^31 in bigint form. */
export interface UsageCounts {
  inputTokens: bigint;
  outputTokens: bigint;
  cacheReadTokens: bigint;
  cacheWriteTokens: bigint;
  cost: number;
}

/**
 * Where a cost comes from, strongest first: the reporter (`cost` sent), the model catalog (a
 * `model` it knows and no `cost`), or nowhere (neither: the cost is 0 and unknown). A sum reports
 * the weakest source among its reports, so a total that is partly unknown says UNKNOWN and one
 * partly estimated says CATALOG; a sum of no report is REPORTED (its 0 is exact).
 */
export type CostSource = 'REPORTED' | 'CATALOG' | 'UNKNOWN';
export const COST_SOURCES: readonly CostSource[] = ['REPORTED', 'CATALOG', 'UNKNOWN'];

/** The weakest of some sources (REPORTED for none). */
export function weakestCostSource(sources: Iterable<CostSource | null | undefined>): CostSource {
  let weakest = 0;
  for (const s of sources) if (s) weakest = Math.max(weakest, COST_SOURCES.indexOf(s));
  return COST_SOURCES[weakest];
}

/**
 * A report's cost and its source: the cost sent; else, with a model the catalog knows, the
 * catalog's price of the four counts at `at`; else 0, UNKNOWN. The catalog is asked only when it
 * is given (the caller loads it only for a report with a model and no cost).
 */
export function reportCost(
  usage: UsageCounts,
  sent: boolean,
  model: string | null,
  catalog: ModelCatalog | null,
  at: Date,
): { cost: number; costSource: CostSource } {
  if (sent) return { cost: usage.cost, costSource: 'REPORTED' };
  const price =
    model && catalog
      ? catalog.priceUsage(
          model,
          {
            inputTokens: Number(usage.inputTokens),
            outputTokens: Number(usage.outputTokens),
            cacheReadTokens: Number(usage.cacheReadTokens),
            cacheWriteTokens: Number(usage.cacheWriteTokens),
          },
          at,
        )
      : null;
  return price === null ? { cost: 0, costSource: 'UNKNOWN' } : { cost: price, costSource: 'CATALOG' };
}

export const USAGE_COUNT_FIELDS = ['inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheWriteTokens'] as const;

/** The largest count one report may carry: 2^31, a bound no real model call comes near. */
export const MAX_REPORTED_TOKENS = 2 ** 31;
/** The largest totalTokens a turn may reach, so each of its totals stays a GraphQL Int. */
export const MAX_TOTAL_TOKENS = 2 ** 31 - 1;
export const MAX_AGENTS_PER_TURN = 100;
export const MAX_ID_LENGTH = 200;

export const zeroUsage = (): UsageCounts => ({ inputTokens: 0n, outputTokens: 0n, cacheReadTokens: 0n, cacheWriteTokens: 0n, cost: 0 });

export function addUsage(a: UsageCounts, b: UsageCounts): UsageCounts {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
    cost: a.cost + b.cost,
  };
}

/** A usage report as the client sent it (missing counts are 0). */
export interface UsageReportInput {
  inputTokens?: number | null;
  outputTokens?: number | null;
  cacheReadTokens?: number | null;
  cacheWriteTokens?: number | null;
  cost?: number | null;
}

/** Checks a report: whole, non-negative counts up to 2^31 and a finite, non-negative cost. */
export function validateUsage(input: UsageReportInput): UsageCounts {
  const usage = zeroUsage();
  for (const field of USAGE_COUNT_FIELDS) {
    const value = input[field] ?? 0;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_REPORTED_TOKENS) {
      throw badInput(`${field} must be a whole number from 0 to ${MAX_REPORTED_TOKENS} (got ${String(value)}).`, { field });
    }
    usage[field] = BigInt(value);
  }
  const cost = input.cost ?? 0;
  if (typeof cost !== 'number' || !Number.isFinite(cost) || cost < 0) {
    throw badInput(`cost must be a finite number of at least 0 (got ${String(cost)}).`, { field: 'cost' });
  }
  usage.cost = cost;
  return usage;
}

/** Refuses a report that would take a total (totalTokens included) past what a GraphQL Int can show. */
export function checkTotals(total: UsageCounts, what: string) {
  const sum = total.inputTokens + total.outputTokens + total.cacheReadTokens + total.cacheWriteTokens;
  if (sum > BigInt(MAX_TOTAL_TOKENS)) {
    throw badInput(`This report would take ${what}'s totalTokens past ${MAX_TOTAL_TOKENS}; report further usage on a new turn.`);
  }
}

/** An optional client-chosen id (callId, model, turnId): trimmed, non-empty, bounded. */
export function optionalKey(value: string | null | undefined, name: string): string | null {
  if (value === null || value === undefined) return null;
  if (!value.trim()) throw badInput(`${name} must not be empty.`);
  if (value.length > MAX_ID_LENGTH) throw badInput(`${name} is longer than ${MAX_ID_LENGTH} characters.`);
  return value;
}

export function requiredKey(value: string, name: string): string {
  return optionalKey(value, name)!;
}

/** The agents a turn starts with: at least one, at most MAX_AGENTS_PER_TURN, distinct, non-empty. */
export function validateAgentIds(agentIds: readonly string[]): string[] {
  if (agentIds.length === 0) throw badInput('agentIds must name at least one agent.');
  if (agentIds.length > MAX_AGENTS_PER_TURN) throw badInput(`A turn has at most ${MAX_AGENTS_PER_TURN} agents.`);
  const seen = new Set<string>();
  for (const [i, id] of agentIds.entries()) {
    requiredKey(id, `agentIds[${i}]`);
    if (seen.has(id)) throw badInput(`agentIds lists "${id}" twice.`);
    seen.add(id);
  }
  return [...agentIds];
}

export interface TurnState {
  status: TurnStatus;
  agents: readonly { agentId: string; status: TurnAgentStatus; error: string | null }[];
}

export const turnNotActive = (status: TurnStatus, clientId: string) =>
  new DomainError('TURN_NOT_ACTIVE', `Turn ${clientId} is ${status}, not ACTIVE; it no longer accepts this.`, { turnId: clientId, status });

export function requireActive(turn: { status: TurnStatus }, clientId: string) {
  if (turn.status !== 'ACTIVE') throw turnNotActive(turn.status, clientId);
}

export function requireAgent(turn: TurnState, agentId: string, clientId: string) {
  const agent = turn.agents.find((a) => a.agentId === agentId);
  if (!agent) {
    throw badInput(`Agent "${agentId}" is not part of turn ${clientId} (its agents: ${turn.agents.map((a) => a.agentId).join(', ')}).`, {
      agentId,
    });
  }
  return agent;
}

/** What completing one agent does to the turn. */
export type CompletionDecision =
  /** The agent already completed with this outcome (a retry, before or after the turn ended): nothing changes, no event. */
  | { kind: 'unchanged' }
  /** The agent completes; the turn stays ACTIVE, waiting for others. */
  | { kind: 'agent'; agentStatus: 'COMPLETED' | 'FAILED' }
  /** The agent was the last one: the turn ends with `turnStatus`. */
  | { kind: 'turn'; agentStatus: 'COMPLETED' | 'FAILED'; turnStatus: 'COMPLETED' | 'FAILED'; turnError: string | null };

/**
 * Decides an agent's completion. The turn ends exactly when its last ACTIVE agent completes:
 * FAILED if any agent failed (its error names each failed agent), COMPLETED otherwise. A
 * completion repeated with the same outcome is a no-op whenever it arrives (Makaio's completion
 * guard: retries and racing duplicates are normal), also after the turn ended; one that contradicts
 * the recorded outcome is refused: BAD_USER_INPUT while the turn is ACTIVE, TURN_NOT_ACTIVE after
 * it ended (as any completion of an agent the end cancelled, or of a cancelled turn).
 */
export function decideCompletion(
  turn: TurnState,
  input: { agentId: string; success: boolean; error: string | null },
  clientId: string,
): CompletionDecision {
  const agentStatus = input.success ? 'COMPLETED' : 'FAILED';
  const recorded = turn.agents.find((a) => a.agentId === input.agentId);
  if (recorded && recorded.status === agentStatus) return { kind: 'unchanged' };
  if (turn.status !== 'ACTIVE') {
    if (recorded && (recorded.status === 'COMPLETED' || recorded.status === 'FAILED')) {
      throw new DomainError(
        'TURN_NOT_ACTIVE',
        `Turn ${clientId} is ${turn.status}, and agent "${input.agentId}" is recorded as ${recorded.status}; a completion with success: ${input.success} contradicts it and changes nothing.`,
        { turnId: clientId, status: turn.status, agentId: input.agentId },
      );
    }
    throw turnNotActive(turn.status, clientId);
  }
  const agent = requireAgent(turn, input.agentId, clientId);
  if (agent.status !== 'ACTIVE') {
    throw badInput(
      `Agent "${input.agentId}" already completed turn ${clientId} with success: ${agent.status === 'COMPLETED'}; a completion cannot be changed.`,
      { agentId: input.agentId },
    );
  }
  const after = turn.agents.map((a) =>
    a.agentId === input.agentId ? { ...a, status: agentStatus as TurnAgentStatus, error: input.error } : a,
  );
  if (after.some((a) => a.status === 'ACTIVE')) return { kind: 'agent', agentStatus };
  const failed = after.filter((a) => a.status === 'FAILED');
  if (failed.length === 0) return { kind: 'turn', agentStatus, turnStatus: 'COMPLETED', turnError: null };
  const turnError = failed.map((a) => `agent ${a.agentId} failed${a.error ? `: ${a.error}` : ''}`).join('; ');
  return { kind: 'turn', agentStatus, turnStatus: 'FAILED', turnError: truncate(turnError) };
}

/** The error a turn gets when the sweeper fails it for inactivity. */
export function staleTurnError(timeoutMs: number): string {
  return `No usage report, message or heartbeat for ${formatDuration(timeoutMs)} (TURN_TIMEOUT_MS): the server failed this turn. Send heartbeatTurn to keep a long turn alive.`;
}

export function formatDuration(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}

const MAX_ERROR = 10_000;

/** An error or reason as stored: bounded. */
export function errorText(value: string | null | undefined, name: string): string | null {
  if (value === null || value === undefined) return null;
  if (value.length > MAX_ERROR) throw badInput(`${name} is longer than ${MAX_ERROR} characters.`);
  return value;
}

const truncate = (s: string) => (s.length > MAX_ERROR ? `${s.slice(0, MAX_ERROR - 1)}…` : s);

/** Usage as JSON for event payloads (counts as numbers: every total is below 2^31). */
export function usageJson(u: UsageCounts) {
  return {
    inputTokens: Number(u.inputTokens),
    outputTokens: Number(u.outputTokens),
    cacheReadTokens: Number(u.cacheReadTokens),
    cacheWriteTokens: Number(u.cacheWriteTokens),
    cost: u.cost,
  };
}
