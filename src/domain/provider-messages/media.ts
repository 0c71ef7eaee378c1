/**
 * Images and documents in provider payloads, read as attachment parts (`PartInput.attachment`), so
 * a conversation appended from one provider's payload sends them in every format's own blocks
 * (assembly/media-rules.ts). Only what an attachment sends as media is read so: PNG, JPEG, GIF and
 * WebP images and PDFs, held as base64, an https URL or a provider's file id (and Anthropic's
 * plain-text documents, as text); anything else stays a provider part of its format.
 *
 * Base64 is not decoded here: the attachment checks (parts.ts, `attachmentOf`) decode it and check
 * it against its declared type once, when the messages are drafted, and name the block's JSON path
 * (`sourcePath`) in what they refuse, so the whole append is refused with that path.
 */
import { badInput } from '../errors.js';
import { LIMITS } from '../limits.js';
import type { AttachmentInput, PartInput } from '../parts.js';
import type { ProviderName } from '../types.js';
import { mediaKindOf, type MediaKind } from '../assembly/media-rules.js';
import type { Json } from './common.js';

/** The type as an attachment declares it: lower case, no parameters, `image/jpg` read as `image/jpeg`. */
export function mediaType(value: string): string {
  const base = value.split(';')[0].trim().toLowerCase();
  return base === 'image/jpg' ? 'image/jpeg' : base;
}

const BY_EXTENSION: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  pdf: 'application/pdf',
};

const EXTENSION: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'application/pdf': 'pdf',
  'text/plain': 'txt',
};

/** The media type a file name's or URL path's extension says (images and PDF only), or null. */
export function typeOfName(name: string | undefined): string | null {
  if (name === undefined) return null;
  let path = name;
  if (/^https:\/\//i.test(name)) {
    try {
      path = new URL(name).pathname;
    } catch {
      return null;
    }
  }
  const match = /\.([a-z0-9]+)$/i.exec(path);
  return match ? (BY_EXTENSION[match[1].toLowerCase()] ?? null) : null;
}

/**
 * The type of an image known only by its URL, its file id or its file name: the extension's when it
 * names an image type, else JPEG (the provider reads the image itself; the type matters only to
 * Gemini's `fileData`, which carries one).
 */
export function imageTypeOf(...names: (string | undefined)[]): string {
  for (const name of names) {
    const type = typeOfName(name);
    if (type !== null && mediaKindOf(type) === 'image') return type;
  }
  return 'image/jpeg';
}

/** A `data:<type>[;params];base64,<data>` URL's type and base64, or null for anything else. */
export function parseDataUrl(url: string): { mimeType: string; data: string } | null {
  const match = /^data:([^;,]*)((?:;[^;,]*)*),/i.exec(url);
  if (!match) return null;
  const params = match[2].toLowerCase().split(';');
  if (!params.includes('base64')) return null;
  return { mimeType: mediaType(match[1]), data: url.slice(match[0].length) };
}

/** An https URL an attachment can hold (at most 4,096 characters), or null. */
export function httpsUrl(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > 4096) return null;
  try {
    return new URL(value).protocol === 'https:' ? value : null;
  } catch {
    return null;
  }
}

/** A file id an attachment can hold (1 to 1,024 characters), or null. */
export const fileId = (value: unknown): string | null =>
  typeof value === 'string' && value.trim() !== '' && value.length <= 1024 ? value : null;

/** A name the block gave (a file name, a title) when an attachment can take it as its name, else null. */
export function givenName(value: unknown): string | null {
  if (typeof value !== 'string' || !value.trim() || value.length > LIMITS.idLength) return null;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return null;
  }
  return value;
}

const MIME_TYPE = /^[\w.+-]+\/[\w.+-]+$/;

/** Where an attachment's content comes from in the payload. */
export type MediaSource =
  | { data: string; where: string }
  | { content: string; where: string }
  | { url: string }
  | { providerFile: { provider: ProviderName; fileId: string } };

/**
 * Names the attachments of one message: the block's own name when it gave one, else `image-<k>` or
 * `document-<k>` (counted per message and kind) with its type's extension.
 */
export class MediaNames {
  private counts = { image: 0, document: 0 };

  next(kind: MediaKind, mimeType: string, given: string | null): string {
    const k = ++this.counts[kind];
    if (given !== null) return given;
    const extension = EXTENSION[mimeType];
    return `${kind}-${k}${extension ? `.${extension}` : ''}`;
  }
}

/**
 * An attachment part: its name, its type (checked here against what a type looks like, at `where`,
 * the JSON path of the block's type), its source and the provider metadata of its block.
 */
export function attachmentPart(name: string, mimeType: string, source: MediaSource, typeWhere: string, providerMetadata?: Json): PartInput {
  if (!MIME_TYPE.test(mimeType)) throw badInput(`${typeWhere} "${mimeType.slice(0, 100)}" is not a MIME type.`);
  const attachment: AttachmentInput = { name, mimeType };
  if ('data' in source) Object.assign(attachment, { data: source.data, sourcePath: source.where });
  else if ('content' in source) Object.assign(attachment, { content: source.content, sourcePath: source.where });
  else if ('url' in source) attachment.url = source.url;
  else attachment.providerFile = source.providerFile;
  if (providerMetadata !== undefined) attachment.providerMetadata = providerMetadata;
  return { attachment };
}
