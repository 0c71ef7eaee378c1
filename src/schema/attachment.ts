import {
  ATTACHMENT_READ_DEFAULT_CHARS,
  ATTACHMENT_READ_MAX_CHARS,
  ATTACHMENT_READ_REQUEST_CHARS,
  attachmentPage,
  validateAttachmentRead,
  type AttachmentPage,
} from '../domain/assembly/attachment-tool.js';
import { badInput, notFound } from '../graphql/errors.js';
import { builder } from './builder.js';
import { parseGlobalId, toGlobalId } from './ids.js';
import type { AttachmentShape } from '../services/loaders.js';
import type { ProviderFileRef } from '../domain/types.js';

const AttachmentContent = builder.objectRef<AttachmentPage>('AttachmentContent').implement({
  description:
    "One page of an attachment's text. Offsets and lengths count characters: Unicode code points (an emoji is one), the unit of the `chars` attribute of a reference block.",
  fields: (t) => ({
    offset: t.exposeInt('offset', { description: 'Where the page starts, in characters from the start.' }),
    length: t.exposeInt('length', { description: 'Characters in `text` (fewer than asked at the end of the text).' }),
    text: t.exposeString('text', { description: 'The text of the page.' }),
    totalLength: t.exposeInt('totalLength', { description: 'Characters of the whole text.' }),
    hasMore: t.exposeBoolean('hasMore', { description: 'True when text follows this page.' }),
    nextOffset: t.exposeInt('nextOffset', { nullable: true, description: 'The offset of the next page; null after the last one.' }),
  }),
});

const AttachmentKindEnum = builder.enumType('AttachmentKind', {
  description: 'How an attachment is held.',
  values: {
    TEXT: { description: 'Text, stored (given as `content`, or as bytes of a text type in UTF-8).' },
    BYTES: { description: 'Bytes, stored once per workspace by SHA-256 and served at `url`.' },
    URL: { description: 'An https URL, stored as a reference and never fetched by this server (`sourceUrl`).' },
    PROVIDER_FILE: { description: "A file in a provider's Files API (`providerFile`)." },
  } as const,
});

const ProviderFile = builder.objectRef<ProviderFileRef>('ProviderFile').implement({
  description: "A file in a provider's Files API.",
  fields: (t) => ({
    provider: t.exposeString('provider', { description: 'anthropic, openai or google.' }),
    fileId: t.exposeString('fileId', { description: 'The id the provider gave the file.' }),
  }),
});

export const Attachment = builder.node(
  builder.objectRef<AttachmentShape>('Attachment'),
  {
    description:
      'A file stored by the server. Context assembly inlines its text (attachmentMode INLINE) or a reference block the agent reads with the read_attachment tool, which `content` serves (REFERENCE).',
    id: { resolve: (a) => a.attachmentId },
    loadMany: (ids, ctx) => ids.map((id) => ctx.loaders.attachmentById.load(id)),
  },
  (t) => ({
    name: t.exposeString('name', { description: 'File name as given.' }),
    mimeType: t.exposeString('mimeType', { description: 'MIME type as given, e.g. text/markdown.' }),
    size: t.exposeInt('size', { description: 'Size of the content in bytes (UTF-8 for text; 0 for URL and PROVIDER_FILE).' }),
    kind: t.field({ type: AttachmentKindEnum, description: 'How it is held.', resolve: (a) => a.kind }),
    sha256: t.exposeString('sha256', {
      description:
        'SHA-256 of the content, in hex (for URL: of the URL; for PROVIDER_FILE: of "provider:fileId"). Identical bytes in one workspace are stored once.',
    }),
    width: t.int({ nullable: true, description: 'Pixels across, for an image held as bytes.', resolve: (a) => a.width }),
    height: t.int({ nullable: true, description: 'Pixels down, for an image held as bytes.', resolve: (a) => a.height }),
    pages: t.int({
      nullable: true,
      description:
        'Pages of a PDF held as bytes, as its page tree states them (an estimate: null when the tree is in a compressed stream).',
      resolve: (a) => a.pages,
    }),
    url: t.string({
      description:
        'Where this server serves the content: `/attachments/<id>`, under the same key and workspace rules as /graphql (Authorization: Bearer). TEXT and BYTES: the bytes with their type, an ETag and range requests; URL: a redirect to `sourceUrl`; PROVIDER_FILE: 404 (the bytes are at the provider).',
      resolve: (a) => `/attachments/${encodeURIComponent(toGlobalId('Attachment', a.attachmentId))}`,
    }),
    sourceUrl: t.string({ nullable: true, description: 'URL: the https address given.', resolve: (a) => a.url }),
    providerFile: t.field({
      type: ProviderFile,
      nullable: true,
      description: 'PROVIDER_FILE: the provider and file id.',
      resolve: (a) => a.providerFile,
    }),
    content: t.field({
      type: AttachmentContent,
      nullable: true,
      description: `A page of the text: the characters (Unicode code points) [offset, offset + length). What the read_attachment tool returns. At most ${ATTACHMENT_READ_MAX_CHARS} characters per page and ${ATTACHMENT_READ_REQUEST_CHARS} per request (the sum of the lengths asked); an offset past the end, or a length out of range, is BAD_USER_INPUT. Null when the attachment has no text content.`,
      args: {
        offset: t.arg.int({ required: false, defaultValue: 0, description: 'Characters to skip from the start (0 to totalLength).' }),
        length: t.arg.int({
          required: false,
          defaultValue: ATTACHMENT_READ_DEFAULT_CHARS,
          description: `Characters to return at most, 1 to ${ATTACHMENT_READ_MAX_CHARS}.`,
        }),
      },
      resolve: async (a, args, ctx) => {
        const read = validateAttachmentRead(args.offset, args.length);
        const loaders = ctx.loaders;
        if (loaders.attachmentCharsAsked + read.length > ATTACHMENT_READ_REQUEST_CHARS) {
          throw badInput(
            `At most ${ATTACHMENT_READ_REQUEST_CHARS} characters of attachment content can be asked for in one request; read the rest in another request.`,
          );
        }
        loaders.attachmentCharsAsked += read.length;
        const id = toGlobalId('Attachment', a.attachmentId);
        const row = await loaders.attachmentPages.load({ id: a.attachmentId, ...read });
        if (!row) throw notFound('Attachment', id);
        if (row.text === null || row.chars === null) return null;
        return attachmentPage(read, row.text, row.chars, id);
      },
    }),
  }),
);

builder.queryField('attachment', (t) =>
  t.field({
    type: Attachment,
    description:
      'An attachment of your workspace by ID (the id of a reference block, or of an AttachmentPart). NOT_FOUND when there is none in your workspace; `node(id:)` answers null instead.',
    args: { id: t.arg.id({ required: true, description: 'The attachment ID.' }) },
    resolve: async (_, { id }, ctx) => {
      const attachment = await ctx.loaders.attachmentById.load(parseGlobalId(String(id), 'Attachment', 'id'));
      if (!attachment) throw notFound('Attachment', String(id));
      return attachment;
    },
  }),
);
