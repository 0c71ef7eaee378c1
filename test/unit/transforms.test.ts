import { describe, expect, it } from 'vitest';
import { runAssembly } from '../../src/domain/assembly/index.js';
import { childLineage, historyMark, transformScopes } from '../../src/domain/lineage.js';
import { countStoredTokens } from '../../src/domain/tokens.js';
import { foldTransforms, projectMessage, redactParts, type TransformRecord } from '../../src/domain/transforms.js';
import type { DomainMessage, StoredPart } from '../../src/domain/types.js';

const at = new Date(0);
const rec = (r: Partial<TransformRecord> & Pick<TransformRecord, 'kind'>): TransformRecord => ({
  messageId: null,
  position: 0,
  reason: null,
  replacement: null,
  tokens: null,
  createdAt: at,
  scopeEnd: null,
  ...r,
});

describe('foldTransforms', () => {
  it('replays in order: the latest word on a message wins, strips take the furthest index clipped to their scope', () => {
    const t = foldTransforms([
      rec({ kind: 'HIDE', messageId: 'a', position: 1, reason: 'one', scopeEnd: 5 }),
      rec({ kind: 'HIDE', messageId: 'b', position: 2, reason: 'two', scopeEnd: 5 }),
      rec({ kind: 'STRIP_TOOL_OUTPUTS', position: 9, scopeEnd: 5 }),
      rec({ kind: 'REDACT', messageId: 'c', position: 3, replacement: 'r', tokens: { O200K_BASE: 1, CL100K_BASE: 1 }, scopeEnd: 5 }),
      rec({ kind: 'UNHIDE', messageId: 'a', position: 1 }),
      rec({ kind: 'HIDE', messageId: 'b', position: 2, reason: 'again' }),
      rec({ kind: 'STRIP_TOOL_OUTPUTS', position: 3 }),
    ]);
    expect([...t.hidden.entries()].map(([id, h]) => [id, h.reason])).toEqual([['b', 'again']]);
    expect(t.redacted.get('c')?.replacement).toBe('r');
    expect(t.stripUpto).toBe(5);
    expect(
      foldTransforms([
        ...[rec({ kind: 'REDACT', messageId: 'c', replacement: 'r', tokens: { O200K_BASE: 1, CL100K_BASE: 1 } })],
        rec({ kind: 'UNREDACT', messageId: 'c' }),
      ]).redacted.size,
    ).toBe(0);
  });
});

describe('redactParts', () => {
  it('replaces every piece of content and keeps the tool structure', () => {
    const assistant: StoredPart[] = [
      { type: 'text', text: 'secret' },
      { type: 'toolCall', callId: 'c1', name: 'read', arguments: { token: 'secret' } },
      { type: 'attachment', attachmentId: 'x', name: 'a.txt', mimeType: 'text/plain', size: 3 },
    ];
    expect(redactParts(assistant, 'R')).toEqual([
      { type: 'text', text: 'R' },
      { type: 'toolCall', callId: 'c1', name: 'read', arguments: {} },
    ]);
    const tool: StoredPart[] = [
      { type: 'toolResult', callId: 'c1', content: 'secret', isError: false },
      { type: 'toolResult', callId: 'c2', content: 'secret', isError: true },
    ];
    expect(redactParts(tool, 'R')).toEqual([
      { type: 'toolResult', callId: 'c1', content: 'R', isError: false },
      { type: 'toolResult', callId: 'c2', content: '[redacted]', isError: true },
    ]);
    expect(redactParts([{ type: 'toolCall', callId: 'c', name: 'n', arguments: {} }], 'R')[0]).toEqual({ type: 'text', text: 'R' });
  });

  it('is what the pipeline sends and counts, with the counts stored at write time', () => {
    const parts: StoredPart[] = [{ type: 'text', text: 'a long secret that must not be sent' }];
    const message: DomainMessage = { id: 'm', index: 0, role: 'USER', parts, generating: false, tokens: countStoredTokens(parts) };
    const replacement = 'gone';
    const tokens = countStoredTokens(redactParts(parts, replacement));
    const transforms = foldTransforms([rec({ kind: 'REDACT', messageId: 'm', replacement, tokens })]);
    expect(projectMessage(message, transforms).tokens).toEqual(tokens);
    const options = {
      maxTokens: null,
      maxMessages: null,
      keepToolCallRounds: 2,
      encoding: 'O200K_BASE' as const,
      system: null,
      turnContext: null,
      format: 'OPENAI_CHAT' as const,
      attachmentMaxChars: 1000,
      contextAttachmentMaxChars: 1000,
    };
    const flags = { isFork: false, isFirstTurn: true, hasConnectorSwap: false };
    const redacted = runAssembly({ messages: [message], compaction: null, attachments: new Map(), transforms, options, flags });
    const twin = runAssembly({
      messages: [
        { ...message, parts: [{ type: 'text', text: replacement }], tokens: countStoredTokens([{ type: 'text', text: replacement }]) },
      ],
      compaction: null,
      attachments: new Map(),
      options,
      flags,
    });
    expect(redacted.payload).toEqual(twin.payload);
    expect(redacted.tokenCount).toBe(twin.tokenCount);
  });
});

describe('transform scopes', () => {
  it('a fork sees its ancestors transforms as counted when its lineage left them, before what it sees of them', () => {
    const root = { id: 'r', forkIndex: null, messageCount: 10, lineage: [], compactionCount: 1, transformCount: 4 };
    const f1 = { id: 'f1', forkIndex: 6, messageCount: 9, lineage: childLineage(root, 6), compactionCount: 0, transformCount: 2 };
    const f2 = { id: 'f2', forkIndex: 8, messageCount: 8, lineage: childLineage(f1, 8), compactionCount: 0, transformCount: 0 };
    expect(transformScopes(f2)).toEqual([
      { sessionId: 'r', maxOrdinal: 4, maxEnd: 6 },
      { sessionId: 'f1', maxOrdinal: 2, maxEnd: 8 },
    ]);
    expect(transformScopes({ ...root, transformCount: 0 })).toEqual([]);
    // Lineages written before transforms existed hold no count: nothing inherited.
    expect(transformScopes({ id: 'old', lineage: [{ sessionId: 'r', start: 0, end: 3, compactions: 1 }], transformCount: 0 })).toEqual([]);
    expect(historyMark(f2)).toBe(4 + 1 + 2);
  });
});
