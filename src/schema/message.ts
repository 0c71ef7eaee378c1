import { parseGlobalId, toGlobalId } from './ids.js';
import { notFound } from '../graphql/errors.js';
import { builder } from './builder.js';
import { Attachment } from './attachment.js';
import { Message, Session } from './refs.js';
import { DEFAULT_STRING_CHARS, LIMITS, textCaps } from '../domain/limits.js';
import { countStoredTokens, toolArgumentsText } from '../domain/tokens.js';
import { PROVIDERS, type StoredPart } from '../domain/types.js';

export const MessageRoleEnum = builder.enumType('MessageRole', {
  description: 'Who a message is from.',
  values: {
    SYSTEM: { description: 'Instructions for the model.' },
    USER: { description: 'The person (or program) talking to the model.' },
    ASSISTANT: { description: 'The model; may hold tool calls.' },
    TOOL: { description: 'Results of tool calls made by an earlier ASSISTANT message.' },
  } as const,
});

type TextPartShape = Extract<StoredPart, { type: 'text' }>;
type ToolCallPartShape = Extract<StoredPart, { type: 'toolCall' }>;
type ToolResultPartShape = Extract<StoredPart, { type: 'toolResult' }>;
type AttachmentPartShape = Extract<StoredPart, { type: 'attachment' }>;
type ReasoningPartShape = Extract<StoredPart, { type: 'reasoning' }>;
type ProviderPartShape = Extract<StoredPart, { type: 'providerPart' }>;

const PROVIDER_METADATA_OUT =
  "Provider data of the part, as given (null: none): an object keyed by provider (`anthropic`, `openai`, `google`), read only by that provider's payload formats (docs/provider-replay.md).";

const TextPart = builder.objectRef<TextPartShape>('TextPart').implement({
  description: 'Plain text.',
  fields: (t) => ({
    text: t.exposeString('text', { description: 'The text.' }),
    providerMetadata: t.field({
      type: 'JSON',
      nullable: true,
      description: PROVIDER_METADATA_OUT,
      resolve: (p) => p.providerMetadata ?? null,
    }),
  }),
});

const ReasoningPart = builder.objectRef<ReasoningPartShape>('ReasoningPart').implement({
  description:
    "A model's reasoning: Anthropic thinking (its signature in `providerMetadata.anthropic.signature`), an OpenAI reasoning item (`openai.itemId`, `openai.encryptedContent`), a Gemini thought (`google.thoughtSignature`). Sent back only to the provider that made it, with what it needs to accept it; every other format leaves it out and says so in the message's decision. Never part of `Message.text`.",
  fields: (t) => ({
    text: t.exposeString('text', {
      description: 'What can be read of the reasoning: thinking text or a summary ("" when none, or when redacted).',
    }),
    redacted: t.exposeBoolean('redacted', {
      description:
        "True when its content is encrypted: Anthropic's redacted_thinking, its data in `providerMetadata.anthropic.redactedData`.",
    }),
    providerMetadata: t.field({
      type: 'JSON',
      nullable: true,
      description: PROVIDER_METADATA_OUT,
      resolve: (p) => p.providerMetadata ?? null,
    }),
  }),
});

const ProviderPart = builder.objectRef<ProviderPartShape>('ProviderPart').implement({
  description:
    "A provider's block this server does not model (Anthropic server_tool_use and web_search_tool_result, OpenAI web_search_call, Gemini executableCode, …), stored whole and sent verbatim only to that provider's format(s); the other formats leave it out and say so in the message's decision.",
  fields: (t) => ({
    provider: t.exposeString('provider', { description: 'anthropic, openai or google.' }),
    data: t.field({ type: 'JSON', description: 'The block, item or part as the provider gave it.', resolve: (p) => p.data }),
    format: t.string({
      nullable: true,
      description:
        'The payload format `data` is a piece of (OPENAI_CHAT or OPENAI_RESPONSES for OpenAI, whose shapes differ); null: every format of the provider.',
      resolve: (p) => p.format ?? null,
    }),
    providerMetadata: t.field({
      type: 'JSON',
      nullable: true,
      description: PROVIDER_METADATA_OUT,
      resolve: (p) => p.providerMetadata ?? null,
    }),
  }),
});

const ToolCallPart = builder.objectRef<ToolCallPartShape>('ToolCallPart').implement({
  description: 'A call of a tool by the model.',
  fields: (t) => ({
    callId: t.exposeString('callId', { description: 'Identifies the call; its result names the same id.' }),
    name: t.exposeString('name', { description: 'The tool called.' }),
    arguments: t.field({ type: 'JSON', description: 'The arguments, as a JSON value.', resolve: (p) => p.arguments ?? {} }),
    argumentsJson: t.string({
      description:
        'The arguments as JSON text, byte for byte as given (`argumentsJson`, or `arguments` given as JSON text), or as the server serialized the JSON value given: what OPENAI_CHAT payloads send as `function.arguments` and what is counted.',
      resolve: (p) => toolArgumentsText(p),
    }),
    providerMetadata: t.field({
      type: 'JSON',
      nullable: true,
      description: PROVIDER_METADATA_OUT,
      resolve: (p) => p.providerMetadata ?? null,
    }),
  }),
});

const ToolResultPart = builder.objectRef<ToolResultPartShape>('ToolResultPart').implement({
  description: 'The result of a tool call made earlier in the session.',
  fields: (t) => ({
    callId: t.exposeString('callId', { description: 'The id of the call this answers.' }),
    content: t.exposeString('content', { description: 'What the tool returned.' }),
    isError: t.exposeBoolean('isError', { description: 'True when the tool failed and `content` describes the failure.' }),
    providerMetadata: t.field({
      type: 'JSON',
      nullable: true,
      description: PROVIDER_METADATA_OUT,
      resolve: (p) => p.providerMetadata ?? null,
    }),
  }),
});

const AttachmentPart = builder.objectRef<AttachmentPartShape>('AttachmentPart').implement({
  description: 'A file attached to the message.',
  fields: (t) => ({
    attachment: t.field({
      type: Attachment,
      description: 'The stored file.',
      resolve: async (p, _, ctx) => {
        const found = await ctx.loaders.attachmentById.load(p.attachmentId);
        if (!found) throw notFound('Attachment', toGlobalId('Attachment', p.attachmentId));
        return found;
      },
    }),
    providerMetadata: t.field({
      type: 'JSON',
      nullable: true,
      description: PROVIDER_METADATA_OUT,
      resolve: (p) => p.providerMetadata ?? null,
    }),
  }),
});

export const MessagePart = builder.unionType('MessagePart', {
  description: "One piece of a message: text, a tool call, a tool result, an attachment, a model's reasoning or a provider's own block.",
  types: [TextPart, ToolCallPart, ToolResultPart, AttachmentPart, ReasoningPart, ProviderPart],
  resolveType: (part) => {
    switch ((part as StoredPart).type) {
      case 'text':
        return TextPart;
      case 'toolCall':
        return ToolCallPart;
      case 'toolResult':
        return ToolResultPart;
      case 'attachment':
        return AttachmentPart;
      case 'reasoning':
        return ReasoningPart;
      case 'providerPart':
        return ProviderPart;
    }
  },
});

builder.prismaNode('Message', {
  description:
    'One message of a session. A fork shares the messages before its cut with its parent: the same Message, with the same index, appears in both.',
  id: { field: 'id' },
  nullable: true,
  findUnique: (id, ctx) => ({ id, session: { workspaceId: ctx.workspaceId } }),
  fields: (t) => ({
    index: t.exposeInt('position', { description: "0-based position in the session's message list." }),
    role: t.field({ type: MessageRoleEnum, description: 'Who the message is from.', resolve: (m) => m.role }),
    parts: t.field({
      type: [MessagePart],
      description: 'The content, in order.',
      resolve: (m) => m.parts as unknown as StoredPart[],
    }),
    text: t.exposeString('text', { description: 'The text parts joined by newlines ("" when there are none).' }),
    generating: t.exposeBoolean('generating', {
      description: 'True while the message is still being written (streamed); it can change only until then.',
    }),
    tokenCount: t.int({
      description:
        'Content tokens in the o200k_base encoding (framing excluded), counted once when the message is finished. Attachments, reasoning and provider parts are counted when context is assembled, by the format that sends them.',
      resolve: (m) => m.tokensO200k ?? countStoredTokens(m.parts as unknown as StoredPart[]).O200K_BASE,
    }),
    agentId: t.exposeString('agentId', { nullable: true, description: 'The agent that wrote it, when one did.' }),
    turn: t.relation('turn', { nullable: true, description: 'The turn it was written in, when it was.' }),
    // Through the request's session loader, not the relation: most messages come from plain SQL
    // reads (pages, alternatives), where the relation would load each one's session on its own.
    session: t.field({
      type: Session,
      description: 'The session that wrote this message (a fork sees it too when its cut lies after it).',
      resolve: async (m, _, ctx) => {
        const session = await ctx.loaders.sessionById.load(m.sessionId);
        // Deleted since the message was read: as a read of it now would say.
        if (!session) throw notFound('Session', toGlobalId('Session', m.sessionId));
        return session;
      },
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was appended.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'When it last changed.' }),
  }),
});

/**
 * The string cap as quoted in input descriptions: it depends on the backend (`DEFAULT_STRING_CHARS`),
 * and the schema text is the same on both, so both numbers are stated.
 */
const maxChars = `${DEFAULT_STRING_CHARS.postgres.toLocaleString('en-US')} on PostgreSQL, ${DEFAULT_STRING_CHARS.pglite.toLocaleString('en-US')} on the embedded backend`;
const maxAttachment = `${DEFAULT_STRING_CHARS.postgres / 1024 / 1024} MiB on PostgreSQL, ${DEFAULT_STRING_CHARS.pglite / 1024} KiB on the embedded backend`;
const maxFile = `${textCaps(DEFAULT_STRING_CHARS.postgres).fileBytes / 1024 / 1024} MiB on PostgreSQL, ${textCaps(DEFAULT_STRING_CHARS.pglite).fileBytes / 1024 / 1024} MiB on the embedded backend`;

const PROVIDER_METADATA_IN = `Provider data of the part (optional): a JSON object keyed by provider, \`anthropic\` (\`signature\`, \`redactedData\`), \`openai\` (\`itemId\`, \`encryptedContent\`), \`google\` (\`thoughtSignature\`), other keys stored as sent; at most ${maxChars} characters as JSON text. Stored as sent and read only by that provider's payload formats (docs/provider-replay.md).`;

const TextPartInput = builder.inputType('TextPartInput', {
  description: 'A text part.',
  fields: (t) => ({
    text: t.string({ required: true, description: `The text (at most ${maxChars} characters).` }),
    providerMetadata: t.field({ type: 'JSON', required: false, description: PROVIDER_METADATA_IN }),
  }),
});

const ReasoningPartInput = builder.inputType('ReasoningPartInput', {
  description:
    "A model's reasoning (ASSISTANT messages only), with what its provider needs to take it back in `providerMetadata`: Anthropic thinking `{ anthropic: { signature } }` (redacted_thinking: `redacted: true`, `{ anthropic: { redactedData } }`), an OpenAI reasoning item `{ openai: { itemId, encryptedContent } }`, a Gemini thought `{ google: { thoughtSignature } }`. appendProviderMessages fills these from a provider's own payload.",
  fields: (t) => ({
    text: t.string({ required: false, description: `The thinking text or summary (default ""; at most ${maxChars} characters).` }),
    redacted: t.boolean({
      required: false,
      description: 'True when the content is encrypted (Anthropic redacted_thinking). Default false.',
    }),
    providerMetadata: t.field({ type: 'JSON', required: false, description: PROVIDER_METADATA_IN }),
  }),
});

const ProviderPartInput = builder.inputType('ProviderPartInput', {
  description:
    "A provider's block this server does not model (Anthropic `server_tool_use`, `web_search_tool_result`; OpenAI `web_search_call`; Gemini `executableCode`, `codeExecutionResult`, …): stored whole, sent verbatim only to that provider's format(s).",
  fields: (t) => ({
    provider: t.string({ required: true, description: 'anthropic, openai or google.' }),
    data: t.field({
      type: 'JSON',
      required: true,
      description: `The block as the provider gave it: a JSON object of at most ${maxChars} characters as JSON text.`,
    }),
    format: t.string({
      required: false,
      description:
        'The payload format the block is a piece of, when the provider has several (OPENAI_CHAT or OPENAI_RESPONSES); default: every format of the provider.',
    }),
    providerMetadata: t.field({ type: 'JSON', required: false, description: PROVIDER_METADATA_IN }),
  }),
});

const ToolCallPartInput = builder.inputType('ToolCallPartInput', {
  description: 'A tool call (ASSISTANT messages only).',
  fields: (t) => ({
    callId: t.string({ required: true, description: 'Unique id of the call; its result names it.' }),
    name: t.string({ required: true, description: 'The tool called.' }),
    arguments: t.field({
      type: 'JSON',
      required: false,
      description:
        "The arguments as a JSON value (default {}), serialized once by the server. A string holding JSON text of an object or array (a model's own arguments string, as OpenAI returns it) is taken as that text, kept byte for byte.",
    }),
    argumentsJson: t.string({
      required: false,
      description: `The arguments as JSON text, stored and sent to providers byte for byte (key order, escapes, number forms) and counted as sent; instead of \`arguments\`. Valid JSON, at most ${LIMITS.jsonLength.toLocaleString('en-US')} characters, without NUL or unpaired surrogates (escaped ones included).`,
    }),
    providerMetadata: t.field({ type: 'JSON', required: false, description: PROVIDER_METADATA_IN }),
  }),
});

const ToolResultPartInput = builder.inputType('ToolResultPartInput', {
  description: 'A tool result (TOOL messages only). Its callId must name a tool call made earlier in the session.',
  fields: (t) => ({
    callId: t.string({ required: true, description: 'The id of the call this answers.' }),
    content: t.string({ required: true, description: `What the tool returned (at most ${maxChars} characters).` }),
    isError: t.boolean({ required: false, description: 'True when the tool failed (default false).' }),
    providerMetadata: t.field({ type: 'JSON', required: false, description: PROVIDER_METADATA_IN }),
  }),
});

const ProviderFileInput = builder.inputType('ProviderFileInput', {
  description: "A file already uploaded to a provider's Files API.",
  fields: (t) => ({
    provider: t.string({ required: true, description: `The provider: ${PROVIDERS.join(', ')}.` }),
    fileId: t.string({
      required: true,
      description: 'The id the provider gave the file (OpenAI `file-…`, Anthropic `file_…`, a Gemini file URI).',
    }),
  }),
});

const AttachmentPartInput = builder.inputType('AttachmentPartInput', {
  description: `A file to store with the message: a name, a MIME type and exactly one of \`content\`, \`data\`, \`url\`, \`providerFile\` and \`upload\`. Bytes (\`data\`, \`upload\`) are checked before anything is stored: their signature must match the declared type (PNG, JPEG, GIF, WebP, PDF), an image's dimensions must be readable, and they may be at most ${maxFile}; identical bytes are kept once per workspace. A text file given as bytes (a text MIME type, valid UTF-8, within the text cap) is stored as text.`,
  fields: (t) => ({
    name: t.string({ required: true, description: 'File name.' }),
    mimeType: t.string({ required: true, description: 'MIME type, e.g. text/plain, image/png, application/pdf.' }),
    content: t.string({ required: false, description: `The file content as text, up to ${maxAttachment} (UTF-8).` }),
    data: t.string({
      required: false,
      description:
        'The bytes in base64 (standard alphabet, padded, no line breaks). Bounded by the request body cap; send larger files with `upload`.',
    }),
    url: t.string({
      required: false,
      description: 'An https URL the provider fetches: stored as a reference, never fetched by this server.',
    }),
    providerFile: t.field({
      type: ProviderFileInput,
      required: false,
      description: "A file in a provider's Files API, sent only to that provider's formats.",
    }),
    upload: t.field({
      type: 'File',
      required: false,
      description: `A file of this multipart request (the GraphQL multipart request spec), up to ${maxFile}; refused as it streams past the cap.`,
    }),
    providerMetadata: t.field({ type: 'JSON', required: false, description: PROVIDER_METADATA_IN }),
  }),
});

export const MessagePartInput = builder.inputType('MessagePartInput', {
  description: 'One part of a message: set exactly one field.',
  isOneOf: true,
  fields: (t) => ({
    text: t.field({ type: TextPartInput, description: 'Text.' }),
    toolCall: t.field({ type: ToolCallPartInput, description: 'A tool call.' }),
    toolResult: t.field({ type: ToolResultPartInput, description: 'A tool result.' }),
    attachment: t.field({ type: AttachmentPartInput, description: 'An attachment.' }),
    reasoning: t.field({ type: ReasoningPartInput, description: "A model's reasoning (ASSISTANT messages only)." }),
    providerPart: t.field({ type: ProviderPartInput, description: "A provider's block this server does not model." }),
  }),
});

export const MessageInput = builder.inputType('MessageInput', {
  description: 'A message to append. Give exactly one of `text` (a single text part) and `parts`.',
  fields: (t) => ({
    role: t.field({ type: MessageRoleEnum, required: true, description: 'Who the message is from.' }),
    text: t.string({ required: false, description: `The message as one text part (at most ${maxChars} characters).` }),
    parts: t.field({ type: [MessagePartInput], required: false, description: 'The message as parts.' }),
    generating: t.boolean({
      required: false,
      description: 'True to append a message that is still being written; finish it with updateMessage. Default false.',
    }),
    agentId: t.string({ required: false, description: 'The agent writing it (overrides the mutation-level agentId).' }),
  }),
});

const UpdateMessageInput = builder.inputType('UpdateMessageInput', {
  description: 'Changes to a message that is still generating. Give appendText or parts (not both), and/or generating.',
  fields: (t) => ({
    messageId: t.id({ required: true, description: 'The message.' }),
    appendText: t.string({ required: false, description: 'Text to add to the end of the last text part (streaming).' }),
    parts: t.field({ type: [MessagePartInput], required: false, description: 'Replaces all parts.' }),
    generating: t.boolean({ required: false, description: 'false finishes the message: it never changes again.' }),
  }),
});

builder.mutationField('updateMessage', (t) =>
  t.field({
    type: Message,
    description: 'Changes a message that is still generating. A finished message is refused with MESSAGE_IMMUTABLE.',
    args: { input: t.arg({ type: UpdateMessageInput, required: true }) },
    resolve: (_, { input }, ctx) =>
      ctx.sessions.updateMessage(
        ctx.workspaceId,
        parseGlobalId(String(input.messageId), 'Message', 'messageId'),
        input,
        String(input.messageId),
      ),
  }),
);
