/**
 * Plain data types used across the domain layer. Nothing here knows about GraphQL or Prisma:
 * the schema layer maps to and from these, and the pure functions (context assembly, fork
 * rules, token counting) take and return them.
 */

export type MessageRole = 'SYSTEM' | 'USER' | 'ASSISTANT' | 'TOOL';

export type TokenEncoding = 'O200K_BASE' | 'CL100K_BASE' | 'CHARS_DIV_4';

/**
 * Provider data of a part: an object keyed by provider (`anthropic`, `openai`, `google`, as the
 * Vercel AI SDK names them), each value an object of that provider's fields for the block the part
 * came from (`anthropic.signature`, `openai.itemId`, `google.thoughtSignature`, …). Stored as sent;
 * read only by the payload format(s) of that provider (docs/provider-replay.md).
 */
export type ProviderMetadata = Record<string, unknown>;

/** Provider names a provider part or provider metadata may name, and the formats each one's data reaches. */
export const PROVIDERS = ['anthropic', 'openai', 'google'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

/** What every stored part may carry beside its own fields. */
interface PartExtras {
  providerMetadata?: ProviderMetadata;
}

/**
 * A model's reasoning (Anthropic thinking, an OpenAI reasoning item, a Gemini thought): `text` is
 * what can be read of it (thinking text, a summary; "" when none), `redacted` says that its content
 * is encrypted (Anthropic `redacted_thinking`, data in `providerMetadata.anthropic.redactedData`).
 */
export interface ReasoningStoredPart extends PartExtras {
  type: 'reasoning';
  text: string;
  redacted: boolean;
}

/** A provider block this server does not model, stored whole and sent only to that provider's format(s). */
export interface ProviderStoredPart extends PartExtras {
  type: 'providerPart';
  provider: ProviderName;
  /** The block, item or part as the provider gave it. */
  data: Record<string, unknown>;
  /**
   * The payload format `data` is a piece of, when the provider has several (OpenAI's Chat
   * Completions and Responses shapes differ); absent: every format of the provider.
   */
  format?: 'OPENAI_CHAT' | 'OPENAI_RESPONSES' | 'ANTHROPIC_MESSAGES' | 'GEMINI';
}

/** One part of a message, as stored in `Message.parts` (a JSON array). */
export type StoredPart =
  | ({ type: 'text'; text: string } & PartExtras)
  | ToolCallStoredPart
  | ({ type: 'toolResult'; callId: string; content: string; isError: boolean } & PartExtras)
  | AttachmentStoredPart
  | ReasoningStoredPart
  | ProviderStoredPart;

/**
 * How an attachment's content is held: `TEXT` (text in the `Attachment` row, as before binaries),
 * `BYTES` (bytes in `AttachmentBlob`, one copy per workspace and SHA-256), `URL` (an https address,
 * stored, never fetched by the server), `PROVIDER_FILE` (a file already uploaded to a provider).
 */
export type AttachmentKind = 'TEXT' | 'BYTES' | 'URL' | 'PROVIDER_FILE';

/** A file uploaded to a provider (its Files API), by the id that provider gave it. */
export interface ProviderFileRef {
  provider: ProviderName;
  fileId: string;
}

/**
 * An attachment as a message part. What assembly needs to send it without another read is kept in
 * the part: its kind, an image's dimensions, a PDF's page count, the URL or the provider file.
 * Parts stored before binaries lack `kind` (they are `TEXT`).
 */
export interface AttachmentStoredPart extends PartExtras {
  type: 'attachment';
  attachmentId: string;
  name: string;
  mimeType: string;
  /** Bytes of the content (UTF-8 for TEXT); 0 for URL and PROVIDER_FILE. */
  size: number;
  kind?: AttachmentKind;
  /** Pixels, for an image whose bytes the server holds. */
  width?: number;
  height?: number;
  /** Pages of a PDF whose bytes the server holds, as counted from its page tree (an estimate). */
  pages?: number;
  /** URL: the https address. */
  url?: string;
  /** PROVIDER_FILE: the provider and its file id. */
  providerFile?: ProviderFileRef;
}

/**
 * A tool call as stored. `argumentsJson` is the arguments' JSON text exactly as the client gave it
 * (or, when it gave a JSON value, that value serialized once at write time): it is what OPENAI_CHAT
 * sends as `function.arguments` and what is counted, byte for byte, whatever the database does to
 * the `arguments` value (jsonb reorders keys). Rows written before it existed lack it (see
 * `toolArgumentsText`).
 */
export interface ToolCallStoredPart extends PartExtras {
  type: 'toolCall';
  callId: string;
  name: string;
  /** The arguments as a JSON value (`JSON.parse(argumentsJson)` when the text was given). */
  arguments: unknown;
  argumentsJson?: string;
}

/** Stored content token counts of a message (framing excluded), per real encoding. */
export interface TokenCounts {
  O200K_BASE: number;
  CL100K_BASE: number;
}

/** A message as the domain sees it: its absolute index in the viewing session and its parts. */
export interface DomainMessage {
  id: string;
  index: number;
  role: MessageRole;
  parts: StoredPart[];
  generating: boolean;
  /** Content tokens counted once at write time; null when not counted yet (then counted on demand). */
  tokens: TokenCounts | null;
}

/** A compaction: messages [0, uptoIndex) are replaced by `summary` when assembling context. */
export interface DomainCompaction {
  id: string;
  uptoIndex: number;
  summary: string;
  /** Structured context extracted beside the summary (a JSON value), rendered after it in the summary block; null or absent: none. */
  extractedContext?: unknown;
  tokens: TokenCounts | null;
}

/** A stored attachment's content as resolved for context assembly. */
export interface ResolvedAttachment {
  id: string;
  name: string;
  mimeType: string;
  size: number;
  /**
   * Text content, or null when the attachment is not readable as text, or when it was not loaded
   * (REFERENCE mode reads `chars` instead: a reference block does not need the content).
   */
  content: string | null;
  /** Characters (Unicode code points) of the text content, when known without `content`; absent when there is no text. */
  chars?: number;
  /** Why `content` is null, when it is. */
  problem?: string;
  /** Absent: TEXT. */
  kind?: AttachmentKind;
  /** SHA-256 (hex) of the content, when read: what a context hash names inline media by. */
  sha256?: string;
  /**
   * BYTES: the stored bytes, when assembly loaded them (only for a format that sends them and
   * within the context's media cap); null when not loaded.
   */
  bytes?: Uint8Array | null;
  width?: number | null;
  height?: number | null;
  pages?: number | null;
  url?: string | null;
  providerFile?: ProviderFileRef | null;
}
