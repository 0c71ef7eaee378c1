/** What a cut looks at of the messages before it: role, and the tool calls and results each holds. */
export interface ToolRoundRow {
  role: string;
  toolCallIds: string[];
  toolResultIds: string[];
}

/**
 * The tool calls among `newestFirst` (the messages right before a cut, newest first) that no later
 * message of them answers: a cut there would leave these calls without their results. The walk
 * stops at the first USER message (a question ends every round before it).
 */
export function unansweredCallsBefore(newestFirst: readonly ToolRoundRow[]): string[] {
  const answered = new Set<string>();
  const open: string[] = [];
  for (const row of newestFirst) {
    if (row.role === 'USER') break;
    for (const id of row.toolResultIds) answered.add(id);
    for (const id of row.toolCallIds) if (!answered.has(id)) open.push(id);
  }
  return open;
}
