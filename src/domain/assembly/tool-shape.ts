/**
 * The structure of a message, extracted once: its role, the call ids it makes (ASSISTANT), the call
 * ids it answers (toolResult parts) and how many other parts it has. The invariant checker, the
 * round grouping and the framing count run over long lists after every step, so they read this
 * instead of walking parts again.
 */
import type { MessageRole } from '../types.js';

/** Anything with a role and parts: stored messages, working entries, assembled messages. */
export interface ToolCheckMessage {
  role: MessageRole;
  parts: ReadonlyArray<{ type: string; callId?: string }>;
}

export interface ToolShape {
  role: MessageRole;
  /** Ids of toolCall parts, in order. */
  calls: readonly string[];
  /** Ids answered by toolResult parts, in order. */
  results: readonly string[];
  /** Parts that are neither calls nor results (text, attachments). */
  others: number;
  /** Attachment parts among them. */
  attachments: number;
  /** Reasoning and provider parts among them (sent by some formats only: provider-data.ts). */
  providerData: number;
}

const NONE: readonly string[] = Object.freeze([]);

export function toolShapeOf(message: ToolCheckMessage): ToolShape {
  let calls: string[] | null = null;
  let results: string[] | null = null;
  let others = 0;
  let attachments = 0;
  let providerData = 0;
  const parts = message.parts;
  for (let k = 0; k < parts.length; k++) {
    const type = parts[k].type;
    if (type === 'toolCall') (calls ??= []).push(parts[k].callId!);
    else if (type === 'toolResult') (results ??= []).push(parts[k].callId!);
    else {
      others++;
      if (type === 'attachment') attachments++;
      else if (type === 'reasoning' || type === 'providerPart') providerData++;
    }
  }
  return { role: message.role, calls: calls ?? NONE, results: results ?? NONE, others, attachments, providerData };
}

/** An ASSISTANT message that makes at least one tool call: the head of a round. */
export function isRoundHead(shape: ToolShape): boolean {
  return shape.role === 'ASSISTANT' && shape.calls.length > 0;
}
