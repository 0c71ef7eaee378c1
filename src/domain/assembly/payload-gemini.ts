/** The Gemini `generateContent` payload (framing and rules: formats.ts). */
import { hasVisibleText } from './provider-rules.js';
import { geminiFileUri } from './media-rules.js';
import { hashedByIdentity, mediaType, pieceOf, textsOf, toolArgumentsValue, toolInputObject, unsendable } from './payload-pieces.js';
import { extraOf, metaOf, metaString, sends } from './provider-data.js';
import type { AssembledMessage, AssembledPart, MediaPart } from './types.js';

export type GeminiPart =
  | { text: string; thought?: true; thoughtSignature?: string }
  | { functionCall: { args: Record<string, unknown>; name: string; id?: string }; thoughtSignature?: string }
  | { functionResponse: { name: string; response: Record<string, unknown>; id?: string } }
  | Record<string, unknown>;
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

/**
 * The part's own Gemini keys: its `thoughtSignature` (sent back on the part it came with, never
 * invented: a parallel call that had none gets none) and the keys the part does not model.
 */
function geminiKeys(p: AssembledPart): Record<string, unknown> {
  const signature = metaString(p, 'google', 'thoughtSignature');
  const extra = extraOf(p, 'google');
  return signature === undefined ? extra : { ...extra, thoughtSignature: signature };
}

/** `{ id }` when the Gemini call or response this part came from had one. */
function geminiId(p: AssembledPart): { id?: string } {
  const id = metaString(p, 'google', 'id');
  return id === undefined ? {} : { id };
}

/**
 * An image or PDF part: `inlineData` (base64 and MIME type), or `fileData` (MIME type and URI) for an
 * https URL or a Files API file (its URI, from the file's name when that is what is stored). A part
 * read from a Gemini payload gets back its own keys (`thoughtSignature`, `google.extra`).
 */
function geminiMediaPart(p: MediaPart): GeminiPart {
  const source = p.source;
  const keys = geminiKeys(p);
  if (source.type === 'base64') return { ...keys, inlineData: hashedByIdentity({ data: source.data, mimeType: mediaType(p) }, 'data', p) };
  const fileUri = source.type === 'url' ? source.url : geminiFileUri(source.fileId);
  if (fileUri === null) throw unsendable('GEMINI', p);
  return { ...keys, fileData: { fileUri, mimeType: mediaType(p) } };
}

/** The turn of one user, assistant or tool message (no empty text parts unless signed), as a turn of its own. */
function geminiContentOf(m: AssembledMessage): GeminiContent {
  const parts: GeminiPart[] = [];
  for (const p of m.parts) {
    switch (p.type) {
      case 'text':
        if (hasVisibleText(p.text) || metaString(p, 'google', 'thoughtSignature') !== undefined)
          parts.push({ ...geminiKeys(p), text: p.text });
        break;
      case 'toolCall': {
        const part = { ...geminiKeys(p), functionCall: { ...geminiId(p), args: toolInputObject(toolArgumentsValue(p)), name: p.name } };
        geminiCallIds.set(part, p.callId);
        parts.push(part);
        break;
      }
      case 'toolResult': {
        const given = metaOf(p, 'google')?.response;
        const response =
          !p.elided && given !== null && typeof given === 'object' && !Array.isArray(given)
            ? (given as Record<string, unknown>)
            : p.isError
              ? { error: p.content }
              : { output: p.content };
        const part = { ...geminiKeys(p), functionResponse: { ...geminiId(p), name: p.toolName ?? p.callId, response } };
        geminiCallIds.set(part, p.callId);
        parts.push(part);
        break;
      }
      case 'reasoning':
        if (sends('GEMINI', p)) parts.push({ ...geminiKeys(p), text: p.text, thought: true });
        break;
      case 'providerPart':
        if (sends('GEMINI', p)) parts.push(p.data);
        break;
      case 'media':
        parts.push(geminiMediaPart(p));
        break;
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
