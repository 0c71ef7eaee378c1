import type {
  AssembledContext as AssembledContextShape,
  AssembledMessage,
  AttachmentProblem as AttachmentProblemShape,
  ContextDecision as ContextDecisionShape,
  ToolMapping as ToolMappingShape,
} from '../domain/assembly/index.js';
import {
  DEFAULT_ATTACHMENT_MAX_CHARS,
  DEFAULT_CACHE_SLACK,
  DEFAULT_CACHE_STRATEGY,
  DEFAULT_CONTEXT_ATTACHMENT_MAX_CHARS,
  DEFAULT_KEEP_TOOL_CALL_ROUNDS,
} from '../domain/assembly/types.js';
import { builder } from './builder.js';
import { parseGlobalId, toGlobalId } from './ids.js';
import { MessagePart, MessageRoleEnum } from './message.js';

export const TokenEncodingEnum = builder.enumType('TokenEncoding', {
  description: 'How tokens are counted.',
  values: {
    O200K_BASE: { description: 'OpenAI o200k_base (GPT-4o, GPT-4.1, o-series), counted exactly.' },
    CL100K_BASE: { description: 'OpenAI cl100k_base (GPT-4, GPT-3.5), counted exactly.' },
    CHARS_DIV_4: { description: 'Characters / 4, rounded up: a rough estimate, for comparison only.' },
  } as const,
});

export const ContextFormatEnum = builder.enumType('ContextFormat', {
  description: 'The wire shape of `AssembledContext.payload`.',
  values: {
    GENERIC: { description: '{ messages: [{ role, parts }] } with lower-case roles.' },
    OPENAI_CHAT: {
      description:
        'OpenAI Chat Completions: { messages } with tool_calls and role "tool" results. Counted exactly for text (ChatML: 4 per message, 3 of reply priming), tool calls by OpenAI\'s published approximation. Call ids over 40 characters or outside letters, digits, _ and -, and tool names outside ^[a-zA-Z0-9_-]{1,64}$, are mapped (toolMappings).',
    },
    OPENAI_RESPONSES: {
      description:
        'OpenAI Responses API: { input } items in conversation order: { type: "message", role, content }, { type: "function_call", call_id, name, arguments } (the stored arguments text) and { type: "function_call_output", call_id, output } after its call. The system prompt, summary and SYSTEM messages are role "system" message items where they stand, not `instructions`: a mid-conversation SYSTEM message keeps its place and nothing is joined, so the count stays exact. Counted as OPENAI_CHAT (message items exactly; OpenAI publishes no framing for function items, so they are counted as their Chat Completions equivalents). Ids and names are mapped as for OPENAI_CHAT (call ids up to 64 characters).',
    },
    ANTHROPIC_MESSAGES: {
      description:
        "Anthropic Messages: { system, messages } with tool_use and tool_result blocks; roles alternate and the first turn is a user turn. Counted as an estimate (Claude's tokenizer is not public). Call ids outside ^[a-zA-Z0-9_-]+$ and tool names outside ^[a-zA-Z0-9_-]{1,64}$ are mapped (toolMappings).",
    },
    GEMINI: {
      description:
        'Gemini generateContent: { systemInstruction, contents } with roles "user" and "model", parts { text }, { functionCall: { name, args } } and { functionResponse: { name, response: { output } or { error } } } in the user turn right after the call, in call order; roles alternate and the first turn is a user turn. Counted as content only: Gemini\'s tokenizer and framing are not published, so no framing or reply priming is added and the chosen encoding counts the texts, call names, arguments and results. Call ids are not sent; tool names outside Gemini\'s rule (up to 64 letters, digits, _ . : -, starting with a letter or _) are mapped (toolMappings).',
    },
  } as const,
});

const AttachmentModeEnum = builder.enumType('AttachmentMode', {
  description: 'How context assembly gives the model the attachments of the messages it keeps.',
  values: {
    INLINE: {
      description:
        'Their text inlined as escaped <attachment> blocks, within attachmentMaxChars and contextAttachmentMaxChars (cut or left out ones are in attachmentProblems).',
    },
    REFERENCE: {
      description:
        'A short <attachment_ref> block each instead: its ID, name, MIME type, size in bytes, length in characters and how to read it (the read_attachment tool, served by `attachment(id) { content(offset, length) }`). The caps do not apply; a missing or unreadable attachment is reported as in INLINE.',
    },
  } as const,
});

const CacheStrategyEnum = builder.enumType('CacheStrategy', {
  description:
    'Where a context starts once maxTokens binds (leaves out messages). Providers bill a prompt prefix they have seen before at a tenth of the input price or less (OpenAI caches automatically from 1,024 tokens, Anthropic at the cache_control marks ANTHROPIC_MESSAGES places, Gemini implicitly), but only when the request starts with the same messages.',
  values: {
    STABLE_PREFIX: {
      description:
        'When maxTokens binds, drop down to maxTokens × (1 − cacheSlack), at a point the history fixes (not the call), and keep that first message while the messages appended after it fit: the calls that follow send the same first messages, which the provider reads from its cache, until maxTokens binds again. Right after a drop up to cacheSlack of the budget is unused. Messages left out for it are DROPPED_BUDGET, their reason says so.',
    },
    NEWEST_FIRST: {
      description:
        'Keep the newest messages that fit maxTokens at every call: the most history, but once the budget binds the first message changes at (nearly) every call, so the provider never reads a cached prefix again.',
    },
  } as const,
});

const ContextMessageKindEnum = builder.enumType('ContextMessageKind', {
  description: 'Where an assembled message comes from.',
  values: {
    SYSTEM: { value: 'system', description: 'The system prompt given to assembleContext.' },
    SUMMARY: { value: 'summary', description: 'The summary of a compaction, standing for the messages it replaced.' },
    MESSAGE: { value: 'message', description: 'A message of the session.' },
    TURN_CONTEXT: { value: 'turnContext', description: 'The turnContext block, right before the last user message.' },
  } as const,
});

const ContextDecisionKindEnum = builder.enumType('ContextDecisionKind', {
  description: 'What assembly did with a source message.',
  values: {
    KEPT: { description: 'In the context as it is.' },
    ELIDED: {
      description:
        'In the context, its tool results replaced by a short stub (older than keepToolCallRounds, or stripped by stripToolOutputs).',
    },
    SUMMARIZED: { description: 'Replaced by the compaction summary.' },
    HIDDEN: { description: 'Left out: hidden in this session by hideMessages (the reason says why).' },
    DROPPED_GENERATING: { description: 'Left out: still generating.' },
    DROPPED_MAX_MESSAGES: { description: 'Left out by maxMessages.' },
    DROPPED_BUDGET: {
      description:
        'Left out to fit maxTokens (or, with cacheStrategy STABLE_PREFIX, to keep the first messages stable: the reason says which).',
    },
    DROPPED_TOOL_PAIR: { description: 'Left out so that no tool call is separated from its result.' },
  } as const,
});

const AttachmentProblemKindEnum = builder.enumType('AttachmentProblemKind', {
  description: 'Why an attachment is not inlined whole.',
  values: {
    MISSING: { description: 'The stored attachment is gone.' },
    UNREADABLE: { description: 'Its content could not be read as text.' },
    NOT_TEXT: { description: 'Its MIME type is not text; a placeholder stands for it.' },
    TRUNCATED: { description: 'Cut to the per-attachment cap.' },
    CONTEXT_CAP_REACHED: { description: 'The cap for all attachments of one context was reached.' },
    NOT_SENDABLE: {
      description:
        'The format cannot send this image or file in this place (its type, how it is held, or the role of its message); a placeholder stands for it.',
    },
  } as const,
});

const ToolMappingKindEnum = builder.enumType('ToolMappingKind', {
  description: 'What a ToolMapping maps.',
  values: {
    CALL_ID: { description: "A tool call's id (and the results that answer it)." },
    TOOL_NAME: { description: 'A tool name (every call of that tool in the payload).' },
  } as const,
});

const ToolMapping = builder.objectRef<ToolMappingShape>('ToolMapping').implement({
  description:
    "A call id or tool name the payload sends differently from how it is stored, because the format's provider refuses the stored one. Map the model's answer back with it: a tool call the model makes by the sent name is a call of the original tool.",
  fields: (t) => ({
    kind: t.field({ type: ToolMappingKindEnum, description: 'Whether it is a call id or a tool name.', resolve: (m) => m.kind }),
    original: t.exposeString('original', { description: 'The value as stored (as the client sent it).' }),
    sent: t.exposeString('sent', { description: 'The value in the payload.' }),
  }),
});

const ContextMessage = builder.objectRef<AssembledMessage>('ContextMessage').implement({
  description: 'One message of an assembled context.',
  fields: (t) => ({
    role: t.field({ type: MessageRoleEnum, description: 'Its role.', resolve: (m) => m.role }),
    kind: t.field({
      type: ContextMessageKindEnum,
      description: 'Where it comes from.',
      resolve: (m) => m.kind,
    }),
    parts: t.field({
      type: [MessagePart],
      description:
        "Its parts. Text attachments are resolved into text parts; an image or PDF the format sends as its provider's block is an AttachmentPart (its bytes are in `payload`, and at `Attachment.url`).",
      resolve: (m) =>
        m.parts.map((p) =>
          p.type === 'media' ? { type: 'attachment', attachmentId: p.attachmentId, name: p.name, mimeType: p.mimeType, size: 0 } : p,
        ) as never,
    }),
    text: t.string({
      description: 'Its text parts joined by newlines.',
      resolve: (m) => m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n'),
    }),
    sourceMessageId: t.id({
      nullable: true,
      description: 'The session message it comes from (null for the system prompt, summary and turn context).',
      resolve: (m) => (m.sourceMessageId ? toGlobalId('Message', m.sourceMessageId) : null),
    }),
    sourceIndex: t.exposeInt('sourceIndex', { nullable: true, description: 'Index of that message in the session.' }),
    tokenCount: t.exposeInt('tokenCount', { description: 'Tokens of this message, its framing in the chosen format included.' }),
  }),
});

const ContextDecision = builder.objectRef<ContextDecisionShape>('ContextDecision').implement({
  description: 'What assembly did with one source message, and why.',
  fields: (t) => ({
    messageId: t.id({ description: 'The message.', resolve: (d) => toGlobalId('Message', d.messageId) }),
    index: t.exposeInt('index', { description: 'Its index in the session.' }),
    decision: t.field({ type: ContextDecisionKindEnum, description: 'What happened to it.', resolve: (d) => d.decision }),
    reason: t.exposeString('reason', { description: 'Why, in words.' }),
  }),
});

const AttachmentProblem = builder.objectRef<AttachmentProblemShape>('AttachmentProblem').implement({
  description: 'An attachment that could not be inlined whole. Never silently dropped: each one is reported here.',
  fields: (t) => ({
    attachmentId: t.id({ description: 'The attachment.', resolve: (p) => toGlobalId('Attachment', p.attachmentId) }),
    name: t.exposeString('name', { description: 'Its file name.' }),
    mimeType: t.exposeString('mimeType', { description: 'Its MIME type.' }),
    messageId: t.id({ description: 'The message holding it.', resolve: (p) => toGlobalId('Message', p.messageId) }),
    problem: t.field({ type: AttachmentProblemKindEnum, description: 'What went wrong.', resolve: (p) => p.problem }),
    detail: t.exposeString('detail', { description: 'A sentence a person can act on.' }),
  }),
});

export const AssembledContext = builder.objectRef<AssembledContextShape>('AssembledContext').implement({
  description:
    'The context for the next model call: the messages that fit, in the requested provider shape, with exact token counts and a reason for every message left out.',
  fields: (t) => ({
    messages: t.field({ type: [ContextMessage], description: 'The assembled messages, in order.', resolve: (c) => c.messages }),
    payload: t.field({
      type: 'JSON',
      description:
        'The request body of `format` without the model settings: always an object, `{ messages }` (ANTHROPIC_MESSAGES: `{ system?, messages }`; OPENAI_RESPONSES: `{ input }`; GEMINI: `{ systemInstruction?, contents }`). With includeAttachmentTool it also has `tools`, the read_attachment definition in that provider\'s shape (OPENAI_CHAT `[{ type: "function", function: { name, description, parameters } }]`, OPENAI_RESPONSES `[{ type: "function", name, description, parameters, strict: false }]`, ANTHROPIC_MESSAGES `[{ name, description, input_schema }]`, GEMINI `[{ functionDeclarations: [{ name, description, parameters }] }]`, GENERIC `[{ name, description, parameters }]`).',
      resolve: (c) => c.payload,
    }),
    tokenCount: t.exposeInt('tokenCount', {
      description:
        'Tokens the provider will count for the payload: every message with its framing, the reply priming, and the tool definitions when the payload has them (toolTokenCount). Exact for text in OPENAI_CHAT, OPENAI_RESPONSES and GENERIC; an estimate for ANTHROPIC_MESSAGES; content only (no framing, nothing being published) for GEMINI (see ContextFormat).',
    }),
    toolTokenCount: t.int({
      description:
        "Tokens counted for the tool definitions in payload.tools (0 without): part of tokenCount and a fixed cost of the maxTokens budget. OPENAI_CHAT, OPENAI_RESPONSES and GENERIC: OpenAI's published approximation for function definitions; ANTHROPIC_MESSAGES: an estimate (Anthropic's tool-use system prompt plus the definitions' JSON); GEMINI: content only (the declarations' JSON), nothing being published of its framing.",
      resolve: (c) => c.toolTokenCount ?? 0,
    }),
    reusedPrefixTokens: t.int({
      description:
        "Tokens at the start of this payload identical to the previous assembly of the same session in the same format (whatever its other options): the tool definitions, then the system blocks and messages in the order the provider reads them, each compared whole (cache_control marks aside), up to the first that differs; counted as tokenCount counts them. 0 for the first assembly in a format. What a provider's prompt cache can serve of this call if the previous one was sent within the cache's lifetime; with cacheStrategy STABLE_PREFIX it stays high between the drops.",
      resolve: (c) => c.reusedPrefixTokens ?? 0,
    }),
    maxTokens: t.exposeInt('maxTokens', { nullable: true, description: 'The budget asked for (null: none).' }),
    maxMessages: t.exposeInt('maxMessages', { nullable: true, description: 'The message cap asked for (null: none).' }),
    droppedMessageCount: t.exposeInt('droppedMessageCount', {
      description: 'Source messages left out (generating, maxMessages, budget, tool pairing); summarized ones are not counted.',
    }),
    truncated: t.exposeBoolean('truncated', { description: 'True when maxMessages or maxTokens left messages out.' }),
    summaryIncluded: t.exposeBoolean('summaryIncluded', { description: 'True when a compaction summary stands for the first messages.' }),
    hasCompression: t.exposeBoolean('hasCompression', {
      description: "True when a compaction is in force for this session (its own, or one a fork inherits from its parent's history).",
    }),
    elidedToolResultCount: t.exposeInt('elidedToolResultCount', {
      description: 'Tool results replaced by a short stub because they are older than keepToolCallRounds rounds.',
    }),
    isFork: t.exposeBoolean('isFork', { description: 'True when the session is a fork.' }),
    isFirstTurn: t.exposeBoolean('isFirstTurn', { description: 'True when the session has no earlier turn.' }),
    hasConnectorSwap: t.exposeBoolean('hasConnectorSwap', {
      description:
        "True when the session's settings (model, connector) differ from those of the last recorded context (a fork compares with its parent's).",
    }),
    hasNewTransforms: t.boolean({
      description:
        "True when a history transform (hideMessages, unhideMessages, redactMessage, unredactMessage, stripToolOutputs) or a compaction was added to this session's view since the turn whose context was last recorded (a fork with none of its own compares with its parent's): the history changed, so a provider-side prompt cache or a native resume is invalid.",
      resolve: (c) => c.hasNewTransforms ?? false,
    }),
    encoding: t.field({ type: TokenEncodingEnum, description: 'How tokens were counted.', resolve: (c) => c.encoding }),
    format: t.field({ type: ContextFormatEnum, description: 'The shape of payload.', resolve: (c) => c.format }),
    contextHash: t.exposeString('contextHash', {
      description:
        'SHA-256 (hex) of the RFC 8785 canonical JSON of { encoding, format, payload }: the same inputs give the same hash, and a client can recompute it.',
    }),
    decisions: t.field({
      type: [ContextDecision],
      description: 'One entry per source message, in index order: kept, elided, summarized or dropped, and why.',
      resolve: (c, _, ctx) => ctx.assembly.decisionsOf(c),
    }),
    attachmentProblems: t.field({
      type: [AttachmentProblem],
      description: 'Attachments that are missing, not text, or cut to a cap.',
      resolve: (c) => c.attachmentProblems,
    }),
    toolMappings: t.field({
      type: [ToolMapping],
      description:
        "Every call id and tool name the payload sends differently from how it is stored (the format's provider refuses the stored one), each pair once: deterministic, and never two originals to one sent value. The decision of each message concerned names them too. Empty for GENERIC.",
      resolve: (c) => c.toolMappings ?? [],
    }),
  }),
});

const AssembleContextInput = builder.inputType('AssembleContextInput', {
  description: 'What to assemble. Only sessionId is required.',
  fields: (t) => ({
    sessionId: t.id({ required: true, description: 'The session.' }),
    maxTokens: t.int({
      required: false,
      description:
        "Token budget (≥ 1). Default: none; with `model`, the model's context window less `outputReserve` (AssembledContext.maxTokens says which budget was used).",
    }),
    maxMessages: t.int({ required: false, description: 'Keep at most this many of the newest messages (≥ 1). Default: none.' }),
    keepToolCallRounds: t.int({
      required: false,
      defaultValue: DEFAULT_KEEP_TOOL_CALL_ROUNDS,
      description: 'Tool rounds (newest first) whose results stay verbatim; older results become short stubs.',
    }),
    encoding: t.field({ type: TokenEncodingEnum, required: false, defaultValue: 'O200K_BASE', description: 'How to count tokens.' }),
    system: t.string({ required: false, description: 'A system prompt to put first.' }),
    turnContext: t.field({
      type: 'JSON',
      required: false,
      description: 'A JSON object rendered as one block right before the last user message (keys sorted, values escaped).',
    }),
    turnId: t.id({ required: false, description: "Record the result as this turn's context." }),
    format: t.field({ type: ContextFormatEnum, required: false, defaultValue: 'GENERIC', description: 'The payload shape.' }),
    attachmentMaxChars: t.int({
      required: false,
      description: `Characters of one attachment inlined at most (default ${DEFAULT_ATTACHMENT_MAX_CHARS}).`,
    }),
    keepSystemMessage: t.boolean({
      required: false,
      defaultValue: true,
      description:
        "Keep the session's leading SYSTEM message (its first message, when not compacted) outside maxMessages and first in the maxTokens budget (CONTEXT_BUDGET_TOO_SMALL when it cannot fit with the newest user message).",
    }),
    contextAttachmentMaxChars: t.int({
      required: false,
      description: `Characters of all attachments of one context inlined at most (default ${DEFAULT_CONTEXT_ATTACHMENT_MAX_CHARS}).`,
    }),
    attachmentMode: t.field({
      type: AttachmentModeEnum,
      required: false,
      defaultValue: 'INLINE',
      description:
        "INLINE (default): attachments' text is inlined. REFERENCE: each becomes a short reference block the agent reads with the read_attachment tool. Either way the blocks are counted and fitted into maxTokens like the rest of their message.",
    }),
    model: t.string({
      required: false,
      description:
        "A model of the model catalog (docs/models.md): its API id, such as `claude-sonnet-4-5`, `gpt-5` or `gemini-2.5-flash`, optionally prefixed by its provider (`anthropic/claude-sonnet-4-5`); without a prefix the format's provider is tried first. It gives the default maxTokens and estimatedCost. An unknown model is refused (BAD_USER_INPUT naming the closest catalog names; `modelCatalog(search:)` lists them).",
    }),
    outputReserve: t.int({
      required: false,
      description:
        "With `model` and no maxTokens: the tokens kept for the answer, taken from the model's window to give maxTokens (such as the max_tokens the call will send). Default: 16,384, or a quarter of the window when that is smaller.",
    }),
    includeAttachmentTool: t.boolean({
      required: false,
      defaultValue: false,
      description:
        'Put the read_attachment tool definition in payload.tools (every format; see payload). Independent of attachmentMode and of whether any attachment is kept, so the tool list stays the same from call to call. Its tokens are counted (toolTokenCount).',
    }),
    cacheStrategy: t.field({
      type: CacheStrategyEnum,
      required: false,
      defaultValue: DEFAULT_CACHE_STRATEGY,
      description:
        'Where the context starts once maxTokens binds (see CacheStrategy). Default STABLE_PREFIX, because on a long conversation it is the cheap one: the calls that follow a drop send the same first messages, which every major provider bills at a tenth of the input price or less, where NEWEST_FIRST changes the first message at every call and pays the whole context each time (up to ten times as much). What it gives up is bounded: at most cacheSlack of the budget, of the oldest messages, and nothing while the budget does not bind. Without maxTokens the two are the same.',
    }),
    cacheSlack: t.float({
      required: false,
      defaultValue: DEFAULT_CACHE_SLACK,
      description:
        'STABLE_PREFIX: the share of maxTokens left free when the budget binds, 0 ≤ cacheSlack < 1. The context drops down to maxTokens × (1 − cacheSlack), the fixed blocks but the turn context included, and grows back with the messages appended until maxTokens binds again. Larger: fewer drops, so more calls read the cache, but less history right after each. 0 keeps as much as fits, as NEWEST_FIRST.',
    }),
  }),
});

builder.mutationField('assembleContext', (t) =>
  t.field({
    type: AssembledContext,
    description:
      "Assembles the context for the next model call. Pipeline: drop generating messages, apply the latest compaction, elide old tool results, maxMessages, fit maxTokens (never separating a tool call from its result; cacheStrategy says where the context starts when it binds), resolve attachments (inlined or by reference, attachmentMode), put turnContext before the last user message. Never changes the session's messages; keeps the payload's prefix for the next assembly in the same format to compare with (reusedPrefixTokens), and with turnId records the result on the turn.",
    args: { input: t.arg({ type: AssembleContextInput, required: true }) },
    resolve: (_, { input }, ctx) =>
      ctx.assembly.assemble(
        ctx.workspaceId,
        {
          ...input,
          sessionId: parseGlobalId(String(input.sessionId), 'Session', 'sessionId'),
          turnId: input.turnId ? parseGlobalId(String(input.turnId), 'Turn', 'turnId') : null,
          attachmentReferenceId: (id) => toGlobalId('Attachment', id),
        },
        String(input.sessionId),
      ),
  }),
);
