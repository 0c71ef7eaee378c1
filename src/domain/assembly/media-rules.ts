/**
 * Which images and files each format sends as its provider's own block, held how (bytes, an https
 * URL, a provider's file id) and in which message. What a rule refuses goes as a placeholder with a
 * NOT_SENDABLE problem (attachments.ts); a payload is never one its provider would refuse for it.
 * Each rule, its source and its test are listed in docs/attachments.md; where the providers' docs
 * are silent, the rule refuses (the SDK types allow more than the docs show).
 *
 * | place             | OPENAI_CHAT        | OPENAI_RESPONSES        | ANTHROPIC_MESSAGES  | GEMINI |
 * | USER message      | yes                | yes                     | yes                 | yes    |
 * | TOOL message      | no (text only)     | in function_call_output | in tool_result      | no     |
 * | SYSTEM, ASSISTANT | no                 | no                      | no                  | no     |
 *
 * Held as: OPENAI_CHAT takes an image as bytes or URL (no file id) and a PDF as bytes or an OpenAI
 * file id (no URL); OPENAI_RESPONSES, ANTHROPIC_MESSAGES and GEMINI take each way, a provider file
 * only from their own provider. GEMINI refuses GIF images; both OpenAI formats refuse animated GIFs
 * (known only when the bytes are loaded). GENERIC is no provider's shape: it sends everything.
 */
import type { AttachmentKind, AttachmentStoredPart, MessageRole, ProviderFileRef, ProviderName } from '../types.js';
import type { ContextFormat } from './types.js';

export type MediaKind = 'image' | 'document';

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** The MIME type without parameters, lower case. */
export const baseMimeType = (mimeType: string) => mimeType.split(';')[0].trim().toLowerCase();

/** `image` for PNG, JPEG, GIF and WebP, `document` for PDF: what is sent as media; null for anything else. */
export function mediaKindOf(mimeType: string): MediaKind | null {
  const base = baseMimeType(mimeType);
  if (IMAGE_TYPES.has(base)) return 'image';
  return base === 'application/pdf' ? 'document' : null;
}

/** The provider whose file ids a format takes (GENERIC: none in particular). */
export const FILE_PROVIDER: Record<ContextFormat, ProviderName | null> = {
  GENERIC: null,
  OPENAI_CHAT: 'openai',
  OPENAI_RESPONSES: 'openai',
  ANTHROPIC_MESSAGES: 'anthropic',
  GEMINI: 'google',
};

/**
 * The URI Gemini's `fileData.fileUri` takes for a Google file id: the id as given when it is the
 * file's URI (https), else the URI of a Files API name (`files/abc123`); null for anything else.
 */
export function geminiFileUri(fileId: string): string | null {
  if (fileId.startsWith('https://')) return fileId;
  return /^files\/[a-z0-9-]+$/i.test(fileId) ? `https://generativelanguage.googleapis.com/v1beta/${fileId}` : null;
}

/** What the rules look at of an image or PDF attachment. */
export interface MediaCandidate {
  media: MediaKind;
  mimeType: string;
  kind: Exclude<AttachmentKind, 'TEXT'>;
  providerFile?: ProviderFileRef | null;
  /** BYTES, when loaded: a GIF's frames are counted. */
  bytes?: Uint8Array | null;
}

const what = (media: MediaKind) => (media === 'image' ? 'an image' : 'a PDF');

/** Why the format cannot send media in a message of this role, or null. */
function roleRule(format: ContextFormat, role: MessageRole, media: MediaKind): string | null {
  if (format === 'GENERIC' || role === 'USER') return null;
  const cannot = `${format} cannot send ${what(media)} in ${role === 'ASSISTANT' ? 'an' : 'a'} ${role} message`;
  switch (role) {
    case 'SYSTEM':
      return format === 'ANTHROPIC_MESSAGES' || format === 'GEMINI'
        ? `${cannot} (its system prompt is text only)`
        : format === 'OPENAI_CHAT'
          ? `${cannot} (a system message holds text only)`
          : `${cannot} (OpenAI documents images and files in user messages and tool outputs only)`;
    case 'ASSISTANT':
      return format === 'OPENAI_CHAT'
        ? `${cannot} (an assistant message holds text only)`
        : `${cannot} (the provider documents images and files in user turns${format === 'GEMINI' ? '' : ' and tool results'} only)`;
    case 'TOOL':
      if (format === 'OPENAI_RESPONSES' || format === 'ANTHROPIC_MESSAGES') return null;
      return format === 'OPENAI_CHAT'
        ? `${cannot} (a tool message holds text only)`
        : `${cannot} (a function response carries images and files only on Gemini 3 models, and parts beside it are not documented)`;
  }
}

/**
 * Why `format` cannot send this image or PDF in a message of `role`, as a clause naming the format
 * ("OPENAI_CHAT cannot send an image in a TOOL message (…)"), or null when it can. Also what the
 * service asks before loading an attachment's bytes: a format that cannot send them needs none.
 */
export function mediaNotSendableBecause(format: ContextFormat, role: MessageRole, c: MediaCandidate): string | null {
  const byRole = roleRule(format, role, c.media);
  if (byRole !== null) return byRole;
  if (format === 'GENERIC') return null;
  const mime = baseMimeType(c.mimeType);
  if (format === 'GEMINI' && mime === 'image/gif') return 'GEMINI cannot send a GIF image (Gemini takes PNG, JPEG, WebP, HEIC and HEIF)';
  if ((format === 'OPENAI_CHAT' || format === 'OPENAI_RESPONSES') && mime === 'image/gif' && c.bytes && isAnimatedGif(c.bytes)) {
    return `${format} cannot send an animated GIF (OpenAI takes non-animated GIFs only)`;
  }
  if (format === 'OPENAI_CHAT' && c.media === 'image' && c.kind === 'PROVIDER_FILE') {
    return 'OPENAI_CHAT cannot send an image by file id (an image_url part takes a URL or base64 data only)';
  }
  if (format === 'OPENAI_CHAT' && c.media === 'document' && c.kind === 'URL') {
    return 'OPENAI_CHAT cannot send a PDF by URL (OpenAI: "Inputs by file URL are not supported for chat completions")';
  }
  if (c.kind === 'PROVIDER_FILE') {
    const provider = c.providerFile?.provider;
    if (provider !== FILE_PROVIDER[format]) {
      return `${format} cannot send a file uploaded to ${provider ?? 'an unknown provider'} (a file id is valid only with the provider that issued it)`;
    }
    if (format === 'GEMINI' && geminiFileUri(c.providerFile!.fileId) === null) {
      return 'GEMINI cannot send this Google file: its id is neither a Files API name (files/…) nor its https URI';
    }
  }
  return null;
}

/**
 * Whether assembly in `format` needs the bytes of this attachment part of a message of `role`: a
 * BYTES image or PDF that the format can send there (a GIF's frames are looked at only once its
 * bytes are loaded). What the caller loads, within its cap on bytes, before calling assembly.
 */
export function needsBytes(format: ContextFormat, role: MessageRole, part: AttachmentStoredPart): boolean {
  if (part.kind !== 'BYTES') return false;
  const media = mediaKindOf(part.mimeType);
  return media !== null && mediaNotSendableBecause(format, role, { media, mimeType: part.mimeType, kind: 'BYTES' }) === null;
}

/**
 * Whether GIF bytes hold more than one frame (image descriptor), by walking the GIF's blocks (GIF89a
 * specification: header, logical screen descriptor, global colour table, then extension and image
 * blocks of length-prefixed sub-blocks). Bytes that are not a well-formed GIF count as one frame:
 * the provider judges them.
 */
export function isAnimatedGif(bytes: Uint8Array): boolean {
  if (bytes.length < 13 || bytes[0] !== 0x47 || bytes[1] !== 0x49 || bytes[2] !== 0x46) return false;
  const colourTable = (packed: number) => (packed & 0x80 ? 3 * 2 ** ((packed & 0x07) + 1) : 0);
  let at = 13 + colourTable(bytes[10]);
  const skipSubBlocks = () => {
    while (at < bytes.length && bytes[at] !== 0) at += bytes[at] + 1;
    at++;
  };
  let frames = 0;
  while (at < bytes.length) {
    const block = bytes[at];
    if (block === 0x2c) {
      if (++frames > 1) return true;
      if (at + 10 > bytes.length) return false;
      at += 10 + colourTable(bytes[at + 9]) + 1; // descriptor, local colour table, LZW minimum code size
      skipSubBlocks();
    } else if (block === 0x21) {
      at += 2; // introducer, label
      skipSubBlocks();
    } else {
      return false; // the trailer (0x3b) or bytes that are not a block
    }
  }
  return false;
}

/**
 * The context as a turn records it: every inline image or PDF named by its attachment instead of
 * its bytes (`attachment:<id>` in place of the base64, in the parts and wherever the payload holds
 * it, as is or in a data URL), so a recorded turn never stores a file's bytes again. The served
 * context is unchanged; `contextHash` already names media by their attachment.
 */
export function withMediaByReference<T extends { messages: { parts: readonly unknown[] }[]; payload: unknown }>(context: T): T {
  const named = new Map<string, string>();
  for (const m of context.messages) {
    for (const p of m.parts as { type: string; attachmentId?: string; mimeType?: string; source?: { type: string; data?: string } }[]) {
      if (p.type !== 'media' || p.source?.type !== 'base64' || p.source.data === undefined) continue;
      named.set(p.source.data, `attachment:${p.attachmentId}`);
    }
  }
  if (named.size === 0) return context;
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') {
      // As is (Anthropic, Gemini), or as a data URL (OpenAI): `data:<type>;base64,<data>`.
      const data = value.startsWith('data:') ? value.slice(value.indexOf(',') + 1) : value;
      return named.get(data) ?? value;
    }
    if (Array.isArray(value)) return value.map(walk);
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]));
    return value;
  };
  return { ...context, messages: walk(context.messages) as T['messages'], payload: walk(context.payload) };
}
