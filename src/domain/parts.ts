import { isTextMimeType } from './assembly/attachment-text.js';
import { baseType, type CheckedBytes, checkBytes, decodeBase64, textOfBytes } from './attachment-bytes.js';
import { badInput } from './errors.js';
import { checkJson } from './input.js';
import { toolArgumentsText } from './tokens.js';
import { LIMITS, type TextCaps } from './limits.js';
import {
  type MessageRole,
  PROVIDERS,
  type ProviderMetadata,
  type ProviderFileRef,
  type ProviderName,
  type ProviderStoredPart,
  type StoredPart,
} from './types.js';

/** What every part input may carry beside its own fields. */
interface PartInputExtras {
  providerMetadata?: unknown;
}

/** One `MessagePartInput` (a @oneOf input: exactly one key set). */
export interface PartInput {
  text?: ({ text: string } & PartInputExtras) | null;
  toolCall?: ({ callId: string; name: string; arguments?: unknown; argumentsJson?: string | null } & PartInputExtras) | null;
  toolResult?: ({ callId: string; content: string; isError?: boolean | null } & PartInputExtras) | null;
  attachment?: AttachmentInput | null;
  reasoning?: ({ text?: string | null; redacted?: boolean | null } & PartInputExtras) | null;
  providerPart?: ({ provider: string; data?: unknown; format?: string | null } & PartInputExtras) | null;
}

const PART_KINDS = 'text, toolCall, toolResult, attachment, reasoning, providerPart';

/** `AttachmentPartInput`: a name, a type and exactly one source of content. */
export interface AttachmentInput extends PartInputExtras {
  name: string;
  mimeType: string;
  content?: string | null;
  /** Base64. */
  data?: string | null;
  url?: string | null;
  providerFile?: { provider: string; fileId: string } | null;
  /** A multipart upload (Yoga's `File`): read into `bytes` before the input is checked (`readUploads`). */
  upload?: unknown;
  /** The upload's bytes, set by `readUploads`; never a GraphQL field. */
  bytes?: Uint8Array | null;
  /**
   * Where `content` or `data` came from in a provider payload (`appendProviderMessages`: the JSON
   * path of the block's base64 or text), named instead of the part's path in errors about them;
   * never a GraphQL field.
   */
  sourcePath?: string;
}

const ATTACHMENT_SOURCES = ['content', 'data', 'url', 'providerFile', 'upload'] as const;

export interface MessageInputData {
  role: MessageRole;
  text?: string | null;
  parts?: PartInput[] | null;
  generating?: boolean | null;
  agentId?: string | null;
}

/** An attachment whose content the server has yet to store, checked. */
export type AttachmentUpload = { type: 'attachmentUpload'; name: string; mimeType: string } & (
  | { kind: 'TEXT'; content: string }
  | ({ kind: 'BYTES'; bytes: Uint8Array } & CheckedBytes)
  | { kind: 'URL'; url: string }
  | { kind: 'PROVIDER_FILE'; providerFile: ProviderFileRef }
);

export type DraftPart = Exclude<StoredPart, { type: 'attachment' }> | (AttachmentUpload & { providerMetadata?: ProviderMetadata });

export interface DraftMessage {
  role: MessageRole;
  parts: DraftPart[];
  generating: boolean;
  agentId: string | null;
}

/** Validates one message input and turns it into parts; `where` names it in errors. */
export function draftMessage(input: MessageInputData, where: string, caps: TextCaps): DraftMessage {
  const hasText = input.text !== undefined && input.text !== null;
  const hasParts = input.parts !== undefined && input.parts !== null;
  if (hasText === hasParts) throw badInput(`${where}: give exactly one of \`text\` and \`parts\`.`);
  const parts: DraftPart[] = hasText
    ? [{ type: 'text', text: input.text! }]
    : input.parts!.map((p, i) => draftPart(p, `${where}.parts[${i}]`, caps));
  if (parts.length === 0) throw badInput(`${where}: a message needs at least one part.`);
  if (parts.length > LIMITS.partsPerMessage) throw badInput(`${where}: at most ${LIMITS.partsPerMessage} parts.`);
  checkRoleParts(input.role, parts, where);
  const agentId = input.agentId ?? null;
  if (agentId !== null) checkId(agentId, `${where}.agentId`);
  return { role: input.role, parts, generating: input.generating ?? false, agentId };
}

function draftPart(input: PartInput, where: string, caps: TextCaps): DraftPart {
  const keys = (Object.keys(input) as (keyof PartInput)[]).filter((k) => input[k] !== undefined && input[k] !== null);
  if (keys.length !== 1) throw badInput(`${where}: set exactly one of ${PART_KINDS}.`);
  const part = draftPartBody(input, where, caps);
  const given = input[keys[0]]!.providerMetadata;
  if (given === undefined || given === null) return part;
  return { ...part, providerMetadata: providerMetadataOf(given, `${where}.${keys[0]}.providerMetadata`, caps) };
}

function draftPartBody(input: PartInput, where: string, caps: TextCaps): DraftPart {
  if (input.text) return { type: 'text', text: input.text.text };
  if (input.toolCall) {
    const { callId, name } = input.toolCall;
    // Stored as sent, whatever the model produced (`functions.get_weather:0`, `weather.lookup`):
    // each payload format maps what its provider refuses (assembly/provider-rules.ts).
    checkId(callId, `${where}.toolCall.callId`);
    checkId(name, `${where}.toolCall.name`);
    const args = toolCallArguments(input.toolCall, `${where}.toolCall`);
    return { type: 'toolCall', callId, name, arguments: args.value, argumentsJson: args.text };
  }
  if (input.toolResult) {
    checkId(input.toolResult.callId, `${where}.toolResult.callId`);
    return {
      type: 'toolResult',
      callId: input.toolResult.callId,
      content: input.toolResult.content,
      isError: input.toolResult.isError ?? false,
    };
  }
  if (input.reasoning) return { type: 'reasoning', text: input.reasoning.text ?? '', redacted: input.reasoning.redacted ?? false };
  if (input.providerPart) return providerPartOf(input.providerPart, `${where}.providerPart`, caps);
  return attachmentOf(input.attachment!, `${where}.attachment`, caps);
}

/** Checks an attachment input (see `AttachmentInput`); nothing of a refused one is stored. */
function attachmentOf(a: AttachmentInput, where: string, caps: TextCaps): AttachmentUpload {
  if (!a.name.trim()) throw badInput(`${where}.name must not be empty.`);
  if (a.name.length > LIMITS.titleChars) throw badInput(`${where}.name is longer than ${LIMITS.titleChars} characters.`);
  if (!/^[\w.+-]+\/[\w.+-]+$/.test(a.mimeType)) throw badInput(`${where}.mimeType "${a.mimeType}" is not a MIME type.`);
  const given = ATTACHMENT_SOURCES.filter((k) => a[k] !== undefined && a[k] !== null);
  if (given.length !== 1) {
    throw badInput(
      `${where}: give exactly one of ${ATTACHMENT_SOURCES.join(', ')} (got ${given.length === 0 ? 'none' : given.join(', ')}).`,
    );
  }
  const head = { type: 'attachmentUpload' as const, name: a.name, mimeType: a.mimeType };
  const pathOf = (field: string) => a.sourcePath ?? `${where}.${field}`;
  switch (given[0]) {
    case 'content':
      if (Buffer.byteLength(a.content!, 'utf8') > caps.attachmentBytes) {
        throw badInput(`${pathOf('content')} is larger than ${caps.attachmentBytes} bytes (UTF-8), the cap on this server.`);
      }
      return { ...head, kind: 'TEXT', content: a.content! };
    case 'url':
      return { ...head, kind: 'URL', url: httpsUrlOf(a.url!, `${where}.url`) };
    case 'providerFile':
      return { ...head, kind: 'PROVIDER_FILE', providerFile: providerFileOf(a.providerFile!, `${where}.providerFile`) };
    default: {
      const field = given[0] === 'data' ? 'data' : 'upload';
      if (field === 'upload' && !(a.bytes instanceof Uint8Array)) throw badInput(`${where}.upload must be a file of a multipart request.`);
      const bytes = field === 'data' ? decodeBase64(a.data!, pathOf('data')) : a.bytes!;
      if (bytes.length > caps.fileBytes) {
        throw badInput(
          `${pathOf(field)} is ${bytes.length} bytes, more than ${caps.fileBytes}, the cap on this server; nothing was stored.`,
        );
      }
      if (bytes.length === 0) throw badInput(`${pathOf(field)} is empty.`);
      // A text file keeps the text path (inlined, paged by read_attachment) when it is UTF-8 within the text cap.
      if (isTextMimeType(a.mimeType) && bytes.length <= caps.attachmentBytes) {
        const text = textOfBytes(bytes);
        if (text !== null) return { ...head, kind: 'TEXT', content: text };
      }
      return { ...head, kind: 'BYTES', bytes, ...checkBytes(a.mimeType, bytes, pathOf(field)) };
    }
  }
}

/** An https URL of at most 4,096 characters, as given. */
function httpsUrlOf(value: string, where: string): string {
  if (value.length > 4096) throw badInput(`${where} is longer than 4096 characters.`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw badInput(`${where} "${value.slice(0, 200)}" is not a URL.`);
  }
  if (url.protocol !== 'https:') throw badInput(`${where} must be an https URL (providers fetch it; the server never does).`);
  return value;
}

function providerFileOf(value: { provider: string; fileId: string }, where: string): ProviderFileRef {
  if (!(PROVIDERS as readonly string[]).includes(value.provider)) {
    throw badInput(`${where}.provider "${value.provider}" is not one of ${PROVIDERS.join(', ')}.`);
  }
  if (!value.fileId.trim() || value.fileId.length > 1024) throw badInput(`${where}.fileId must be 1 to 1024 characters.`);
  return { provider: value.provider as ProviderName, fileId: value.fileId };
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Characters of `value` as JSON text, refused past `max` (what storing and sending it back costs). */
function checkJsonSize(value: unknown, where: string, max: number) {
  const length = JSON.stringify(value).length;
  if (length > max) throw badInput(`${where} is ${length} characters as JSON, more than ${max}, the cap on this server.`);
}

/**
 * Provider metadata as given: a JSON object keyed by provider, each provider's value an object;
 * at most the string cap as JSON text. The contract's keys are checked for their type where they
 * are set (a signature, an item id, a thought signature: strings).
 */
function providerMetadataOf(value: unknown, where: string, caps: TextCaps): ProviderMetadata {
  if (!isObject(value)) throw badInput(`${where} must be a JSON object keyed by provider (anthropic, openai, google).`);
  for (const [provider, fields] of Object.entries(value)) {
    if (!isObject(fields)) throw badInput(`${where}.${provider} must be a JSON object.`);
    for (const key of STRING_METADATA[provider as ProviderName] ?? []) {
      if (fields[key] !== undefined && typeof fields[key] !== 'string') throw badInput(`${where}.${provider}.${key} must be a string.`);
    }
  }
  checkJsonSize(value, where, caps.stringLength);
  return value;
}

const STRING_METADATA: Partial<Record<ProviderName, readonly string[]>> = {
  anthropic: ['signature', 'redactedData'],
  openai: ['itemId', 'encryptedContent'],
  google: ['thoughtSignature', 'id'],
};

const PROVIDER_FORMATS: Record<ProviderName, readonly string[]> = {
  anthropic: ['ANTHROPIC_MESSAGES'],
  openai: ['OPENAI_CHAT', 'OPENAI_RESPONSES'],
  google: ['GEMINI'],
};

function providerPartOf(input: NonNullable<PartInput['providerPart']>, where: string, caps: TextCaps): DraftPart {
  const provider = input.provider as ProviderName;
  if (!PROVIDERS.includes(provider)) throw badInput(`${where}.provider "${input.provider}" is not one of ${PROVIDERS.join(', ')}.`);
  if (!isObject(input.data)) throw badInput(`${where}.data must be a JSON object (the provider's block as it gave it).`);
  checkJsonSize(input.data, `${where}.data`, caps.stringLength);
  const format = input.format ?? undefined;
  if (format !== undefined && !PROVIDER_FORMATS[provider].includes(format)) {
    throw badInput(`${where}.format ${format} is not a format of ${provider} (${PROVIDER_FORMATS[provider].join(', ')}).`);
  }
  const part: ProviderStoredPart = { type: 'providerPart', provider, data: input.data };
  return format === undefined ? part : { ...part, format: format as ProviderStoredPart['format'] };
}

/**
 * A tool call's arguments as a value and as the JSON text sent and counted. The text is kept
 * byte for byte when the client gives it (`argumentsJson`, or `arguments` as a string holding JSON
 * text of an object or array: a model's own arguments string, as OpenAI returns it, which would
 * otherwise be sent back double-encoded); a JSON value is serialized once, here.
 */
function toolCallArguments(input: { arguments?: unknown; argumentsJson?: string | null }, where: string): { value: unknown; text: string } {
  const value = input.arguments ?? null;
  const json = input.argumentsJson ?? null;
  if (json !== null) {
    if (value !== null) throw badInput(`${where}: give \`arguments\` or \`argumentsJson\`, not both.`);
    return { value: parseArgumentsJson(json, `${where}.argumentsJson`), text: json };
  }
  if (value === null) return { value: {}, text: '{}' };
  if (typeof value === 'string' && /^\s*[[{]/.test(value)) {
    try {
      const parsed: unknown = JSON.parse(value);
      checkJson(parsed, `${where}.arguments`);
      return { value: parsed, text: value };
    } catch (error) {
      if (!(error instanceof SyntaxError)) throw error;
      // Not JSON text: an ordinary string value.
    }
  }
  return { value, text: JSON.stringify(value) };
}

/** JSON text given for a tool call's arguments: valid JSON whose value obeys the JSON argument rules. */
function parseArgumentsJson(text: string, where: string): unknown {
  if (text.length > LIMITS.jsonLength) throw badInput(`${where} is larger than ${LIMITS.jsonLength} characters.`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw badInput(`${where} is not valid JSON (${(error as Error).message}).`);
  }
  checkJson(parsed, where);
  return parsed;
}

/** Position of the first C0 or C1 control character or DEL in `value` (-1: none): no model produces them in an id or a name, and they would hide in logs and reasons. */
function controlCharacterAt(value: string): number {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return i;
  }
  return -1;
}

/** A call id or tool name: not blank, at most LIMITS.idLength characters, no control character; anything else is stored as sent. */
function checkId(value: string, where: string) {
  if (!value.trim()) throw badInput(`${where} must not be empty.`);
  if (value.length > LIMITS.idLength) throw badInput(`${where} is longer than ${LIMITS.idLength} characters.`);
  const at = controlCharacterAt(value);
  if (at >= 0) {
    const code = value.charCodeAt(at).toString(16).padStart(4, '0');
    throw badInput(`${where} contains a control character (\\u${code}) at position ${at}.`);
  }
}

function checkRoleParts(role: MessageRole, parts: DraftPart[], where: string) {
  const callIds = new Set<string>();
  for (const part of parts) {
    if (part.type === 'toolCall') {
      if (role !== 'ASSISTANT') throw badInput(`${where}: tool calls belong in ASSISTANT messages, not ${role}.`);
      if (callIds.has(part.callId)) throw badInput(`${where}: tool call id "${part.callId}" is used twice.`);
      callIds.add(part.callId);
    }
    if (part.type === 'toolResult' && role !== 'TOOL') {
      throw badInput(`${where}: tool results belong in TOOL messages, not ${role}.`);
    }
    if (part.type === 'reasoning' && role !== 'ASSISTANT') {
      throw badInput(`${where}: reasoning belongs in ASSISTANT messages, not ${role}.`);
    }
  }
  if (role === 'TOOL') {
    // What a tool returned beside its result: images and PDFs, after the result they belong to.
    const toolMedia = (p: DraftPart) =>
      p.type === 'attachmentUpload' && p.kind !== 'TEXT' && (p.mimeType.startsWith('image/') || baseType(p.mimeType) === 'application/pdf');
    if (parts[0]?.type !== 'toolResult' || parts.some((p) => p.type !== 'toolResult' && !toolMedia(p))) {
      throw badInput(
        `${where}: a TOOL message holds tool results, each followed by the images or PDFs its tool returned (not text files).`,
      );
    }
  }
}

/** The text parts joined, as `Message.text` shows them. */
export function joinText(parts: readonly { type: string; text?: string }[]): string {
  return parts
    .filter((p) => p.type === 'text')
    .map((p) => p.text!)
    .join('\n');
}

export const toolCallIdsOf = (parts: readonly DraftPart[] | readonly StoredPart[]) =>
  parts.flatMap((p) => (p.type === 'toolCall' ? [p.callId] : []));

export const toolResultIdsOf = (parts: readonly DraftPart[] | readonly StoredPart[]) =>
  parts.flatMap((p) => (p.type === 'toolResult' ? [p.callId] : []));

/**
 * Characters of the strings a message's parts carry: texts, tool results, tool-call arguments as
 * sent (twice: as their text and as the value parsed from it), reasoning, and provider data and
 * metadata as JSON text. What holding or carrying the parts weighs.
 */
export function partsChars(parts: readonly StoredPart[]): number {
  let chars = 0;
  for (const part of parts) {
    if (part.type === 'text') chars += part.text.length;
    else if (part.type === 'toolResult') chars += part.content.length;
    else if (part.type === 'toolCall') chars += 2 * toolArgumentsText(part).length;
    else if (part.type === 'reasoning') chars += part.text.length;
    else if (part.type === 'providerPart') chars += JSON.stringify(part.data).length;
    if (part.providerMetadata !== undefined) chars += JSON.stringify(part.providerMetadata).length;
  }
  return chars;
}
