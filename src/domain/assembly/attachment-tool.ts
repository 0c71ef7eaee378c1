/**
 * The read_attachment tool: its definition in each payload shape and the tokens it costs.
 *
 * With `includeAttachmentTool: true` the payload carries the definition next to the messages, as
 * the provider's request body does: `payload.tools` (the other keys are unchanged, so a client
 * reading `payload.messages` or `payload.system` reads what it read before).
 *   OPENAI_CHAT        `tools: [{ type: 'function', function: { name, description, parameters } }]`
 *   ANTHROPIC_MESSAGES `tools: [{ name, description, input_schema }]`
 *   OPENAI_RESPONSES   `tools: [{ type: 'function', name, description, parameters, strict: false }]`
 *                      (the Responses API's flat shape; `strict` defaults to true there, which would
 *                      require every property, and offset and length are optional)
 *   GEMINI             `tools: [{ functionDeclarations: [{ name, description, parameters }] }]`
 *                      (the schema without `additionalProperties`, which Gemini's schema subset lacks)
 *   GENERIC            `tools: [{ name, description, parameters }]` (the neutral shape most SDKs
 *                      take; the JSON Schema is the same in all of them)
 * The agent runs the tool by querying `attachment(id) { content(offset, length) { … } }`; this
 * module also holds that read's contract (its bounds, `validateAttachmentRead`, `attachmentPage`)
 * and the reference block REFERENCE mode sends in place of the content.
 *
 * TOKENS (the definitions are sent, so they are counted: in `toolTokenCount`, in `tokenCount`, and
 * as a fixed block in the maxTokens budget, like the system prompt):
 *   OPENAI_CHAT, OPENAI_RESPONSES and GENERIC: OpenAI's published approximation (the OpenAI cookbook's
 *     `num_tokens_for_tools`, which the API matches for gpt-4o): per function 7 (o200k) or 10
 *     (cl100k), plus the tokens of `name:description` (trailing period dropped), plus 3 when it has
 *     properties, plus per property 3 and the tokens of `key:type:description` (trailing period
 *     dropped; this tool has no enums); plus 12 once for the tool list.
 *   ANTHROPIC_MESSAGES (an estimate, as every Anthropic count here): the tool-use system prompt
 *     Anthropic documents for tool_choice auto (346 tokens) plus the tokens of each definition's
 *     canonical JSON.
 *   GEMINI (content only, as every Gemini count here): the tokens of the declaration's canonical JSON.
 *   CHARS_DIV_4: the same structure, text counted as ceil(code points / 4).
 */
import { countTokens } from '../tokens.js';
import type { TokenEncoding } from '../types.js';
import { badInput } from '../errors.js';
import { countCodePoints } from '../tokens.js';
import { escapeXmlAttribute } from './attachment-text.js';
import { canonicalJson, seal } from './hash.js';
import type { ContextFormat } from './types.js';

/** Characters read_attachment returns when no length is given. */
export const ATTACHMENT_READ_DEFAULT_CHARS = 16_384;
/** Characters read_attachment returns at most per call (a larger length is refused). */
export const ATTACHMENT_READ_MAX_CHARS = 65_536;

/** Characters of attachment content one request may ask for in all (the sum of its reads' lengths). */
export const ATTACHMENT_READ_REQUEST_CHARS = 1_048_576;

export const READ_ATTACHMENT_TOOL_NAME = 'read_attachment';

interface JsonSchemaProperty {
  type: 'string' | 'integer';
  description: string;
  minimum?: number;
  maximum?: number;
}

/** The tool, provider-neutral. Keys are in canonical (sorted) order, as every payload object is. */
export const READ_ATTACHMENT_TOOL = {
  description:
    'Reads the text of a file attached to the conversation and shown as an <attachment_ref> block, one page at a time. ' +
    'Returns up to `length` characters from `offset`, the total length in characters, and the offset of the next page when more follows.',
  name: READ_ATTACHMENT_TOOL_NAME,
  parameters: {
    additionalProperties: false,
    properties: {
      id: { description: 'The id attribute of the <attachment_ref> block.', type: 'string' },
      length: {
        description: `Characters to read, at most ${ATTACHMENT_READ_MAX_CHARS} (default ${ATTACHMENT_READ_DEFAULT_CHARS}).`,
        maximum: ATTACHMENT_READ_MAX_CHARS,
        minimum: 1,
        type: 'integer',
      },
      offset: { description: 'Characters to skip from the start of the file (default 0).', minimum: 0, type: 'integer' },
    } satisfies Record<string, JsonSchemaProperty>,
    required: ['id'],
    type: 'object',
  },
} as const;

export type OpenAiTool = { function: { description: string; name: string; parameters: object }; type: 'function' };
export type AnthropicTool = { description: string; input_schema: object; name: string };
export type GenericTool = { description: string; name: string; parameters: object };
export type OpenAiResponsesTool = { description: string; name: string; parameters: object; strict: false; type: 'function' };
export type GeminiTool = { functionDeclarations: GenericTool[] };

const definitions: Record<ContextFormat, readonly object[]> = {
  OPENAI_CHAT: [
    {
      function: {
        description: READ_ATTACHMENT_TOOL.description,
        name: READ_ATTACHMENT_TOOL.name,
        parameters: READ_ATTACHMENT_TOOL.parameters,
      },
      type: 'function',
    } satisfies OpenAiTool,
  ],
  ANTHROPIC_MESSAGES: [
    {
      description: READ_ATTACHMENT_TOOL.description,
      input_schema: READ_ATTACHMENT_TOOL.parameters,
      name: READ_ATTACHMENT_TOOL.name,
    } satisfies AnthropicTool,
  ],
  OPENAI_RESPONSES: [
    {
      description: READ_ATTACHMENT_TOOL.description,
      name: READ_ATTACHMENT_TOOL.name,
      parameters: READ_ATTACHMENT_TOOL.parameters,
      strict: false,
      type: 'function',
    } satisfies OpenAiResponsesTool,
  ],
  GEMINI: [
    {
      functionDeclarations: [
        {
          description: READ_ATTACHMENT_TOOL.description,
          name: READ_ATTACHMENT_TOOL.name,
          parameters: (({ additionalProperties: _, ...rest }) => rest)(READ_ATTACHMENT_TOOL.parameters),
        },
      ],
    } satisfies GeminiTool,
  ],
  GENERIC: [
    {
      description: READ_ATTACHMENT_TOOL.description,
      name: READ_ATTACHMENT_TOOL.name,
      parameters: READ_ATTACHMENT_TOOL.parameters,
    } satisfies GenericTool,
  ],
};
for (const list of Object.values(definitions)) seal(list);

/** The `tools` list of the payload in `format` (sealed: reused by every payload, never changed). */
export function attachmentToolDefinitions(format: ContextFormat): readonly object[] {
  return definitions[format];
}

/** Anthropic's tool-use system prompt for tool_choice auto (Claude 4 family, per its tool-use pricing docs). */
export const ANTHROPIC_TOOL_SYSTEM_PROMPT_TOKENS = 346;
const OPENAI_FUNCTION_INIT: Record<TokenEncoding, number> = { O200K_BASE: 7, CL100K_BASE: 10, CHARS_DIV_4: 7 };
const OPENAI_PROPERTIES_INIT = 3;
const OPENAI_PROPERTY_KEY = 3;
const OPENAI_FUNCTIONS_END = 12;

const dropPeriod = (text: string) => (text.endsWith('.') ? text.slice(0, -1) : text);

/** OpenAI's approximation for a list of function tools (see the file comment). */
export function openAiToolTokens(
  tools: ReadonlyArray<{ name: string; description: string; parameters: { properties: Record<string, JsonSchemaProperty> } }>,
  encoding: TokenEncoding,
): number {
  if (tools.length === 0) return 0;
  let tokens = OPENAI_FUNCTIONS_END;
  for (const tool of tools) {
    tokens += OPENAI_FUNCTION_INIT[encoding] + countTokens(`${tool.name}:${dropPeriod(tool.description)}`, encoding);
    const properties = Object.entries(tool.parameters.properties);
    if (properties.length > 0) tokens += OPENAI_PROPERTIES_INIT;
    for (const [key, property] of properties) {
      tokens += OPENAI_PROPERTY_KEY + countTokens(`${key}:${property.type}:${dropPeriod(property.description)}`, encoding);
    }
  }
  return tokens;
}

const memo = new Map<string, number>();

/** Tokens the read_attachment definition costs in `format` and `encoding` (computed once). */
export function attachmentToolTokens(format: ContextFormat, encoding: TokenEncoding): number {
  const key = `${format}/${encoding}`;
  let tokens = memo.get(key);
  if (tokens === undefined) {
    tokens =
      format === 'ANTHROPIC_MESSAGES'
        ? ANTHROPIC_TOOL_SYSTEM_PROMPT_TOKENS + definitions[format].reduce((sum, d) => sum + countTokens(canonicalJson(d), encoding), 0)
        : format === 'GEMINI'
          ? definitions[format].reduce((sum, d) => sum + countTokens(canonicalJson(d), encoding), 0)
          : openAiToolTokens([READ_ATTACHMENT_TOOL], encoding);
    memo.set(key, tokens);
  }
  return tokens;
}

/** What a reference block says of an attachment. */
export interface AttachmentReference {
  /** The client's opaque ID (what read_attachment takes). */
  id: string;
  name: string;
  mimeType: string;
  /** Stored size in bytes (UTF-8). */
  size: number;
  /** Length in Unicode code points (the unit of read_attachment's offset and length). */
  chars: number;
}

export function renderAttachmentReference(ref: AttachmentReference): string {
  const attrs =
    `id="${escapeXmlAttribute(ref.id)}" name="${escapeXmlAttribute(ref.name)}" mime="${escapeXmlAttribute(ref.mimeType)}"` +
    ` bytes="${ref.size}" chars="${ref.chars}"`;
  return (
    `<attachment_ref ${attrs}>\n` +
    `Not inlined. To read it, call read_attachment with this id, an offset and a length (in characters, at most ${ATTACHMENT_READ_MAX_CHARS} per call).\n` +
    `</attachment_ref>`
  );
}

/** A read of an attachment's text: where it starts and how many characters (code points) at most. */
export interface AttachmentRead {
  offset: number;
  length: number;
}

/**
 * Checks read_attachment's (and `Attachment.content`'s) arguments: offset >= 0 (default 0), length
 * 1..ATTACHMENT_READ_MAX_CHARS (default ATTACHMENT_READ_DEFAULT_CHARS). BAD_USER_INPUT otherwise.
 */
export function validateAttachmentRead(offset: number | null | undefined, length: number | null | undefined): AttachmentRead {
  const at = offset ?? 0;
  const size = length ?? ATTACHMENT_READ_DEFAULT_CHARS;
  if (!Number.isInteger(at) || at < 0) throw badInput(`offset must be an integer of at least 0 (characters from the start), got ${at}.`);
  if (!Number.isInteger(size) || size < 1 || size > ATTACHMENT_READ_MAX_CHARS) {
    throw badInput(
      `length must be an integer from 1 to ${ATTACHMENT_READ_MAX_CHARS} (characters), got ${size}; read longer text in several pages.`,
    );
  }
  return { offset: at, length: size };
}

/** One slice of an attachment's text (what one read_attachment call returns). */
export interface AttachmentPage {
  offset: number;
  /** Characters (code points) in `text`. */
  length: number;
  text: string;
  /** Characters (code points) of the whole text. */
  totalLength: number;
  hasMore: boolean;
  /** Where the next page starts; null at the end. */
  nextOffset: number | null;
}

/**
 * The page a read returned (`text`: the code points [offset, offset + length) of a text of
 * `totalLength`). An offset past the end is refused (BAD_USER_INPUT naming `attachmentLabel`);
 * an offset at the end gives an empty last page.
 */
export function attachmentPage(read: AttachmentRead, text: string, totalLength: number, attachmentLabel: string): AttachmentPage {
  if (read.offset > totalLength) {
    throw badInput(
      `offset ${read.offset} is past the end of attachment ${attachmentLabel}, which has ${totalLength} characters: use an offset from 0 to ${totalLength}.`,
    );
  }
  const length = countCodePoints(text);
  const end = read.offset + length;
  return { offset: read.offset, length, text, totalLength, hasMore: end < totalLength, nextOffset: end < totalLength ? end : null };
}
