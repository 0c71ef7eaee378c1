import type { SqlTarget } from '../db/sql.js';
import { MAX_SUB_SESSION_DEPTH } from '../db/stores/events.js';
import { readAgentTree } from '../db/stores/sub-sessions.js';
import { badInput } from '../domain/errors.js';
import { buildTimeline, type Timeline } from '../domain/timeline.js';

/** The most sessions (a session and its nested sub-agent sessions) a timeline spans. */
export const MAX_TIMELINE_SESSIONS = 10_000;

/**
 * The timeline of a session: its messages with those of the sub-agent sessions nested in its
 * turns (recursively) interleaved where each sub-session was made (see domain/timeline.ts).
 * Refused when the tree holds more than MAX_TIMELINE_SESSIONS sessions.
 */
export async function readTimeline(sql: SqlTarget, sessionId: string): Promise<Timeline> {
  const rows = await readAgentTree(sql, sessionId, MAX_SUB_SESSION_DEPTH, MAX_TIMELINE_SESSIONS + 1);
  if (rows.length > MAX_TIMELINE_SESSIONS) {
    throw badInput(`This session has more than ${MAX_TIMELINE_SESSIONS} nested sub-agent sessions; read their timelines one by one.`);
  }
  if (rows.length === 0)
    return buildTimeline(sessionId, [{ id: sessionId, parentSessionId: null, parentMessageCount: 0, messageCount: 0, order: 0 }]);
  return buildTimeline(
    sessionId,
    rows.map((row, order) => ({ ...row, order })),
  );
}
