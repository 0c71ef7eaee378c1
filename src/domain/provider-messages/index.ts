/** Provider payloads read into messages (`appendProviderMessages`): one reader per format and side. */
import { badInput } from '../errors.js';
import type { ContextFormat } from '../assembly/types.js';
import { readAnthropicMessages, readAnthropicResponse } from './anthropic.js';
import type { ProviderRead } from './common.js';
import { readGeminiContents, readGeminiResponse } from './gemini.js';
import { readChatMessages, readChatResponse } from './openai-chat.js';
import { readResponsesInput, readResponsesResponse } from './openai-responses.js';

export type { ProviderRead, ProviderUsage } from './common.js';

/**
 * The messages of `format`'s request items (`messages`) or of its provider's response
 * (`response`); `where` names the argument in errors.
 */
export function readProviderPayload(format: ContextFormat, side: 'messages' | 'response', value: unknown, where: string): ProviderRead {
  switch (format) {
    case 'OPENAI_CHAT':
      return side === 'messages' ? readChatMessages(value, where) : readChatResponse(value, where);
    case 'OPENAI_RESPONSES':
      return side === 'messages' ? readResponsesInput(value, where) : readResponsesResponse(value, where);
    case 'ANTHROPIC_MESSAGES':
      return side === 'messages' ? readAnthropicMessages(value, where) : readAnthropicResponse(value, where);
    case 'GEMINI':
      return side === 'messages' ? readGeminiContents(value, where) : readGeminiResponse(value, where);
    case 'GENERIC':
      throw badInput("format GENERIC is no provider's shape: append its messages with appendMessages.");
  }
}
