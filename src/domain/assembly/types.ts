/**
 * Input and output shapes of context assembly (`assembleContext`). Plain data only: the GraphQL
 * layer loads a session's messages, its applicable compaction and its attachments, calls the pure
 * pipeline, and maps the result back.
 */
import type { KnownTokenCounts } from '../tokens.js';
import type { HistoryTransforms } from '../transforms.js';
import type { PayloadPrefix } from './payload-prefix.js';
import type {
  DomainCompaction,
  DomainMessage,
  MessageRole,
  ProviderMetadata,
  ProviderStoredPart,
  ReasoningStoredPart,
  ResolvedAttachment,
  TokenEncoding,
} from '../types.js';

export type ContextFormat = 'GENERIC' | 'OPENAI_CHAT' | 'OPENAI_RESPONSES' | 'ANTHROPIC_MESSAGES' | 'GEMINI';

/** How attachments reach the model: their text inlined, or a short reference block read with the read_attachment tool. */
export type AttachmentMode = 'INLINE' | 'REFERENCE';
export const ATTACHMENT_MODES: readonly AttachmentMode[] = ['INLINE', 'REFERENCE'];

/**
 * Where a context with a binding maxTokens starts (stable-prefix.ts): STABLE_PREFIX at a point the
 * history fixes, kept until the budget binds again (the calls that follow send the same first
 * messages, which a provider's prompt cache reads); NEWEST_FIRST at the oldest message that fits,
 * which moves at every call once the budget binds.
 */
export type CacheStrategy = 'STABLE_PREFIX' | 'NEWEST_FIRST';
export const CACHE_STRATEGIES: readonly CacheStrategy[] = ['STABLE_PREFIX', 'NEWEST_FIRST'];
export const DEFAULT_CACHE_STRATEGY: CacheStrategy = 'STABLE_PREFIX';
/** The share of maxTokens STABLE_PREFIX leaves free when it drops (the lower mark is maxTokens × (1 − cacheSlack)). */
export const DEFAULT_CACHE_SLACK = 0.3;

export const CONTEXT_FORMATS: readonly ContextFormat[] = ['GENERIC', 'OPENAI_CHAT', 'OPENAI_RESPONSES', 'ANTHROPIC_MESSAGES', 'GEMINI'];
export const TOKEN_ENCODINGS: readonly TokenEncoding[] = ['O200K_BASE', 'CL100K_BASE', 'CHARS_DIV_4'];

export interface AssembleContextOptions {
  /** null = no token budget; an integer >= 1 otherwise. */
  maxTokens: number | null;
  /** null = no cap; an integer >= 1 otherwise. */
  maxMessages: number | null;
  /** Tool rounds (newest first) whose results are kept verbatim; older results become stubs. >= 0. */
  keepToolCallRounds: number;
  encoding: TokenEncoding;
  /** A system prompt put first. Empty string = none. */
  system: string | null;
  /** A plain JSON object rendered as one block right before the last user message. */
  turnContext: Record<string, unknown> | null;
  format: ContextFormat;
  /** Cap per inlined attachment, in characters (UTF-16 code units) of its original text. */
  attachmentMaxChars: number;
  /** Cap for all attachments inlined in one context, same unit. */
  contextAttachmentMaxChars: number;
  /**
   * Keep the session's leading SYSTEM message (index 0, not summarized) outside maxMessages and
   * ahead of every other message in the token budget. Default true.
   */
  keepSystemMessage?: boolean;
  /** INLINE (default): attachments' text inlined within the caps. REFERENCE: a reference block each (attachments.ts). */
  attachmentMode?: AttachmentMode;
  /** Put the read_attachment tool's definition in the payload (attachment-tool.ts); default false. */
  includeAttachmentTool?: boolean;
  /** Where a context with a binding maxTokens starts; default DEFAULT_CACHE_STRATEGY. */
  cacheStrategy?: CacheStrategy;
  /** STABLE_PREFIX: the share of maxTokens left free when the budget binds, 0 ≤ x < 1; default DEFAULT_CACHE_SLACK. */
  cacheSlack?: number;
}

export const DEFAULT_ATTACHMENT_MAX_CHARS = 20_000;
export const DEFAULT_CONTEXT_ATTACHMENT_MAX_CHARS = 100_000;
export const DEFAULT_KEEP_TOOL_CALL_ROUNDS = 2;

export interface AssembleContextFlags {
  isFork: boolean;
  isFirstTurn: boolean;
  hasConnectorSwap: boolean;
  /** A history transform or compaction was added since the last recorded context. */
  hasNewTransforms?: boolean;
}

export interface AssembleContextInput {
  /** The session's whole visible message list in index order (inherited fork prefix included). */
  messages: readonly DomainMessage[];
  /** The latest compaction applicable to this session (the caller resolves fork inheritance). */
  compaction: DomainCompaction | null;
  /** By attachment id; a missing key means the attachment is missing. */
  attachments: ReadonlyMap<string, ResolvedAttachment>;
  /** The history transforms in force in this session (the caller resolves fork inheritance); none when absent. */
  transforms?: HistoryTransforms;
  options: AssembleContextOptions;
  /**
   * The id a reference block gives the model for an attachment (the client's opaque ID, which the
   * read_attachment tool passes back). Default: the attachment id as it is.
   */
  attachmentReferenceId?: (attachmentId: string) => string;
  /** Computed by the caller and echoed in the output. */
  flags: AssembleContextFlags;
  /** Counts of long texts made ahead (a long system prompt, counted off the request thread); none: every text is counted here. */
  knownTokens?: KnownTokenCounts;
  /** The payload prefix of the previous assembly of this session in this format (payload-prefix.ts); none: this is the first. */
  previousPrefix?: PayloadPrefix | null;
}

/** A part of an assembled message: stored parts with attachments resolved to text. */
export type AssembledPart =
  | {
      type: 'text';
      text: string /** set when this text is a resolved attachment block */;
      attachmentId?: string;
      providerMetadata?: ProviderMetadata;
    }
  | { type: 'toolCall'; callId: string; name: string; arguments: unknown; argumentsJson?: string; providerMetadata?: ProviderMetadata }
  | {
      type: 'toolResult';
      callId: string;
      content: string;
      isError: boolean;
      /** true when stubbed */
      elided?: boolean;
      /** GEMINI: the (sent) name of the call it answers, which its functionResponse names (provider-rules.ts). */
      toolName?: string;
      providerMetadata?: ProviderMetadata;
    }
  | ReasoningStoredPart
  | ProviderStoredPart
  | MediaPart;

/**
 * An image or document attachment the format sends as its provider's own block (never as text):
 * by its bytes (base64), by its https URL, or by the provider's file id. `tokens` is what the
 * block counts by the provider's published rule (media-tokens.ts).
 */
export interface MediaPart {
  type: 'media';
  attachmentId: string;
  name: string;
  mimeType: string;
  media: 'image' | 'document';
  source: { type: 'base64'; data: string } | { type: 'url'; url: string } | { type: 'providerFile'; provider: string; fileId: string };
  width?: number;
  height?: number;
  pages?: number;
  tokens: number;
  providerMetadata?: ProviderMetadata;
  /**
   * What a context hash writes in place of the base64 (hash.ts, "INLINE MEDIA"): `sha256:<hex>`
   * of the stored content when known, so a copy of the session (an import) hashes the same;
   * absent: `attachment:<id>`.
   */
  identity?: string;
}

/**
 * `system` is every synthetic block that is not the summary or the turn context: the system prompt
 * (role SYSTEM) and, for ANTHROPIC_MESSAGES and GEMINI only, the placeholder user turn (role USER, see
 * `LEADING_USER_TEXT`) put first when the kept conversation would otherwise start with an
 * assistant turn, which that API rejects.
 */
export type AssembledMessageKind = 'system' | 'summary' | 'message' | 'turnContext';

export interface AssembledMessage {
  role: MessageRole;
  kind: AssembledMessageKind;
  parts: AssembledPart[];
  /** null for the synthetic blocks (system prompt, summary, turn context, Anthropic placeholder). */
  sourceMessageId: string | null;
  /** The source message's index, null for synthetic blocks. */
  sourceIndex: number | null;
  /** Content plus this message's framing in the chosen format. */
  tokenCount: number;
}

export type ContextDecisionKind =
  | 'KEPT'
  | 'ELIDED'
  | 'SUMMARIZED'
  | 'HIDDEN'
  | 'DROPPED_GENERATING'
  | 'DROPPED_MAX_MESSAGES'
  | 'DROPPED_BUDGET'
  | 'DROPPED_TOOL_PAIR';

export interface ContextDecision {
  messageId: string;
  index: number;
  decision: ContextDecisionKind;
  reason: string;
}

export type AttachmentProblemKind =
  | 'MISSING'
  | 'UNREADABLE'
  | 'NOT_TEXT'
  | 'TRUNCATED'
  | 'CONTEXT_CAP_REACHED'
  /** The format cannot send this attachment in this place (its kind, type or role): a placeholder went instead. */
  | 'NOT_SENDABLE';

/** A call id or tool name the payload sends differently from how it is stored (provider-rules.ts). */
export interface ToolMapping {
  kind: 'CALL_ID' | 'TOOL_NAME';
  original: string;
  sent: string;
}

export interface AttachmentProblem {
  attachmentId: string;
  name: string;
  mimeType: string;
  messageId: string;
  problem: AttachmentProblemKind;
  /** A sentence a person can act on. */
  detail: string;
}

export interface AssembledContext {
  messages: AssembledMessage[];
  /** The messages in the requested provider's wire shape. */
  payload: unknown;
  /** Total the provider will see (every message's tokenCount, the reply priming and `toolTokenCount`). */
  tokenCount: number;
  /** Tokens of the tool definitions in the payload (0 when it has none); part of tokenCount. */
  toolTokenCount: number;
  maxTokens: number | null;
  maxMessages: number | null;
  /** Source messages not in the context (every DROPPED_* decision; summarized ones are not counted). */
  droppedMessageCount: number;
  /** Messages were dropped by maxMessages or maxTokens. */
  truncated: boolean;
  summaryIncluded: boolean;
  /** A compaction is in force (the session's own or one a fork inherits). */
  hasCompression: boolean;
  /** Tool result parts in the context replaced by a stub. */
  elidedToolResultCount: number;
  isFork: boolean;
  isFirstTurn: boolean;
  hasConnectorSwap: boolean;
  /** A history transform or compaction was added since the turn whose context was last recorded (a fork compares with its parent's). */
  hasNewTransforms: boolean;
  encoding: TokenEncoding;
  format: ContextFormat;
  /**
   * sha256 hex of the canonical serialization of format, encoding and payload, each inline image's
   * or PDF's base64 written as its attachment's identity (`attachment:<id>`, hash.ts).
   */
  contextHash: string;
  /** One per input message, in input order. */
  decisions: ContextDecision[];
  attachmentProblems: AttachmentProblem[];
  /** Call ids and tool names sent differently from how they are stored, each pair once (absent in contexts recorded before it existed). */
  toolMappings?: ToolMapping[];
  /**
   * Tokens at the start of the payload identical to the previous assembly's in this format
   * (`AssembleContextInput.previousPrefix`; 0 without one). Absent in contexts recorded before it existed.
   */
  reusedPrefixTokens?: number;
  /** This payload's prefix, for the next assembly to compare with (payload-prefix.ts). Stored apart, never recorded with a turn. */
  payloadPrefix?: PayloadPrefix;
  /** What the payload's input costs with `model` (model-catalog.ts); null or absent without a model. */
  estimatedCost?: EstimatedCost | null;
}

/** What the input of one call costs, from the model catalog: the reused prefix at the cache-read rate. */
export interface EstimatedCost {
  /** The catalog's provider and model priced (`anthropic/claude-sonnet-4-5`). */
  model: string;
  inputCost: number;
  cachedInputCost: number;
  total: number;
  currency: string;
}

/** A message removed by a pipeline step, with the decision and reason recorded for it. */
export interface Removal {
  message: DomainMessage;
  decision: Exclude<ContextDecisionKind, 'KEPT' | 'ELIDED'>;
  reason: string;
}
