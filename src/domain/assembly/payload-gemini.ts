/** The Gemini `generateContent` payload (framing and rules: formats.ts). */
import { hasVisibleText } from './provider-rules.js';
import { pieceOf, textsOf, toolArgumentsValue, toolInputObject } from './payload-pieces.js';
import type { AssembledMessage } from './types.js';

export type GeminiPart =
  | { text: string }
  | { functionCall: { args: Record<string, unknown>; name: string } }
  | { functionResponse: { name: string; response: { output: string } | { error: string } } };
export interface GeminiContent {
  role: 'user' | 'model';
  parts: GeminiPart[];
}
export interface GeminiPayload {
  contents: GeminiContent[];
  systemInstruction?: { parts: Array<{ text: string }> };
}

/** The call id each function part stands for (Gemini sends none): orders a round's responses as its calls. */
const geminiCallIds = new WeakMap<object, string>();

/** The turn of one user, assistant or tool message (no empty text parts), as a turn of its own. */
function geminiContentOf(m: AssembledMessage): GeminiContent {
  const parts: GeminiPart[] = [];
  for (const p of m.parts) {
    if (p.type === 'text') {
      if (hasVisibleText(p.text)) parts.push({ text: p.text });
    } else if (p.type === 'toolCall') {
      const part = { functionCall: { args: toolInputObject(toolArgumentsValue(p)), name: p.name } };
      geminiCallIds.set(part, p.callId);
      parts.push(part);
    } else {
      const part = {
        functionResponse: { name: p.toolName ?? p.callId, response: p.isError ? { error: p.content } : { output: p.content } },
      };
      geminiCallIds.set(part, p.callId);
      parts.push(part);
    }
  }
  return { parts, role: m.role === 'ASSISTANT' ? 'model' : 'user' };
}

export function toGemini(messages: readonly AssembledMessage[]): GeminiPayload {
  const system: Array<{ text: string }> = [];
  const contents: GeminiContent[] = [];
  // Whether contents' last turn was made here by merging (so it may be extended in place).
  let lastMerged = false;
  for (const m of messages) {
    if (m.role === 'SYSTEM') {
      for (const text of textsOf(m.parts)) if (hasVisibleText(text)) system.push({ text });
      continue;
    }
    // Results carry the name of their call (provider rules), so TOOL turns are built every time.
    const content = m.role === 'TOOL' ? geminiContentOf(m) : pieceOf('GEMINI', m, geminiContentOf);
    if (content.parts.length === 0) continue;
    const last = contents[contents.length - 1];
    if (last && last.role === content.role) {
      if (!lastMerged) contents[contents.length - 1] = { parts: [...last.parts], role: last.role };
      contents[contents.length - 1].parts.push(...content.parts);
      lastMerged = true;
    } else {
      contents.push(content);
      lastMerged = false;
    }
  }
  orderFunctionResponses(contents);
  return system.length > 0 ? { contents, systemInstruction: { parts: system } } : { contents };
}

/**
 * Puts the function responses of the user turn after each model turn that calls first, in the
 * order of the calls (Gemini pairs them by position and name). Turns are copied, never changed.
 */
function orderFunctionResponses(contents: GeminiContent[]): void {
  for (let i = 1; i < contents.length; i++) {
    const calls = contents[i - 1].parts.flatMap((p) => ('functionCall' in p ? [geminiCallIds.get(p)] : []));
    if (contents[i].role !== 'user' || calls.length === 0) continue;
    const rank = (p: GeminiPart) => ('functionResponse' in p ? calls.indexOf(geminiCallIds.get(p)) : calls.length);
    const parts = contents[i].parts;
    const ordered = [...parts].sort((a, b) => rank(a) - rank(b));
    if (ordered.some((p, k) => p !== parts[k])) contents[i] = { parts: ordered, role: 'user' };
  }
}
