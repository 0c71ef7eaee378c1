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
 * The agent runs the tool by querying `attachment(id) { content(offset, length) { … } }`.
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
import { ATTACHMENT_READ_DEFAULT_CHARS, ATTACHMENT_READ_MAX_CHARS } from './attachments.js';
import { canonicalJson, seal } from './hash.js';
import type { ContextFormat } from './types.js';

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
