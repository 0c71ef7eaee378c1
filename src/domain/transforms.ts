/**
 * History transforms: what a session shows context assembly of its messages, without changing the
 * messages. A transform is one of
 *   - HIDE / UNHIDE a message (assembly leaves a hidden one out, saying why);
 *   - REDACT / UNREDACT a message (assembly sends a replacement text instead of its content);
 *   - STRIP_TOOL_OUTPUTS before an index (every tool result before it is sent as a stub).
 * Transforms are owned by the session they were made in and numbered 1, 2, 3 … there. A session
 * sees its ancestors' transforms the way it sees their compactions (lineage.ts): those that existed
 * when its lineage left that ancestor, on positions before what it sees of it (a strip is clipped
 * there), then its own. Replayed in that order, the latest word on a message wins.
 */
import type { DomainMessage, StoredPart, TokenCounts } from './types.js';

export type TransformKind = 'HIDE' | 'UNHIDE' | 'REDACT' | 'UNREDACT' | 'STRIP_TOOL_OUTPUTS';

/** A stored transform as the fold reads it, in replay order. */
export interface TransformRecord {
  kind: TransformKind;
  messageId: string | null;
  /** The target's index; for STRIP_TOOL_OUTPUTS the exclusive end. */
  position: number;
  reason: string | null;
  replacement: string | null;
  tokens: TokenCounts | null;
  createdAt: Date;
  /** Exclusive end of what the viewing session sees of the owning session (null: its own). */
  scopeEnd: number | null;
}

export interface Hidden {
  position: number;
  reason: string;
  at: Date;
}

export interface Redaction {
  position: number;
  replacement: string;
  /** Content tokens of the redacted message as assembly sends it (`redactParts`). */
  tokens: TokenCounts;
  at: Date;
}

/** The transforms in force in one session view. */
export interface HistoryTransforms {
  /** By message id. */
  hidden: ReadonlyMap<string, Hidden>;
  /** By message id. */
  redacted: ReadonlyMap<string, Redaction>;
  /** Tool results of messages with index below this are sent as stubs (0: none). */
  stripUpto: number;
}

export const NO_TRANSFORMS: HistoryTransforms = { hidden: new Map(), redacted: new Map(), stripUpto: 0 };

export function hasTransforms(t: HistoryTransforms): boolean {
  return t.hidden.size > 0 || t.redacted.size > 0 || t.stripUpto > 0;
}

/** Replays transforms (ancestors' first, then the session's own, each in ordinal order). */
export function foldTransforms(records: readonly TransformRecord[]): HistoryTransforms {
  const hidden = new Map<string, Hidden>();
  const redacted = new Map<string, Redaction>();
  let stripUpto = 0;
  for (const r of records) {
    switch (r.kind) {
      case 'HIDE':
        hidden.set(r.messageId!, { position: r.position, reason: r.reason ?? '', at: r.createdAt });
        break;
      case 'UNHIDE':
        hidden.delete(r.messageId!);
        break;
      case 'REDACT':
        redacted.set(r.messageId!, { position: r.position, replacement: r.replacement ?? '', tokens: r.tokens!, at: r.createdAt });
        break;
      case 'UNREDACT':
        redacted.delete(r.messageId!);
        break;
      case 'STRIP_TOOL_OUTPUTS':
        stripUpto = Math.max(stripUpto, r.scopeEnd === null ? r.position : Math.min(r.position, r.scopeEnd));
        break;
    }
  }
  return { hidden, redacted, stripUpto };
}

/** What the other tool results of a redacted TOOL message become (the first one carries the replacement). */
export const REDACTED_TEXT = '[redacted]';

/**
 * The parts assembly sends for a redacted message: its text and attachments become one text part
 * holding the replacement; tool calls keep their id and name (so the round stays intact) with
 * arguments `{}`; tool results keep their call id and error flag, the first one's content being the
 * replacement and the others' `[redacted]`. Nothing of the original content is sent.
 */
export function redactParts(parts: readonly StoredPart[], replacement: string): StoredPart[] {
  const hasResults = parts.some((p) => p.type === 'toolResult');
  const out: StoredPart[] = [];
  let placed = false;
  for (const part of parts) {
    if (part.type === 'toolCall') {
      out.push({ type: 'toolCall', callId: part.callId, name: part.name, arguments: {} });
    } else if (part.type === 'toolResult') {
      out.push({ type: 'toolResult', callId: part.callId, isError: part.isError, content: placed ? REDACTED_TEXT : replacement });
      placed = true;
    } else if (!hasResults && !placed) {
      out.push({ type: 'text', text: replacement });
      placed = true;
    }
  }
  if (!placed) out.unshift({ type: 'text', text: replacement });
  return out;
}

/** The message as assembly sees it: redacted content in place of the original, with its stored counts. */
export function projectMessage(message: DomainMessage, transforms: HistoryTransforms): DomainMessage {
  const redaction = transforms.redacted.get(message.id);
  if (!redaction) return message;
  return { ...message, parts: redactParts(message.parts, redaction.replacement), tokens: redaction.tokens };
}

/** The decision reason of a hidden message. */
export function hiddenReason(hidden: Pick<Hidden, 'reason'>): string {
  return `Hidden by hideMessages: ${hidden.reason}`;
}

/** The decision reason of a message whose tool results were stripped. */
export function strippedReason(stripUpto: number): string {
  return `Kept with its tool result(s) replaced by a stub: tool outputs before index ${stripUpto} are stripped (stripToolOutputs).`;
}
