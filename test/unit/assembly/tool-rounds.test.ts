import { describe, expect, it } from 'vitest';
import {
  buildUnits,
  findToolInvariantViolations,
  repairToolPairs,
  toWork,
  type ToolPairExplainer,
} from '../../../src/domain/assembly/index.js';
import type { DomainMessage } from '../../../src/domain/types.js';
import { assistant, call, calls, msg, result, results, user } from './helpers.js';

const ids = (list: { source: DomainMessage }[]) => list.map((w) => w.source.id);
const repair = (messages: DomainMessage[], explain?: ToolPairExplainer) => repairToolPairs(messages.map(toWork), explain);

describe('findToolInvariantViolations', () => {
  it('accepts a valid list with sequential and parallel rounds', () => {
    const list = [
      user(0, 'hi'),
      calls(1, ['a']),
      results(2, ['a']),
      calls(3, ['b', 'c'], 'two at once'),
      results(4, ['c']),
      results(5, ['b']),
      calls(6, ['d', 'e']),
      results(7, ['d', 'e']),
      assistant(8, 'done'),
    ];
    expect(findToolInvariantViolations(list)).toEqual([]);
  });

  it('reports a list that starts with a tool result', () => {
    const v = findToolInvariantViolations([results(0, ['a']), user(1, 'hi')]);
    expect(v).toContain('the list starts with a tool result (position 0)');
  });

  it('reports a tool result that does not follow its call', () => {
    const v = findToolInvariantViolations([calls(0, ['a']), results(1, ['a']), user(2, 'x'), results(3, ['a'])]);
    expect(v.join('\n')).toMatch(/position 3 does not follow an assistant message with tool calls/);
  });

  it('reports a call without a result, parallel calls included', () => {
    const v = findToolInvariantViolations([user(0, 'q'), calls(1, ['a', 'b']), results(2, ['a']), user(3, 'next')]);
    expect(v).toEqual(['tool call b at position 1 has no result directly after it']);
  });

  it('reports a call at the very end without a result', () => {
    expect(findToolInvariantViolations([user(0, 'q'), calls(1, ['a'])])).toEqual([
      'tool call a at position 1 has no result directly after it',
    ]);
  });

  it('reports a result for another round, a duplicate and a result-less tool message', () => {
    const v = findToolInvariantViolations([
      user(0, 'q'),
      calls(1, ['a']),
      results(2, ['a']),
      results(3, ['a']),
      results(4, ['zz']),
      msg(5, 'TOOL', []),
    ]);
    expect(v).toEqual([
      'tool result a at position 3 answers call a a second time',
      'tool result zz at position 4 answers no call of the assistant message at position 1',
      'tool message at position 5 holds no tool result',
    ]);
  });

  it('works on assembled messages (parts only) as well', () => {
    const v = findToolInvariantViolations([
      { role: 'SYSTEM', parts: [{ type: 'text' }] },
      { role: 'TOOL', parts: [{ type: 'toolResult', callId: 'x' }] },
    ]);
    expect(v).toEqual(['tool message at position 1 does not follow an assistant message with tool calls']);
  });
});

describe('buildUnits', () => {
  it('groups each round (call + all its tool messages) and leaves other messages alone', () => {
    const list = [user(0, 'q'), calls(1, ['a', 'b']), results(2, ['a']), results(3, ['b']), assistant(4, 'ok'), user(5, 'q2')];
    expect(buildUnits(list)).toEqual([
      { start: 0, end: 1 },
      { start: 1, end: 4 },
      { start: 4, end: 5 },
      { start: 5, end: 6 },
    ]);
  });
});

describe('repairToolPairs', () => {
  it('keeps a valid list as it is', () => {
    const list = [user(0, 'q'), calls(1, ['a', 'b']), results(2, ['a', 'b']), assistant(3, 'ok')];
    const r = repair(list);
    expect(ids(r.list)).toEqual(['m0', 'm1', 'm2', 'm3']);
    expect(r.removed).toEqual([]);
  });

  it('drops an orphan result at the start and says why', () => {
    const r = repair([results(0, ['a']), user(1, 'q')]);
    expect(ids(r.list)).toEqual(['m1']);
    expect(r.removed).toHaveLength(1);
    expect(r.removed[0]).toMatchObject({ decision: 'DROPPED_TOOL_PAIR' });
    expect(r.removed[0].reason).toMatch(/Orphan tool result \(a\)/);
  });

  it('drops a whole round when one of its parallel calls has no result', () => {
    const r = repair([user(0, 'q'), calls(1, ['a', 'b']), results(2, ['a']), user(3, 'next')]);
    expect(ids(r.list)).toEqual(['m0', 'm3']);
    expect(r.removed.map((x) => [x.message.id, x.decision])).toEqual([
      ['m1', 'DROPPED_TOOL_PAIR'],
      ['m2', 'DROPPED_TOOL_PAIR'],
    ]);
    expect(r.removed[0].reason).toMatch(/Tool call b has no result/);
    expect(r.removed[1].reason).toMatch(/Its round \(message #1 \(ASSISTANT\)\) is incomplete/);
    expect(findToolInvariantViolations(r.list.map((w) => w.source))).toEqual([]);
  });

  it('drops a round whose result arrives after another message, and the late result', () => {
    const r = repair([user(0, 'q'), calls(1, ['a']), user(2, 'interrupt'), results(3, ['a'])]);
    expect(ids(r.list)).toEqual(['m0', 'm2']);
    expect(r.removed.map((x) => x.message.id).sort()).toEqual(['m1', 'm3']);
  });

  it('drops a duplicate result and a result for a call the assistant did not make, keeping the round', () => {
    const r = repair([user(0, 'q'), calls(1, ['a']), results(2, ['a']), results(3, ['a']), results(4, ['zz']), assistant(5, 'ok')]);
    expect(ids(r.list)).toEqual(['m0', 'm1', 'm2', 'm5']);
    expect(r.removed.map((x) => x.reason)).toEqual([
      expect.stringMatching(/Duplicate tool result for call a/),
      expect.stringMatching(/Orphan tool result \(zz\)/),
    ]);
  });

  it('drops a tool message holding no result', () => {
    const r = repair([user(0, 'q'), calls(1, ['a']), msg(2, 'TOOL', []), results(3, ['a'])]);
    expect(ids(r.list)).toEqual(['m0', 'm1', 'm3']);
    expect(r.removed[0].reason).toMatch(/without a tool result/);
  });

  it('uses the explainer to say where the missing call or result went', () => {
    const explain: ToolPairExplainer = {
      missingCall: (id) => `call ${id} was summarized`,
      missingResult: (id) => `result ${id} is still generating`,
    };
    const orphan = repair([results(0, ['a']), user(1, 'q')], explain);
    expect(orphan.removed[0].reason).toContain('call a was summarized');
    const open = repair([user(0, 'q'), msg(1, 'ASSISTANT', [call('b')])], explain);
    expect(open.removed[0].reason).toContain('result b is still generating');
  });

  it('accepts one tool message answering parallel calls in another order', () => {
    const list = [user(0, 'q'), calls(1, ['a', 'b']), msg(2, 'TOOL', [result('b'), result('a')]), assistant(3, 'ok')];
    expect(repair(list).removed).toEqual([]);
  });
});
