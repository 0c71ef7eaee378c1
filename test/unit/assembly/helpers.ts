/** Builders for context-assembly tests: messages with stored token counts, like the server writes them. */
import { countStoredTokens } from '../../../src/domain/tokens.js';
import type { DomainCompaction, DomainMessage, MessageRole, ResolvedAttachment, StoredPart } from '../../../src/domain/types.js';
import type { AssembleContextInput, AssembleContextOptions } from '../../../src/domain/assembly/index.js';

export function msg(index: number, role: MessageRole, parts: StoredPart[], extra: Partial<DomainMessage> = {}): DomainMessage {
  return { id: `m${index}`, index, role, parts, generating: false, tokens: countStoredTokens(parts), ...extra };
}

export const text = (t: string): StoredPart => ({ type: 'text', text: t });
export const call = (callId: string, name = 'search', args: unknown = { q: callId }): StoredPart => ({
  type: 'toolCall',
  callId,
  name,
  arguments: args,
  argumentsJson: JSON.stringify(args),
});
/** A tool call whose arguments were given as JSON text (stored and sent byte for byte). */
export const callJson = (callId: string, name: string, argumentsJson: string): StoredPart => ({
  type: 'toolCall',
  callId,
  name,
  arguments: JSON.parse(argumentsJson),
  argumentsJson,
});
export const result = (callId: string, content = `result of ${callId}`, isError = false): StoredPart => ({
  type: 'toolResult',
  callId,
  content,
  isError,
});
export const attachmentPart = (attachmentId: string, name = `${attachmentId}.txt`, mimeType = 'text/plain', size = 0): StoredPart => ({
  type: 'attachment',
  attachmentId,
  name,
  mimeType,
  size,
});

export const user = (i: number, t: string, extra: Partial<DomainMessage> = {}) => msg(i, 'USER', [text(t)], extra);
export const assistant = (i: number, t: string, extra: Partial<DomainMessage> = {}) => msg(i, 'ASSISTANT', [text(t)], extra);
export const system = (i: number, t: string) => msg(i, 'SYSTEM', [text(t)]);
export const calls = (i: number, ids: string[], t?: string) => msg(i, 'ASSISTANT', [...(t ? [text(t)] : []), ...ids.map((id) => call(id))]);
export const results = (i: number, ids: string[], content?: (id: string) => string) =>
  msg(
    i,
    'TOOL',
    ids.map((id) => result(id, content ? content(id) : undefined)),
  );

export function defaultOptions(overrides: Partial<AssembleContextOptions> = {}): AssembleContextOptions {
  return {
    maxTokens: null,
    maxMessages: null,
    keepToolCallRounds: 2,
    encoding: 'O200K_BASE',
    system: null,
    turnContext: null,
    format: 'GENERIC',
    attachmentMaxChars: 20_000,
    contextAttachmentMaxChars: 100_000,
    ...overrides,
  };
}

export function makeInput(
  messages: DomainMessage[],
  options: Partial<AssembleContextOptions> = {},
  extra: { compaction?: DomainCompaction | null; attachments?: ResolvedAttachment[] } = {},
): AssembleContextInput {
  return {
    messages,
    compaction: extra.compaction ?? null,
    attachments: new Map((extra.attachments ?? []).map((a) => [a.id, a])),
    options: defaultOptions(options),
    flags: { isFork: false, isFirstTurn: false, hasConnectorSwap: false },
  };
}

export const textAttachment = (id: string, content: string, name = `${id}.txt`, mimeType = 'text/plain'): ResolvedAttachment => ({
  id,
  name,
  mimeType,
  size: content.length,
  content,
});

/** A deterministic pseudo-random generator (mulberry32) so generated sessions are reproducible. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SNIPPETS = [
  'Could you refactor the parser so that it handles nested quotes? ',
  'function add(a: number, b: number): number {\n  return a + b;\n}\n',
  '{"id": 42, "tags": ["alpha", "beta"], "nested": {"ok": true, "value": 3.14}}\n',
  '日本語のテキストも含まれています。絵文字も 🎉🚀 ',
  'The quick brown fox jumps over the lazy dog. ',
  "SELECT id, name FROM users WHERE created_at > now() - interval '7 days';\n",
];

/**
 * A long session of mixed text, code, JSON and tool rounds (parallel calls included), with stored
 * token counts as the server would have written them. Always ends with a USER message.
 */
export function generateSession(count: number, seed = 1): DomainMessage[] {
  const random = rng(seed);
  const body = (min: number, max: number) => {
    const n = min + Math.floor(random() * (max - min + 1));
    let s = '';
    for (let i = 0; i < n; i++) s += SNIPPETS[Math.floor(random() * SNIPPETS.length)];
    return s;
  };
  const out: DomainMessage[] = [];
  let callNo = 0;
  while (out.length < count - 1) {
    const i = out.length;
    const r = random();
    if (out.length === 0 || out[out.length - 1].role !== 'USER') {
      out.push(msg(i, 'USER', [text(body(1, 4))]));
    } else if (r < 0.4 && out.length + 3 < count - 1) {
      const n = 1 + Math.floor(random() * 3);
      const ids = Array.from({ length: n }, () => `call_${++callNo}`);
      out.push(msg(i, 'ASSISTANT', [text(body(0, 1)), ...ids.map((id) => call(id, 'run_query', { sql: body(1, 1) }))]));
      out.push(
        msg(
          i + 1,
          'TOOL',
          ids.map((id) => result(id, body(2, 10))),
        ),
      );
      out.push(msg(i + 2, 'ASSISTANT', [text(body(1, 5))]));
    } else {
      out.push(msg(i, 'ASSISTANT', [text(body(1, 6))]));
    }
  }
  out.push(msg(out.length, 'USER', [text(body(1, 3))]));
  return out;
}
