/**
 * Step 6: resolve attachment parts to text the model sees.
 *
 * A readable text attachment is inlined as one clearly delimited block:
 *
 *     <attachment name="notes.md" mime="text/markdown">
 *     …content, with & and < escaped…
 *     </attachment>
 *
 * The name and mime type are attribute-escaped (& < > " '), the content text-escaped (& and <), so
 * neither can close the block or open a fake one. Content is capped per attachment
 * (`attachmentMaxChars`) and per context (`contextAttachmentMaxChars`), counted in characters
 * (UTF-16 code units) of the original text; a cut never splits a code point (nor, where it can be
 * found nearby, a grapheme cluster such as a ZWJ emoji sequence), and the block says it was cut.
 * A missing, unreadable or non-text attachment becomes a short placeholder element, and every such
 * case (and every cut) is reported in `attachmentProblems`: nothing is dropped silently.
 *
 * REFERENCE mode (`attachmentMode: REFERENCE`) inlines no content: every attachment with text
 * content becomes a short reference block instead, whatever its MIME type (the agent reads it in
 * pages with the read_attachment tool, see attachment-tool.ts; the MIME type tells it what it is):
 *
 *     <attachment_ref id="QXR0YWNo…" name="notes.md" mime="text/markdown" bytes="5120" chars="5003">
 *     Not inlined. To read it, call read_attachment with this id, an offset and a length (in characters, at most 65536 per call).
 *     </attachment_ref>
 *
 * `id` is the client's opaque attachment ID, `bytes` the stored size (UTF-8), `chars` the length
 * in Unicode code points, the unit read_attachment reads in. The caps do not apply (nothing is
 * inlined); a missing or unreadable attachment gets the same placeholder and problem as INLINE.
 * The block is counted and fitted exactly as an inline block is.
 *
 * IMAGES AND PDFs held as bytes, by URL or by a provider's file id (`kind` BYTES, URL,
 * PROVIDER_FILE; PNG, JPEG, GIF, WebP, PDF) are sent as media parts (`MediaPart`), which each payload
 * builder turns into its provider's own block, in both modes: REFERENCE mode is about text. The
 * format and the message's role decide whether it can be sent there (media-rules.ts); when not, a
 * placeholder goes instead with a NOT_SENDABLE problem saying why. A media part counts what its
 * provider's published rule gives (media-tokens.ts), not its base64. BYTES whose bytes the caller
 * did not load (`bytes` null: over the context's cap on image and file bytes) get a placeholder and
 * CONTEXT_CAP_REACHED, or UNREADABLE when the caller says why (`problem`). Other BYTES take the text
 * path (a text type is inlined from `content`, anything else is NOT_TEXT); a URL or provider file
 * that is not an image or a PDF is NOT_SENDABLE (the server never fetches a URL). TEXT attachments
 * are resolved as they always were, whatever their MIME type.
 *
 * Resolution has to be known while fitting the token budget, so it is done through a resolver
 * that the budget step calls in its own order (newest user message first, then newest first): the
 * per-context cap favours the messages that are kept. Results are memoized per message; base64 is
 * made only for the messages kept (`resolveAttachments`).
 */
import { isImmutable } from '../immutable.js';
import { countCodePoints, countTokens } from '../tokens.js';
import type { AttachmentKind, MessageRole, ResolvedAttachment, StoredPart, TokenEncoding } from '../types.js';
import { documentTokens, imageTokens } from './media-tokens.js';
import { mediaKindOf, mediaNotSendableBecause } from './media-rules.js';
import type { AssembledPart, AttachmentMode, AttachmentProblem, AttachmentProblemKind, ContextFormat, MediaPart } from './types.js';
import { elidedPartsOf, newestUserIndex, workParts, type WorkMessage } from './work.js';
import { renderAttachmentReference } from './attachment-tool.js';
import { isTextMimeType, renderAttachmentBlock, renderAttachmentPlaceholder, truncateAtBoundary } from './attachment-text.js';

/** An image or PDF as resolved: its media part, with BYTES not yet in base64. */
export interface ResolvedMedia extends Omit<MediaPart, 'source'> {
  source: MediaPart['source'] | { type: 'bytes'; bytes: Uint8Array };
}

/** One attachment part resolved to text, or to a media part. */
export interface ResolvedBlock {
  /** Index of the attachment part in the message's parts. */
  partIndex: number;
  attachmentId: string;
  /** The text sent for it ('' when it is sent as `media`). */
  text: string;
  tokens: number;
  media?: ResolvedMedia;
}

export interface MessageAttachments {
  blocks: ResolvedBlock[];
  /** Tokens of all blocks (content only; the message's framing is counted elsewhere). */
  tokens: number;
  problems: AttachmentProblem[];
  /**
   * Media the format sends inside a tool result of the message (a TOOL message's media in
   * OPENAI_RESPONSES and ANTHROPIC_MESSAGES), not as a part of the message's own: the framing
   * count leaves them out of the message's other parts.
   */
  inResults: number;
}

export interface AttachmentCaps {
  attachmentMaxChars: number;
  contextAttachmentMaxChars: number;
  encoding: TokenEncoding;
  /** Default INLINE. */
  mode?: AttachmentMode;
  /** The id a reference block gives (REFERENCE mode); default the attachment id. */
  referenceId?: (attachmentId: string) => string;
  /** The payload format: which images and PDFs can be sent where, and what they count. Default GENERIC. */
  format?: ContextFormat;
}

export interface AttachmentResolver {
  /** Resolves a message's attachments (memoized); the context cap is consumed in call order. */
  resolve(w: WorkMessage): MessageAttachments;
  /** Characters of attachment content inlined so far. */
  readonly usedChars: number;
}

const NONE: MessageAttachments = { blocks: [], tokens: 0, problems: [], inResults: 0 };

export function createAttachmentResolver(attachments: ReadonlyMap<string, ResolvedAttachment>, caps: AttachmentCaps): AttachmentResolver {
  const memo = new Map<string, MessageAttachments>();
  let usedChars = 0;

  const format = caps.format ?? 'GENERIC';
  const resolvePart = (
    part: Extract<StoredPart, { type: 'attachment' }>,
    partIndex: number,
    messageId: string,
    role: MessageRole,
    problems: AttachmentProblem[],
  ): ResolvedBlock => {
    const stored = attachments.get(part.attachmentId);
    const meta = { name: stored?.name ?? part.name, mimeType: stored?.mimeType ?? part.mimeType };
    const problem = (kind: AttachmentProblemKind, detail: string) =>
      problems.push({ attachmentId: part.attachmentId, name: meta.name, mimeType: meta.mimeType, messageId, problem: kind, detail });
    const block = (text: string): ResolvedBlock => ({
      partIndex,
      attachmentId: part.attachmentId,
      text,
      tokens: countTokens(text, caps.encoding),
    });

    if (!stored) {
      const id = caps.referenceId ? caps.referenceId(part.attachmentId) : part.attachmentId;
      problem('MISSING', `Attachment "${meta.name}" (${id}) was not found; a placeholder was inlined instead.`);
      return block(renderAttachmentPlaceholder(meta, 'missing'));
    }
    const kind: AttachmentKind = stored.kind ?? part.kind ?? 'TEXT';
    if (kind !== 'TEXT') {
      const media = mediaKindOf(meta.mimeType);
      if (media !== null) return resolveMedia(part, partIndex, stored, kind, media, role, meta, problem, block);
      if (kind !== 'BYTES') {
        const why = `only images (PNG, JPEG, GIF, WebP) and PDFs are sent by ${kind === 'URL' ? 'URL' : 'provider file'}, and the server never fetches a URL`;
        problem('NOT_SENDABLE', `Attachment "${meta.name}" (${meta.mimeType}) was not sent: ${why}; a placeholder was sent instead.`);
        return block(renderAttachmentPlaceholder(meta, `not sent: ${why}`));
      }
    }
    if (caps.mode === 'REFERENCE') {
      const chars = stored.chars ?? (stored.content === null ? null : countCodePoints(stored.content));
      if (chars !== null) {
        const id = caps.referenceId ? caps.referenceId(part.attachmentId) : part.attachmentId;
        return block(renderAttachmentReference({ id, name: meta.name, mimeType: meta.mimeType, size: stored.size, chars }));
      }
    }
    if (!isTextMimeType(meta.mimeType)) {
      problem(
        'NOT_TEXT',
        `Attachment "${meta.name}" is ${meta.mimeType}, not text; only text attachments are inlined, a placeholder was inlined instead.`,
      );
      return block(renderAttachmentPlaceholder(meta, `not a text file (${meta.mimeType})`));
    }
    if (stored.content === null) {
      const why = stored.problem ?? 'its content could not be read';
      problem('UNREADABLE', `Attachment "${meta.name}" could not be read (${why}); a placeholder was inlined instead.`);
      return block(renderAttachmentPlaceholder(meta, `unreadable: ${why}`));
    }
    const content = stored.content;
    const remaining = Math.max(0, caps.contextAttachmentMaxChars - usedChars);
    if (remaining === 0 && content.length > 0) {
      problem(
        'CONTEXT_CAP_REACHED',
        `Attachment "${meta.name}" (${content.length} characters) was not inlined: the context's attachment cap of ${caps.contextAttachmentMaxChars} characters is used up by newer attachments.`,
      );
      return block(renderAttachmentPlaceholder(meta, `context attachment cap of ${caps.contextAttachmentMaxChars} characters reached`));
    }
    const limit = Math.min(caps.attachmentMaxChars, remaining);
    const shown = truncateAtBoundary(content, limit);
    usedChars += shown.length;
    if (shown.length < content.length) {
      const which =
        caps.attachmentMaxChars <= remaining
          ? `the per-attachment cap of ${caps.attachmentMaxChars} characters`
          : `the ${remaining} characters left of the context's attachment cap of ${caps.contextAttachmentMaxChars}`;
      problem('TRUNCATED', `Attachment "${meta.name}" was cut to its first ${shown.length} of ${content.length} characters by ${which}.`);
      return block(renderAttachmentBlock(meta, shown, `first ${shown.length} of ${content.length} characters shown`));
    }
    return block(renderAttachmentBlock(meta, content, null));
  };

  const resolveMedia = (
    part: Extract<StoredPart, { type: 'attachment' }>,
    partIndex: number,
    stored: ResolvedAttachment,
    kind: Exclude<AttachmentKind, 'TEXT'>,
    media: MediaPart['media'],
    role: MessageRole,
    meta: { name: string; mimeType: string },
    problem: (kind: AttachmentProblemKind, detail: string) => void,
    block: (text: string) => ResolvedBlock,
  ): ResolvedBlock => {
    const placeholder = (kindOfProblem: AttachmentProblemKind, why: string, omitted: string) => {
      problem(kindOfProblem, `Attachment "${meta.name}" (${meta.mimeType}) was not sent: ${why}; a placeholder was sent instead.`);
      return block(renderAttachmentPlaceholder(meta, omitted));
    };
    const url = stored.url ?? part.url ?? null;
    const providerFile = stored.providerFile ?? part.providerFile ?? null;
    if (kind === 'URL' && !url) return placeholder('UNREADABLE', 'its URL is not stored', 'unreadable: no URL');
    if (kind === 'PROVIDER_FILE' && !providerFile)
      return placeholder('UNREADABLE', 'its provider file is not stored', 'unreadable: no provider file');
    const why = mediaNotSendableBecause(format, role, { media, mimeType: meta.mimeType, kind, providerFile, bytes: stored.bytes });
    if (why !== null) return placeholder('NOT_SENDABLE', why, `not sent: ${why}`);
    let source: ResolvedMedia['source'];
    if (kind === 'BYTES') {
      if (!stored.bytes) {
        if (stored.problem) return placeholder('UNREADABLE', `it could not be read (${stored.problem})`, `unreadable: ${stored.problem}`);
        return placeholder(
          'CONTEXT_CAP_REACHED',
          `its ${stored.size} bytes were not loaded, the context's cap on image and file bytes being used up by newer attachments`,
          'context cap on image and file bytes reached',
        );
      }
      source = { bytes: stored.bytes, type: 'bytes' };
    } else if (kind === 'URL') {
      source = { type: 'url', url: url! };
    } else {
      source = { fileId: providerFile!.fileId, provider: providerFile!.provider, type: 'providerFile' };
    }
    const width = stored.width ?? part.width ?? undefined;
    const height = stored.height ?? part.height ?? undefined;
    const pages = stored.pages ?? part.pages ?? undefined;
    const tokens = media === 'image' ? imageTokens(format, width, height) : documentTokens(format, pages);
    const resolved: ResolvedMedia = {
      type: 'media',
      attachmentId: part.attachmentId,
      name: meta.name,
      mimeType: meta.mimeType,
      media,
      source,
      ...(width === undefined ? {} : { width }),
      ...(height === undefined ? {} : { height }),
      ...(pages === undefined ? {} : { pages }),
      tokens,
      ...(part.providerMetadata === undefined ? {} : { providerMetadata: part.providerMetadata }),
      ...(stored.sha256 === undefined ? {} : { identity: `sha256:${stored.sha256}` }),
    };
    return { partIndex, attachmentId: part.attachmentId, text: '', tokens, media: resolved };
  };

  return {
    resolve(w: WorkMessage): MessageAttachments {
      if (w.shape.attachments === 0) return NONE;
      const parts = w.source.parts;
      const cached = memo.get(w.source.id);
      if (cached) return cached;
      const blocks: ResolvedBlock[] = [];
      const problems: AttachmentProblem[] = [];
      let tokens = 0;
      let media = 0;
      parts.forEach((part, partIndex) => {
        if (part.type !== 'attachment') return;
        const resolved = resolvePart(part, partIndex, w.source.id, w.shape.role, problems);
        tokens += resolved.tokens;
        if (resolved.media) media++;
        blocks.push(resolved);
      });
      const inResults = w.shape.role === 'TOOL' && w.shape.results.length > 0 && sendsMediaInResults(format) ? media : 0;
      const result = { blocks, tokens, problems, inResults };
      memo.set(w.source.id, result);
      return result;
    },
    get usedChars() {
      return usedChars;
    },
  };
}

/**
 * Whether the format sends a TOOL message's media inside a tool result (the one before it in the
 * message, else the first; see formats.ts) rather than as content of the message's own.
 */
export const sendsMediaInResults = (format: ContextFormat) => format === 'OPENAI_RESPONSES' || format === 'ANTHROPIC_MESSAGES';

/** The media part sent for a resolved one: BYTES become base64 here, for the messages kept only. */
function mediaPartOf(media: ResolvedMedia): MediaPart {
  if (media.source.type !== 'bytes') return media as MediaPart;
  const bytes = media.source.bytes;
  const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  return { ...media, source: { data, type: 'base64' } };
}

/** A kept message with its parts as the model sees them. */
export interface ResolvedMessage {
  work: WorkMessage;
  parts: AssembledPart[];
}

/**
 * The attachment step over a (fitted) list: every attachment part becomes a text part (the block
 * or placeholder) or a media part, elided results become stub parts. Resolves in the budget step's order (newest
 * user message, then newest first) so the per-context cap favours the same messages; returns the
 * problems in message order.
 */
export function resolveAttachments(
  list: readonly WorkMessage[],
  resolver: AttachmentResolver,
): { messages: ResolvedMessage[]; problems: AttachmentProblem[] } {
  const forced = newestUserIndex(list);
  if (forced >= 0) resolver.resolve(list[forced]);
  for (let i = list.length - 1; i >= 0; i--) if (list[i].shape.attachments > 0) resolver.resolve(list[i]);
  const problems: AttachmentProblem[] = [];
  const messages = list.map((work) => {
    if (work.shape.attachments === 0 && !work.elided) {
      // No attachment part: the stored parts are already what the model sees.
      return { work, parts: work.source.parts as AssembledPart[] };
    }
    if (work.shape.attachments === 0 && isImmutable(work.source.parts)) return { work, parts: elidedPartsOf(work) };
    const resolved = resolver.resolve(work);
    problems.push(...resolved.problems);
    const byPart = new Map(resolved.blocks.map((b) => [b.partIndex, b]));
    const parts: AssembledPart[] = workParts(work).map((part, partIndex): AssembledPart => {
      switch (part.type) {
        case 'attachment': {
          const block = byPart.get(partIndex)!;
          if (block.media) return mediaPartOf(block.media);
          return { type: 'text', text: block.text, attachmentId: block.attachmentId };
        }
        case 'toolResult':
          return work.elided ? { ...part, elided: true } : part;
        default:
          return part;
      }
    });
    return { work, parts };
  });
  return { messages, problems };
}
