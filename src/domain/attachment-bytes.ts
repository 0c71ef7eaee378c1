/**
 * The checks on an attachment's bytes before anything is stored: base64 that decodes, a signature
 * that matches the declared type, an image whose dimensions can be read, a PDF's page count.
 *
 * A declared type with a known signature (PNG, JPEG, GIF, WebP, PDF) must carry that signature,
 * and bytes carrying one of those signatures must be declared as that type: a JPEG sent as
 * `image/png` is refused either way. Any other `image/*` type must be one `image-size` can read
 * (dimensions are part of what every provider's token count needs). Text types keep their text
 * path (see `textOfBytes`).
 */
import { imageSize } from 'image-size';
import { badInput } from './errors.js';

/** Declared types whose bytes must start with their signature. */
const SIGNED_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf'] as const;
export type SignedType = (typeof SIGNED_TYPES)[number];

const NAMES: Record<SignedType, string> = {
  'image/png': 'a PNG image',
  'image/jpeg': 'a JPEG image',
  'image/gif': 'a GIF image',
  'image/webp': 'a WebP image',
  'application/pdf': 'a PDF document',
};

const startsWith = (bytes: Uint8Array, at: number, ascii: string | number[]) => {
  const codes = typeof ascii === 'string' ? [...ascii].map((c) => c.charCodeAt(0)) : ascii;
  if (bytes.length < at + codes.length) return false;
  return codes.every((code, i) => bytes[at + i] === code);
};

/** The signed type the bytes' signature says, or null. A PDF's `%PDF-` may follow up to 1,024 bytes of junk, as readers allow. */
export function sniffType(bytes: Uint8Array): SignedType | null {
  if (startsWith(bytes, 0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(bytes, 0, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(bytes, 0, 'GIF87a') || startsWith(bytes, 0, 'GIF89a')) return 'image/gif';
  if (startsWith(bytes, 0, 'RIFF') && startsWith(bytes, 8, 'WEBP')) return 'image/webp';
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 1024 + 5));
  if (head.indexOf('%PDF-', 0, 'latin1') >= 0) return 'application/pdf';
  return null;
}

/** The declared type, lower case, without parameters; `image/jpg` read as `image/jpeg`. */
export function baseType(mimeType: string): string {
  const base = mimeType.split(';')[0].trim().toLowerCase();
  return base === 'image/jpg' ? 'image/jpeg' : base;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Strict base64 (RFC 4648, standard alphabet, padded; whitespace is not allowed): BAD_USER_INPUT
 * naming `where` for anything else. Node's decoder skips what it cannot read, so the text is
 * checked first and the decoded length must match the text's.
 */
export function decodeBase64(data: string, where: string): Buffer {
  if (data.length % 4 !== 0 || !BASE64.test(data)) {
    throw badInput(`${where} is not base64: use the standard alphabet (A–Z, a–z, 0–9, + and /) with = padding, no line breaks or spaces.`);
  }
  const bytes = Buffer.from(data, 'base64');
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  if (bytes.length !== (data.length / 4) * 3 - padding) throw badInput(`${where} is not base64: it does not decode whole.`);
  return bytes;
}

/** What the checks learned of the bytes. */
export interface CheckedBytes {
  width?: number;
  height?: number;
  pages?: number;
}

/** Checks bytes against their declared type (see the module comment); `where` names the part in errors. */
export function checkBytes(mimeType: string, bytes: Uint8Array, where: string): CheckedBytes {
  const declared = baseType(mimeType);
  const found = sniffType(bytes);
  if ((SIGNED_TYPES as readonly string[]).includes(declared) && found !== declared) {
    const what = found ? `${NAMES[found]} (${found})` : 'not what its signature would be';
    throw badInput(`${where}: the bytes are ${what}, not ${declared} as declared; nothing was stored.`, {
      declared,
      detected: found,
    });
  }
  if (found && found !== declared) {
    throw badInput(
      `${where}: the bytes are ${NAMES[found]} (${found}), not ${declared} as declared; declare ${found}. Nothing was stored.`,
      {
        declared,
        detected: found,
      },
    );
  }
  if (declared === 'application/pdf') {
    const pages = pdfPageCount(bytes);
    return pages === null ? {} : { pages };
  }
  if (!declared.startsWith('image/')) return {};
  let size: { width?: number; height?: number };
  try {
    // A copy of the head: image-size reads through the view's ArrayBuffer, which for a small
    // decoded Buffer is Node's shared pool, so a truncated image would read other bytes as its own.
    size = imageSize(new Uint8Array(bytes.subarray(0, IMAGE_HEAD_BYTES)));
  } catch {
    size = {};
  }
  if (!size.width || !size.height) {
    throw badInput(
      `${where}: the dimensions of this ${declared} image cannot be read; the file is damaged or not an image. Nothing was stored.`,
    );
  }
  return { width: size.width, height: size.height };
}

/** Where every format's dimensions are found (a JPEG's frame header may follow a large EXIF block). */
const IMAGE_HEAD_BYTES = 1024 * 1024;

const COUNT = Buffer.from('/Count');

/**
 * A PDF's page count as its page tree states it: the largest `/Count n` in the file (the root
 * `/Pages` node counts every page below it). Null when none is readable, as in a PDF whose page
 * tree sits in a compressed object stream: the count is an estimate, used only for token estimates.
 */
export function pdfPageCount(bytes: Uint8Array): number | null {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  let best = 0;
  for (let at = buffer.indexOf(COUNT); at >= 0; at = buffer.indexOf(COUNT, at + COUNT.length)) {
    let i = at + COUNT.length;
    while (i < buffer.length && (buffer[i] === 0x20 || buffer[i] === 0x0a || buffer[i] === 0x0d || buffer[i] === 0x09)) i++;
    let n = 0;
    let digits = 0;
    while (i < buffer.length && buffer[i] >= 0x30 && buffer[i] <= 0x39 && digits < 7) {
      n = n * 10 + (buffer[i] - 0x30);
      i++;
      digits++;
    }
    if (digits > 0 && n > best) best = n;
  }
  return best > 0 ? best : null;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The bytes as text when they are valid UTF-8 (a leading BOM dropped), else null. */
export function textOfBytes(bytes: Uint8Array): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}
