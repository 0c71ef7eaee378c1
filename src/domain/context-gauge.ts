/**
 * The context gauge (`Session.contextGauge`): how full an assembled context would be, from the
 * stored token counts of the messages an assembly would send, with each message's framing in the
 * format, and without building a payload. Cheap enough to poll.
 *
 * What it counts, as assembleContext with no budget, no system prompt, turn context or tools would:
 * the compaction's summary block (counted as its text is rendered), the session's leading SYSTEM
 * message even when the compaction covers it (keepSystemMessage), then each finished, visible
 * message after the compaction (a redacted one as its replacement) with its framing
 * (`framingTokensFor`), the attachments of those messages, and the reply priming. Where it differs
 * from that assembly's tokenCount:
 * - tool results the assembly sends as stubs (older than keepToolCallRounds rounds, or stripped by
 *   stripToolOutputs) are counted whole, and rounds it drops for tool pairing are counted: the gauge
 *   is then an upper bound;
 * - attachments are estimated from their stored parts: an image or PDF by its provider's rule
 *   (media-tokens.ts, exact as assembly counts it), a text attachment as a quarter of its bytes up to
 *   the default attachmentMaxChars, anything else as nothing;
 * - the placeholder user turn ANTHROPIC_MESSAGES and GEMINI put first when the kept conversation
 *   starts with an assistant turn and has no summary is not counted.
 */
import { DEFAULT_ATTACHMENT_MAX_CHARS } from './assembly/types.js';
import type { ContextFormat } from './assembly/types.js';
import { framingTokensFor, MESSAGE_FRAMING_TOKENS, replyPrimingTokens } from './assembly/formats.js';
import { isTextMimeType } from './assembly/attachment-text.js';
import { mediaKindOf } from './assembly/media-rules.js';
import { documentTokens, imageTokens } from './assembly/media-tokens.js';
import type { WindowRow } from './assembly/window.js';
import type { MessageRole, TokenEncoding } from './types.js';

/** What the gauge reads of a message: what the window rule reads (its light row). */
export type GaugeRow = WindowRow;

/** What the gauge needs of a stored attachment part. */
export interface GaugeAttachmentPart {
  mimeType?: string;
  size?: number;
  width?: number | null;
  height?: number | null;
  pages?: number | null;
}

export interface ContextGaugeInput {
  /** The rows of the messages after the compaction (and the session's first, for its leading system message), in position order. */
  rows: readonly GaugeRow[];
  /** The compaction's end (0: none). */
  uptoIndex: number;
  /** Positions of hidden messages, and replacement counts of redacted ones (history transforms). */
  hidden: ReadonlySet<number>;
  redacted: ReadonlyMap<number, number>;
  encoding: Exclude<TokenEncoding, 'CHARS_DIV_4'>;
  /** The attachment parts of those messages. */
  attachments: ReadonlyArray<{ position: number; part: GaugeAttachmentPart }>;
  /** Content tokens of the rendered summary block; null without a compaction. */
  summaryTokens: number | null;
  format: ContextFormat;
  /** The budget to measure against; null: none. */
  maxTokens: number | null;
}

export interface ContextGauge {
  usedTokens: number;
  maxTokens: number | null;
  byRole: { system: number; summary: number; user: number; assistant: number; tool: number; attachments: number };
  /** Messages counted (the summary not among them). */
  messageCount: number;
  messagesUntilDrop: number | null;
  /**
   * No counted row is generating or lacks its count: the same rows give the same sums until the
   * session gains a message, a transform or a compaction (finished messages never change).
   */
  settled: boolean;
}

/** Estimated tokens of one attachment part in `format` (see the module's comment). */
export function attachmentTokens(part: GaugeAttachmentPart, format: ContextFormat): number {
  const mimeType = part.mimeType ?? '';
  const kind = mediaKindOf(mimeType);
  if (kind === 'image') return imageTokens(format, part.width ?? null, part.height ?? null);
  if (kind === 'document') return documentTokens(format, part.pages ?? null);
  if (isTextMimeType(mimeType)) return Math.ceil(Math.min(part.size ?? 0, DEFAULT_ATTACHMENT_MAX_CHARS) / 4);
  return 0;
}

/**
 * The gauge from the summed shapes. `messagesUntilDrop`: how many more messages of the counted
 * messages' average size (framing and attachments included) fit in maxTokens before an assembly
 * with that budget must drop the oldest; 0 when it already must; null without a budget or a message.
 */
export function gaugeContext(input: ContextGaugeInput): ContextGauge {
  const byRole = { system: 0, summary: 0, user: 0, assistant: 0, tool: 0, attachments: 0 };
  let messageCount = 0;
  let settled = true;
  const withAttachments = new Set<number>();
  for (const a of input.attachments) {
    if (!input.hidden.has(a.position) && !input.redacted.has(a.position)) withAttachments.add(a.position);
  }
  const column = input.encoding === 'O200K_BASE' ? 'tokensO200k' : 'tokensCl100k';
  for (const row of input.rows) {
    if (row.generating) settled = false;
    if (row.generating || input.hidden.has(row.position)) continue;
    // Assembly keeps the leading system message ahead of a summary that covers it (keepSystemMessage).
    if (row.position < input.uptoIndex && !(row.position === 0 && row.role === 'SYSTEM')) continue;
    if (row[column] === null) settled = false;
    const tokens = input.redacted.get(row.position) ?? row[column] ?? 0;
    const calls = row.toolCallIds?.length ?? 0;
    const others = withAttachments.has(row.position) ? 1 : 0;
    byRole[roleKey(row.role)] += tokens + framingTokensFor(input.format, row.role, calls, row.toolResultIds.length, others);
    messageCount++;
  }
  for (const a of input.attachments) if (withAttachments.has(a.position)) byRole.attachments += attachmentTokens(a.part, input.format);
  if (input.summaryTokens !== null) {
    byRole.summary = input.summaryTokens + (input.format === 'GEMINI' ? 0 : MESSAGE_FRAMING_TOKENS);
  }
  const usedTokens = byRole.system + byRole.user + byRole.assistant + byRole.tool + byRole.attachments + byRole.summary;
  return withBudget({ usedTokens: usedTokens + replyPrimingTokens(input.format), byRole, messageCount, settled }, input.maxTokens);
}

/** `gauge` measured against `maxTokens` (its other figures do not depend on the budget). */
export function withBudget(gauge: Omit<ContextGauge, 'maxTokens' | 'messagesUntilDrop'>, maxTokens: number | null): ContextGauge {
  const { byRole, messageCount, usedTokens } = gauge;
  const conversation = byRole.system + byRole.user + byRole.assistant + byRole.tool + byRole.attachments;
  let messagesUntilDrop: number | null = null;
  if (maxTokens !== null && messageCount > 0) {
    const room = maxTokens - usedTokens;
    messagesUntilDrop = room <= 0 ? 0 : Math.floor(room / Math.max(1, conversation / messageCount));
  }
  return { ...gauge, maxTokens, messagesUntilDrop };
}

function roleKey(role: MessageRole): 'system' | 'user' | 'assistant' | 'tool' {
  switch (role) {
    case 'SYSTEM':
      return 'system';
    case 'USER':
      return 'user';
    case 'ASSISTANT':
      return 'assistant';
    case 'TOOL':
      return 'tool';
  }
}
