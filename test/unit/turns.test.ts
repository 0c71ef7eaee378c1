import { describe, expect, it } from 'vitest';
import {
  checkTotals,
  decideCompletion,
  MAX_REPORTED_TOKENS,
  staleTurnError,
  validateAgentIds,
  validateUsage,
  type TurnState,
} from '../../src/domain/turns.js';

const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return 'no error';
};

describe('usage validation', () => {
  it('takes whole counts from 0 to 2^31 and a finite cost of 0 or more; missing counts are 0', () => {
    expect(validateUsage({ inputTokens: 5, cost: 0.25 })).toEqual({
      inputTokens: 5n,
      outputTokens: 0n,
      cacheReadTokens: 0n,
      cacheWriteTokens: 0n,
      cost: 0.25,
    });
    expect(validateUsage({ outputTokens: MAX_REPORTED_TOKENS }).outputTokens).toBe(2n ** 31n);
  });

  it.each([
    { inputTokens: -1 },
    { outputTokens: 1.5 },
    { cacheReadTokens: 2 ** 31 + 1 },
    { cacheWriteTokens: Number.NaN },
    { cost: -0.01 },
    { cost: Number.POSITIVE_INFINITY },
  ])('refuses %j with BAD_USER_INPUT', (input) => {
    expect(codeOf(() => validateUsage(input))).toBe('BAD_USER_INPUT');
  });

  it('refuses a totalTokens past 2^31 - 1', () => {
    const total = { inputTokens: 2n ** 30n, outputTokens: 2n ** 30n, cacheReadTokens: 0n, cacheWriteTokens: 0n, cost: 0 };
    expect(codeOf(() => checkTotals(total, 'the turn'))).toBe('BAD_USER_INPUT');
    expect(codeOf(() => checkTotals({ ...total, outputTokens: 2n ** 30n - 1n }, 'the turn'))).toBe('no error');
  });

  it('takes 1 to 100 distinct, non-empty agent ids', () => {
    expect(validateAgentIds(['a', 'b'])).toEqual(['a', 'b']);
    for (const ids of [[], ['a', 'a'], [' '], Array.from({ length: 101 }, (_, i) => `${i}`)]) {
      expect(codeOf(() => validateAgentIds(ids))).toBe('BAD_USER_INPUT');
    }
  });
});

describe('completion decision', () => {
  const turn = (statuses: Record<string, TurnState['agents'][number]['status']>, status: TurnState['status'] = 'ACTIVE'): TurnState => ({
    status,
    agents: Object.entries(statuses).map(([agentId, s]) => ({ agentId, status: s, error: s === 'FAILED' ? `${agentId} broke` : null })),
  });

  it('waits for the other agents, then completes the turn with the last one', () => {
    expect(decideCompletion(turn({ a: 'ACTIVE', b: 'ACTIVE' }), { agentId: 'a', success: true, error: null }, 'T')).toEqual({
      kind: 'agent',
      agentStatus: 'COMPLETED',
    });
    expect(decideCompletion(turn({ a: 'COMPLETED', b: 'ACTIVE' }), { agentId: 'b', success: true, error: null }, 'T')).toEqual({
      kind: 'turn',
      agentStatus: 'COMPLETED',
      turnStatus: 'COMPLETED',
      turnError: null,
    });
  });

  it('fails the turn when any agent failed, naming every failed agent', () => {
    expect(decideCompletion(turn({ a: 'FAILED', b: 'ACTIVE' }), { agentId: 'b', success: false, error: 'timeout' }, 'T')).toEqual({
      kind: 'turn',
      agentStatus: 'FAILED',
      turnStatus: 'FAILED',
      turnError: 'agent a failed: a broke; agent b failed: timeout',
    });
  });

  it('treats a repeated completion with the same outcome as a retry, before and after the end, and refuses a contradicting one', () => {
    expect(decideCompletion(turn({ a: 'COMPLETED', b: 'ACTIVE' }), { agentId: 'a', success: true, error: null }, 'T')).toEqual({
      kind: 'unchanged',
    });
    expect(codeOf(() => decideCompletion(turn({ a: 'COMPLETED', b: 'ACTIVE' }), { agentId: 'a', success: false, error: null }, 'T'))).toBe(
      'BAD_USER_INPUT',
    );
    expect(decideCompletion(turn({ a: 'COMPLETED' }, 'COMPLETED'), { agentId: 'a', success: true, error: null }, 'T')).toEqual({
      kind: 'unchanged',
    });
    expect(decideCompletion(turn({ a: 'FAILED' }, 'FAILED'), { agentId: 'a', success: false, error: 'again' }, 'T')).toEqual({
      kind: 'unchanged',
    });
    expect(codeOf(() => decideCompletion(turn({ a: 'COMPLETED' }, 'COMPLETED'), { agentId: 'a', success: false, error: null }, 'T'))).toBe(
      'TURN_NOT_ACTIVE',
    );
    expect(codeOf(() => decideCompletion(turn({ a: 'FAILED' }, 'FAILED'), { agentId: 'a', success: true, error: null }, 'T'))).toBe(
      'TURN_NOT_ACTIVE',
    );
    expect(codeOf(() => decideCompletion(turn({ a: 'CANCELLED' }, 'CANCELLED'), { agentId: 'a', success: true, error: null }, 'T'))).toBe(
      'TURN_NOT_ACTIVE',
    );
    expect(codeOf(() => decideCompletion(turn({ a: 'ACTIVE' }), { agentId: 'z', success: true, error: null }, 'T'))).toBe('BAD_USER_INPUT');
  });

  it('says how long a stale turn was idle and what keeps a turn alive', () => {
    expect(staleTurnError(600_000)).toMatch(/for 10 min \(TURN_TIMEOUT_MS\).*heartbeatTurn/);
    expect(staleTurnError(1500)).toContain('1500 ms');
  });
});
