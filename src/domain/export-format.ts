/**
 * The export format (docs/export-format.md, docs/export.schema.json): JSON Lines, one object per
 * line, each with a `type`. A header first, then each session followed by its turns, usage reports,
 * attachments, messages, compactions and transforms, every session after the sessions it refers
 * to, and an `end` line last (a file cut short is refused). The lines' types; export-line.ts checks
 * one line, export-check.ts its place in the file.
 */

export const EXPORT_FORMAT = 'session-graph/export';
export const EXPORT_VERSION = 1;
export const EXPORT_CONTENT_TYPE = 'application/x-ndjson';

export interface HeaderLine {
  type: 'header';
  format: typeof EXPORT_FORMAT;
  version: number;
  exportedAt: string;
  /** The session asked for (an id of the exporting server). */
  sessionId: string;
  tree: boolean;
}

export interface SessionLine {
  type: 'session';
  id: string;
  kind: 'ROOT' | 'FORK' | 'SUB_AGENT';
  title: string;
  settings: unknown;
  metadata: unknown;
  parentId: string | null;
  rootId: string;
  ancestorIds: string[];
  depth: number;
  forkIndex: number | null;
  forkPointMessageId: string | null;
  lineage: LineageLine[];
  parentTurnId: string | null;
  parentMessageCount: number | null;
  agentId: string | null;
  messageCount: number;
  compactionCount: number;
  transformCount: number;
  turnCount: number;
  activeTurnId: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface LineageLine {
  sessionId: string;
  start: number;
  end: number;
  compactions: number;
  transforms?: number;
}

/** Token counts and cost of a turn, an agent of it, or a usage report (counts as decimal strings: they are BIGINT). */
export interface UsageFields {
  inputTokens: string;
  outputTokens: string;
  cacheReadTokens: string;
  cacheWriteTokens: string;
  cost: number;
}

export interface TurnAgentLine extends UsageFields {
  agentId: string;
  status: 'ACTIVE' | 'COMPLETED' | 'FAILED' | 'CANCELLED';
  error: string | null;
  completedAt: string | null;
}

export interface TurnLine extends UsageFields {
  type: 'turn';
  id: string;
  sessionId: string;
  number: number;
  clientTurnId: string | null;
  status: 'ACTIVE' | 'COMPLETED' | 'FAILED' | 'CANCELLED';
  initiatorKind: 'USER' | 'EXTENSION' | 'SYSTEM';
  initiatorId: string | null;
  error: string | null;
  context: unknown;
  contextSettingsFingerprint: string | null;
  contextHistoryMark: number | null;
  startedAt: string;
  completedAt: string | null;
  lastActivityAt: string;
  agents: TurnAgentLine[];
}

export interface UsageLine extends UsageFields {
  type: 'usage';
  id: string;
  turnId: string;
  callId: string | null;
  agentId: string;
  model: string | null;
  costSource: 'REPORTED' | 'CATALOG' | 'UNKNOWN';
  createdAt: string;
}

export interface AttachmentLine {
  type: 'attachment';
  id: string;
  sessionId: string;
  name: string;
  mimeType: string;
  size: number;
  sha256: string;
  kind: 'TEXT' | 'BYTES' | 'URL' | 'PROVIDER_FILE';
  content: string | null;
  /** BYTES: the bytes, base64. */
  data: string | null;
  width: number | null;
  height: number | null;
  pages: number | null;
  url: string | null;
  providerFile: { provider: string; fileId: string } | null;
  createdAt: string;
}

export interface MessageLine {
  type: 'message';
  id: string;
  sessionId: string;
  position: number;
  role: 'SYSTEM' | 'USER' | 'ASSISTANT' | 'TOOL';
  parts: Record<string, unknown>[];
  toolCallIds: string[];
  toolResultIds: string[];
  generating: boolean;
  tokensO200k: number | null;
  tokensCl100k: number | null;
  turnId: string | null;
  agentId: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface CompactionLine {
  type: 'compaction';
  id: string;
  sessionId: string;
  ordinal: number;
  uptoIndex: number;
  summary: string;
  extractedContext: unknown;
  tokensO200k: number;
  tokensCl100k: number;
  createdAt: string;
}

export interface TransformLine {
  type: 'transform';
  id: string;
  sessionId: string;
  ordinal: number;
  kind: 'HIDE' | 'UNHIDE' | 'REDACT' | 'UNREDACT' | 'STRIP_TOOL_OUTPUTS';
  messageId: string | null;
  position: number;
  reason: string | null;
  replacement: string | null;
  tokensO200k: number | null;
  tokensCl100k: number | null;
  createdAt: string;
}

export interface EndLine {
  type: 'end';
  sessions: number;
  messages: number;
}

export type ExportLine =
  | HeaderLine
  | SessionLine
  | TurnLine
  | UsageLine
  | AttachmentLine
  | MessageLine
  | CompactionLine
  | TransformLine
  | EndLine;

/** A line the import refuses: its 1-based number and why. */
export class LineError extends Error {
  override readonly name = 'LineError';
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message);
  }
}
