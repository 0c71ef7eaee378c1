import type { Session } from '../../generated/prisma/client.js';
import { columnList, type ColumnSet } from './columns.js';

/** Every column of a session row, for RETURNING and reads that decode a whole `Session`. */
export const SESSION_COLUMNS: ColumnSet<Session> = {
  id: true,
  workspaceId: true,
  title: true,
  settings: true,
  metadata: true,
  parentId: true,
  rootId: true,
  ancestorIds: true,
  depth: true,
  forkIndex: true,
  forkPointMessageId: true,
  branchAnchorId: true,
  lineage: true,
  kind: true,
  parentTurnId: true,
  parentMessageCount: true,
  agentId: true,
  messageCount: true,
  eventSequence: true,
  compactionCount: true,
  transformCount: true,
  turnCount: true,
  activeTurnId: true,
  createdAt: true,
  updatedAt: true,
};
export const SESSION_SQL = columnList(SESSION_COLUMNS);
