import { describe, expect, it } from 'vitest';
import { unansweredCallsBefore, type ToolRoundRow } from '../../src/domain/tool-rounds.js';

const user: ToolRoundRow = { role: 'USER', toolCallIds: [], toolResultIds: [] };
const calls = (...ids: string[]): ToolRoundRow => ({ role: 'ASSISTANT', toolCallIds: ids, toolResultIds: [] });
const results = (...ids: string[]): ToolRoundRow => ({ role: 'TOOL', toolCallIds: [], toolResultIds: ids });
const text: ToolRoundRow = { role: 'ASSISTANT', toolCallIds: [], toolResultIds: [] };

// The rows right before a regenerate cut, newest first.
describe('unansweredCallsBefore', () => {
  it('finds nothing after a question or a finished round', () => {
    expect(unansweredCallsBefore([])).toEqual([]);
    expect(unansweredCallsBefore([user, text])).toEqual([]);
    expect(unansweredCallsBefore([results('a', 'b'), calls('a', 'b'), user])).toEqual([]);
    expect(unansweredCallsBefore([results('b'), results('a'), calls('a', 'b'), user])).toEqual([]);
  });

  it('finds the calls whose results come only after the cut', () => {
    expect(unansweredCallsBefore([calls('a'), user])).toEqual(['a']);
    expect(unansweredCallsBefore([text, calls('a'), user])).toEqual(['a']);
    expect(unansweredCallsBefore([results('a'), calls('a', 'b'), user])).toEqual(['b']);
  });

  it("stops at the newest question: rounds before it are not the cut's", () => {
    expect(unansweredCallsBefore([text, user, calls('old')])).toEqual([]);
  });
});
