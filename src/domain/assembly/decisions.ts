/**
 * The explanation: one decision per input message. Steps report removals; whatever is left at the
 * end is KEPT (or ELIDED when its tool results were stubbed).
 */
import type { DomainMessage } from '../types.js';
import type { ToolPairExplainer } from './tool-rounds.js';
import type { ContextDecision, ContextDecisionKind, Removal } from './types.js';
import { label } from './work.js';

export class DecisionLog {
  private readonly byId = new Map<string, Removal>();

  constructor(private readonly messages: readonly DomainMessage[]) {}

  record(removed: readonly Removal[]): void {
    for (const r of removed) this.byId.set(r.message.id, r);
  }

  get(id: string): ContextDecisionKind | undefined {
    return this.byId.get(id)?.decision;
  }

  /** Every input message's decision, in input order. Throws if a message was lost (a bug). */
  finish(kept: ReadonlyMap<string, { elided: boolean; reason: string }>): ContextDecision[] {
    return this.messages.map((m) => {
      const removed = this.byId.get(m.id);
      if (removed) return { messageId: m.id, index: m.index, decision: removed.decision, reason: removed.reason };
      const k = kept.get(m.id);
      if (!k) throw new Error(`Context assembly lost ${label(m)} (${m.id}) without a decision.`);
      return { messageId: m.id, index: m.index, decision: k.elided ? 'ELIDED' : 'KEPT', reason: k.reason };
    });
  }
}

/** Reasons for tool-pair repairs that say where the missing call or result went. */
export function createToolPairExplainer(messages: readonly DomainMessage[], log: DecisionLog): ToolPairExplainer {
  // Built on first use: most assemblies repair nothing.
  let callAt: Map<string, DomainMessage> | null = null;
  let resultAt: Map<string, DomainMessage> | null = null;
  const index = () => {
    if (callAt && resultAt) return { callAt, resultAt };
    callAt = new Map();
    resultAt = new Map();
    for (const m of messages) {
      for (const p of m.parts) {
        if (p.type === 'toolCall' && !callAt.has(p.callId)) callAt.set(p.callId, m);
        if (p.type === 'toolResult' && !resultAt.has(p.callId)) resultAt.set(p.callId, m);
      }
    }
    return { callAt, resultAt };
  };
  const fate = (m: DomainMessage, what: string): string => {
    switch (log.get(m.id)) {
      case 'SUMMARIZED':
        return `${what} (${label(m)}) was summarized by the compaction`;
      case 'DROPPED_GENERATING':
        return `${what} (${label(m)}) is still being generated`;
      case 'HIDDEN':
        return `${what} (${label(m)}) is hidden`;
      case undefined:
        return `${what} is in ${label(m)}, which is not directly next to it`;
      default:
        return `${what} (${label(m)}) was dropped`;
    }
  };
  return {
    missingCall(callId) {
      const m = index().callAt.get(callId);
      return m ? fate(m, 'its call') : `no message before it in the history being assembled makes call ${callId}`;
    },
    missingResult(callId) {
      const m = index().resultAt.get(callId);
      return m ? fate(m, 'its result') : 'no result has been stored for it yet';
    },
  };
}
