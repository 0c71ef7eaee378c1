/**
 * Provider payload shapes and the framing overhead counted for each.
 *
 * FRAMING RULES (tokens added to content tokens; content = stored counts, or fresh counts for
 * stubs, blocks and attachments, in the requested encoding; a tool call's content is its name and
 * its arguments text, counted apart, a tool result's its content):
 *
 * OPENAI_CHAT (exact for text): OpenAI's ChatML rendering, as gpt-tokenizer's `encodeChat` does it
 *   for gpt-4 / gpt-4o (cl100k / o200k): every payload message is
 *   `<|im_start|>` + role + `<|im_sep|>` + content + `<|im_end|>`, i.e. 4 tokens + content (every
 *   role name, system/user/assistant/tool, is one token in both encodings; the message separator is
 *   empty), and the request ends with the reply priming `<|im_start|>assistant<|im_sep|>` = 3 tokens.
 *   For text-only conversations the total equals `encodeChat(payload.messages, model).length`
 *   (a test checks it). Tool traffic follows OpenAI's published approximation (the one in
 *   gpt-tokenizer's `countChatCompletionTokens`, `countMessageTokens`): each tool call costs its
 *   name's tokens plus its arguments text's tokens, counted apart, plus 3 tokens of call metadata;
 *   the arguments text is the one the payload sends (`function.arguments`): the stored
 *   `argumentsJson`, byte for byte as the client gave it (see domain/parts.ts), so the count is
 *   that of the exact payload whatever the JSON (key order, escapes, `1.0`, `1e3`, nesting). So for
 *   OPENAI_CHAT, every message's `tokenCount` is the count of the payload messages it gives and
 *   `tokenCount` their total plus the reply priming (the property test checks it with js-tiktoken);
 *   each tool result part is its own `role: "tool"` payload message
 *   (4 tokens + content; the tool_call_id is not counted). A TOOL message's non-result parts become
 *   one extra `user` message (4 more). A message whose content is several parts (text plus
 *   attachments) is sent as an array of text parts and counted as the sum of its parts. A tool
 *   name the format maps (provider-rules.ts) is counted as sent.
 *
 * OPENAI_RESPONSES: the same model renders the same ChatML, so it is counted exactly as
 *   OPENAI_CHAT (the two totals agree): a message item is 4 tokens + content (exact for text, as
 *   above); OpenAI publishes no framing for `function_call` and `function_call_output` items, so
 *   they are counted as their Chat Completions equivalents are (an assistant's calls: 4 for the
 *   calling message, whether or not it has text, plus name, arguments and 3 per call; each output
 *   4 + content; `call_id` not counted), the published approximation for tool traffic.
 *
 * GENERIC: counted exactly as OPENAI_CHAT (what a ChatML model sees), so the two totals agree.
 *
 * ANTHROPIC_MESSAGES (an estimate: Claude's tokenizer is not public, the chosen encoding stands in):
 *   every assembled message (system prompt, summary, SYSTEM messages, user, assistant, tool) costs
 *   4 tokens of framing, each tool_use block and each tool_result block 3 more, and the request
 *   3 (reply priming). Merging consecutive same-role messages is not credited back.
 *
 * GEMINI (content only): Gemini's tokenizer and its request framing are not published (its
 *   countTokens endpoint is the only exact count), so nothing is added for framing, for the reply
 *   or for the JSON keys of function parts: the count is the content in the chosen encoding (texts,
 *   each call's name and arguments text, each result's content; the call name a functionResponse
 *   repeats is not counted; a whitespace-only text part the payload leaves out is still counted, a
 *   few tokens over at most). Reply priming is 0.
 *
 * CHARS_DIV_4 uses the same structure with the same constants; only content is counted as
 * ceil(code points / 4).
 *
 * MEDIA (images and PDFs sent as the provider's own blocks, attachments.ts and media-rules.ts) count
 * their provider's published rule (media-tokens.ts) as content, whatever the encoding, and nothing
 * of their base64. In a message they are parts like texts (one content array, no framing of their
 * own), except in a TOOL message of OPENAI_RESPONSES, where they travel inside a result's output and
 * so do not make the extra user message a TOOL message's other parts make.
 *
 * PAYLOAD SHAPES
 * OPENAI_CHAT: `{ messages }` in Chat Completions form: system prompt, summary and SYSTEM messages
 *   as `{role:'system', content}`; user (and the turn-context block) `{role:'user', content}`;
 *   assistant `{role:'assistant', content: text|null, tool_calls:[{id, type:'function',
 *   function:{name, arguments: the stored arguments text}}]}`; one `{role:'tool', tool_call_id, content}` per
 *   result. `content` is a string, or an array of `{type:'text', text}` when a message has several
 *   text parts (text plus attachment blocks).
 * OPENAI_RESPONSES: `{ input }`, the Responses API's input items in conversation order: messages as
 *   `{type:'message', role, content}` (content a string, or an array of `{type:'input_text', text}`,
 *   `output_text` for the assistant, when a message has several text parts); an assistant's calls
 *   as `{type:'function_call', call_id, name, arguments: the stored arguments text}` items after
 *   its text; each result as `{type:'function_call_output', call_id, output}` after its call (the
 *   API has no error flag: an error result is sent as its content). The system prompt, the summary
 *   and SYSTEM messages are `{type:'message', role:'system'}` items where they stand, not
 *   `instructions`: a SYSTEM message in the middle of a conversation keeps its place, several system
 *   blocks need no joining (which would change what is counted), and items are what the API keeps
 *   when responses are chained (`instructions` are not carried over by `previous_response_id`).
 * ANTHROPIC_MESSAGES: `{ system?, messages }`: `system` joins the system prompt, the summary and
 *   SYSTEM-role messages with blank lines; messages hold content blocks (`text`, `tool_use` with
 *   `input` the arguments text parsed (keys in the client's order), an object: non-object
 *   arguments are wrapped as `{ value }`, `tool_result` with
 *   `is_error: true` when set); TOOL messages become `user` messages of tool_result blocks; empty
 *   text blocks are left out (the API rejects them); consecutive same-role messages are merged, so
 *   roles alternate and tool_result blocks sit first in the user message right after the tool_use.
 *   The first message is always a user turn: when the kept conversation would start with an
 *   assistant turn, a short placeholder user turn (`LEADING_USER_TEXT`) goes first. Cache
 *   breakpoints (`cache_control: { type: "ephemeral" }`, cache-breakpoints.ts) go on the last block
 *   of the messages where a prompt cache pays, and on `system`, then sent as one text block.
 * GEMINI: `{ systemInstruction?, contents }` (generateContent): `systemInstruction` is
 *   `{ parts: [{ text }] }`, one part per system prompt, summary and SYSTEM message text;
 *   `contents` are `{ role: 'user'|'model', parts }` with parts `{ text }`, `{ functionCall: { name,
 *   args } }` (args the arguments object, as Anthropic's `input`) and `{ functionResponse: { name,
 *   response } }` (name: the name of the call it answers, as sent; response `{ output: content }`,
 *   or `{ error: content }` for an error result, the keys Gemini documents). TOOL messages are user
 *   turns; consecutive same-role turns are merged, so roles alternate, and the function responses
 *   of a round come first in the user turn right after the model turn that called, in the order of
 *   the calls. Empty and whitespace-only text parts are left out; the first turn is a user turn, as
 *   for Anthropic (the summary, else `LEADING_USER_TEXT`).
 * TOOLS: with `includeAttachmentTool`, each shape above also has `tools` (the read_attachment
 *   definition in the provider's shape; attachment-tool.ts has the shapes and how they are counted).
 * GENERIC: `{ messages: [{ role: 'system'|'user'|'assistant'|'tool', parts }] }` with parts
 *   `{type:'text', text}`, `{type:'toolCall', callId, name, arguments}`,
 *   `{type:'toolResult', callId, content, isError}`, `{type:'media', attachmentId, name, mimeType,
 *   source}` (source `{type:'base64', data}`, `{type:'url', url}` or `{type:'providerFile',
 *   provider, fileId}`), in any role.
 * MEDIA in each shape (where media-rules.ts lets the format send them; the parts' order is kept):
 *   OPENAI_CHAT, user content: an image as `{type:'image_url', image_url:{url, detail:'auto'}}`
 *   (url a `data:` URL or the https URL), a PDF as `{type:'file', file:{file_data: data URL,
 *   filename}}` or `{type:'file', file:{file_id}}`. OPENAI_RESPONSES, user content and a tool
 *   result's output: `{type:'input_image', detail:'auto', image_url | file_id}`, `{type:'input_file',
 *   file_data + filename | file_url | file_id}`; a result with media sends its `output` as a list,
 *   its content first as `input_text`. ANTHROPIC_MESSAGES, user content and a tool_result's content:
 *   `{type:'image', source}` and `{type:'document', source, title: name}`, source `{type:'base64',
 *   media_type, data}`, `{type:'url', url}` or `{type:'file', file_id}` (Files API: the decision
 *   says the request needs the files-api-2025-04-14 beta header); a tool_result with media sends its
 *   content as blocks, its text first. GEMINI, user parts: `{inlineData:{mimeType, data}}` or
 *   `{fileData:{mimeType, fileUri}}` (an https URL, or a Files API file's URI). A TOOL message's
 *   media go in the result before them in the message (the first result when none is before).
 *
 * PROVIDER RULES (every provider payload satisfies them for any stored session; each is tested in
 * test/unit/assembly/provider-rules.test.ts, and on generated sessions by the property test):
 * - Anthropic and Gemini: the first message is a user turn and the message list is never empty.
 *   Decision: map. The summary is that user turn when the kept conversation has none first (it is
 *   counted the same either way); without a summary, the placeholder `LEADING_USER_TEXT` is. A
 *   user message that sends no content block (empty or whitespace-only text) is not a user turn for
 *   this rule.
 * - Anthropic and Gemini: text blocks must contain text (Anthropic: non-whitespace text). Decision:
 *   map. Whitespace-only text parts are left out of the payload (the message's decision says so);
 *   a message left with no block is left out of the payload.
 * - Anthropic: final assistant content must not end with whitespace. Decision: map. The trailing
 *   whitespace of the payload's last text block is trimmed when the last message is the
 *   assistant's (its decision says so).
 * - Gemini: roles alternate; a turn of function calls follows a user turn, and the next turn holds
 *   exactly one function response per call. Decision: map (merging, ordering; the tool-pair
 *   invariant keeps every round whole).
 * - Anthropic and OpenAI: tool call ids unique within the request. Decision: map. A call id used by
 *   an earlier call of the context is sent with the first suffix (`_2`, `_3`, …) still free, in its call and
 *   its round's results (its decision says so). Refusing at write time would refuse what models
 *   do (ids restart per response for some of them), and forks would make it a history-wide query.
 * - Call ids and tool names are stored as sent (any text without control characters, at most 256
 *   characters; domain/parts.ts). Anthropic `tool_use.id` must match ^[a-zA-Z0-9_-]+$; Chat
 *   Completions ids are at most 40 characters; names must match ^[a-zA-Z0-9_-]{1,64}$ (Anthropic
 *   and both OpenAI APIs); Gemini names start with a letter or _ and hold up to 64 letters, digits,
 *   _ . : or -. Decision: map (provider-rules.ts, `IDENTIFIER_RULES`), deterministically and
 *   collision-free, stated in the decision and listed in `toolMappings`.
 * GENERIC is no provider's shape: it sends the stored ids, names and texts as they are.
 *
 * Payload objects are built with their keys in sorted order (the canonical order the hash uses), so
 * hashing a large payload walks it without copying; providers do not care about key order.
 *
 * A message whose parts are immutable (a finished message's stored parts: see `markImmutable`)
 * always gives the same payload piece in a format, so the piece is built once, sealed (frozen, its
 * canonical JSON kept for the hash) and reused by every later payload. Sealed pieces are never
 * changed: merging Anthropic and Gemini turns copies.
 */
import type { MessageRole } from '../types.js';
import type { CacheBreakpoints } from './cache-breakpoints.js';
import { toAnthropicMessages } from './payload-anthropic.js';
import { toGemini } from './payload-gemini.js';
import { toGeneric } from './payload-generic.js';
import { toOpenAiChat, toOpenAiResponses } from './payload-openai.js';
import type { AssembledMessage, ContextFormat } from './types.js';

/**
 * ANTHROPIC_MESSAGES requires the first message to be a user turn; when the kept conversation would
 * start with an assistant turn (a cut or a compaction boundary before an assistant message), this
 * text is sent first as a user turn (a synthetic block: kind `system`, role USER), counted and
 * fitted like any block.
 */
export const LEADING_USER_TEXT = '(Earlier messages of this conversation are not included.)';

export const MESSAGE_FRAMING_TOKENS = 4;
export const REPLY_PRIMING_TOKENS = 3;
export const TOOL_CALL_FRAMING_TOKENS = 3;
export const ANTHROPIC_TOOL_RESULT_FRAMING_TOKENS = 3;

/** Framing tokens of one message with these parts (only part types are looked at). */
export function framingTokens(format: ContextFormat, role: MessageRole, parts: ReadonlyArray<{ type: string }>): number {
  let calls = 0;
  let results = 0;
  let others = 0;
  for (const part of parts) {
    if (part.type === 'toolCall') calls++;
    else if (part.type === 'toolResult') results++;
    else others++;
  }
  return framingTokensFor(format, role, calls, results, others);
}

/** Tokens of the reply priming the request ends with (0 for GEMINI: content only). */
export const replyPrimingTokens = (format: ContextFormat) => (format === 'GEMINI' ? 0 : REPLY_PRIMING_TOKENS);

/** Framing tokens from part counts (a message's `ToolShape` has them). */
export function framingTokensFor(format: ContextFormat, role: MessageRole, calls: number, results: number, others: number): number {
  if (format === 'GEMINI') return 0;
  if (format === 'ANTHROPIC_MESSAGES') {
    return MESSAGE_FRAMING_TOKENS + TOOL_CALL_FRAMING_TOKENS * calls + ANTHROPIC_TOOL_RESULT_FRAMING_TOKENS * results;
  }
  if (role === 'TOOL' && results > 0) {
    return MESSAGE_FRAMING_TOKENS * results + (others > 0 ? MESSAGE_FRAMING_TOKENS : 0);
  }
  return MESSAGE_FRAMING_TOKENS + TOOL_CALL_FRAMING_TOKENS * calls;
}

/**
 * The payload of `messages` in `format`; with `tools` (a list already in the format's wire shape,
 * see attachment-tool.ts) the payload also has a `tools` key, its other keys unchanged.
 * `breakpoints`: ANTHROPIC_MESSAGES's cache_control marks (cache-breakpoints.ts).
 */
export function buildPayload(
  format: ContextFormat,
  messages: readonly AssembledMessage[],
  tools?: readonly object[],
  breakpoints?: CacheBreakpoints,
): unknown {
  let payload: object;
  switch (format) {
    case 'OPENAI_CHAT':
      payload = toOpenAiChat(messages);
      break;
    case 'ANTHROPIC_MESSAGES':
      payload = toAnthropicMessages(messages, breakpoints);
      break;
    case 'GENERIC':
      payload = toGeneric(messages);
      break;
    case 'OPENAI_RESPONSES':
      payload = toOpenAiResponses(messages);
      break;
    case 'GEMINI':
      payload = toGemini(messages);
      break;
  }
  // `tools` sorts after `contents`, `input`, `messages`, `system` and `systemInstruction`: the keys stay in canonical order.
  return tools && tools.length > 0 ? { ...payload, tools } : payload;
}
