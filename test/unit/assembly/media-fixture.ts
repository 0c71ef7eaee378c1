/** Images, PDFs and sessions holding them for the media tests: small bytes, as real encoders write them. */
import type { ContextFormat } from '../../../src/domain/assembly/types.js';
import type { DomainMessage, ResolvedAttachment, StoredPart } from '../../../src/domain/types.js';
import { call, msg, result, text } from './helpers.js';

/** A GIF89a of `frames` 1×1 frames (a NETSCAPE2.0 loop extension when animated), as an encoder writes it. */
export function gif(frames: number): Uint8Array {
  const bytes = [...Buffer.from('GIF89a'), 1, 0, 1, 0, 0x80, 0, 0, 0, 0, 0, 255, 255, 255];
  if (frames > 1) bytes.push(0x21, 0xff, 11, ...Buffer.from('NETSCAPE2.0'), 3, 1, 0, 0, 0);
  for (let i = 0; i < frames; i++) {
    bytes.push(0x21, 0xf9, 4, 0, 10, 0, 0, 0); // graphic control extension
    bytes.push(0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0); // image descriptor, no local colour table
    bytes.push(2, 2, 0x44, 0x01, 0); // LZW minimum code size, one sub-block, terminator
  }
  bytes.push(0x3b);
  return Uint8Array.from(bytes);
}

/** A 1 × 1 PNG. Fixtures say it is 1024 × 768: assembly reads the stored dimensions, never the bytes. */
export const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

/** A one-page PDF (a catalog, a page tree, one Letter page). */
export const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n' +
    '3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
);

export type Holding = 'BYTES' | 'URL' | 'PROVIDER_FILE';
export type Provider = 'openai' | 'anthropic' | 'google';

/** The provider whose files each format sends (GENERIC: any; openai here). */
export const OWN_PROVIDER: Record<ContextFormat, Provider> = {
  GENERIC: 'openai',
  OPENAI_CHAT: 'openai',
  OPENAI_RESPONSES: 'openai',
  ANTHROPIC_MESSAGES: 'anthropic',
  GEMINI: 'google',
};

const FILE_IDS: Record<Provider, string> = {
  openai: 'file-6F2ksmvXxt4VdoqmHRw6kL',
  anthropic: 'file_011CNha8iCJcU1wXNR6q4V8w',
  google: 'files/abc123',
};

/**
 * An image (a 1024 × 768 PNG) or a one-page PDF held as `holding`: the message part as stored and
 * the attachment as the service resolves it (bytes loaded for BYTES unless `bytes` says otherwise).
 */
export function mediaAttachment(
  id: string,
  media: 'image' | 'document',
  holding: Holding,
  options: { provider?: Provider; bytes?: Uint8Array | null; mimeType?: string; problem?: string } = {},
): { part: StoredPart; attachment: ResolvedAttachment } {
  const image = media === 'image';
  const name = image ? `${id}.png` : `${id}.pdf`;
  const mimeType = options.mimeType ?? (image ? 'image/png' : 'application/pdf');
  const bytes = holding === 'BYTES' ? (options.bytes === undefined ? (image ? PNG : PDF) : options.bytes) : null;
  const size = holding === 'BYTES' ? (image ? PNG : PDF).length : 0;
  const held = {
    kind: holding,
    ...(image ? { width: 1024, height: 768 } : holding === 'BYTES' ? { pages: 1 } : {}),
    ...(holding === 'URL' ? { url: `https://example.com/${name}` } : {}),
    ...(holding === 'PROVIDER_FILE'
      ? { providerFile: { provider: options.provider ?? 'openai', fileId: FILE_IDS[options.provider ?? 'openai'] } }
      : {}),
  } as const;
  return {
    part: { type: 'attachment', attachmentId: id, name, mimeType, size, ...held },
    attachment: { id, name, mimeType, size, content: null, bytes, ...held, ...(options.problem ? { problem: options.problem } : {}) },
  };
}

/**
 * A session that holds an image and a PDF by bytes, URL and `format`'s own provider file, in a user
 * message and in a tool result: every place and source a format may send media in.
 */
export function mediaSession(format: ContextFormat): { messages: DomainMessage[]; attachments: ResolvedAttachment[] } {
  const provider = OWN_PROVIDER[format];
  const all = (prefix: string) =>
    (['image', 'document'] as const).flatMap((media) =>
      (['BYTES', 'URL', 'PROVIDER_FILE'] as const).map((holding) =>
        mediaAttachment(`${prefix}_${media}_${holding.toLowerCase()}`, media, holding, { provider }),
      ),
    );
  const inUser = all('u');
  const inTool = all('t');
  return {
    messages: [
      msg(0, 'USER', [text('What is in these?'), ...inUser.map((a) => a.part)]),
      msg(1, 'ASSISTANT', [call('call_shot', 'screenshot', { page: 1 })]),
      msg(2, 'TOOL', [result('call_shot', 'Captured.'), ...inTool.map((a) => a.part)]),
      msg(3, 'USER', [text('And now?')]),
    ],
    attachments: [...inUser, ...inTool].map((a) => a.attachment),
  };
}

/**
 * A payload as contextHash covers it: each base64 of `attachments` (and its data URL) written as
 * `attachment:<id>` (hash.ts, "INLINE MEDIA"). Each attachment's bytes must be its own.
 */
export function hashForm(
  payload: unknown,
  attachments: ReadonlyArray<{ id: string; mimeType: string; bytes?: Uint8Array | null }>,
): unknown {
  const identity = new Map<string, string>();
  for (const a of attachments) {
    if (!a.bytes) continue;
    const data = Buffer.from(a.bytes).toString('base64');
    identity.set(data, `attachment:${a.id}`);
    identity.set(`data:${a.mimeType};base64,${data}`, `attachment:${a.id}`);
  }
  const walk = (v: unknown): unknown =>
    typeof v === 'string'
      ? (identity.get(v) ?? v)
      : Array.isArray(v)
        ? v.map(walk)
        : v !== null && typeof v === 'object'
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]))
          : v;
  return walk(payload);
}
