/** The OpenAI payloads: Chat Completions `messages` and Responses `input` (framing and rules: formats.ts). */
import { markImmutable } from '../immutable.js';
import { toolArgumentsText } from '../tokens.js';
import { seal } from './hash.js';
import { pieceOf, textsOf } from './payload-pieces.js';
import type { AssembledMessage } from './types.js';

export type OpenAiContent = string | Array<{ type: 'text'; text: string }>;
export type OpenAiMessage =
  | { role: 'system' | 'user'; content: OpenAiContent }
  | {
      role: 'assistant';
      content: OpenAiContent | null;
      tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
    }
  | { role: 'tool'; tool_call_id: string; content: string };
export interface OpenAiChatPayload {
  messages: OpenAiMessage[];
}

function openAiContent(texts: string[]): OpenAiContent {
  if (texts.length === 0) return '';
  if (texts.length === 1) return texts[0];
  return texts.map((text) => ({ text, type: 'text' as const }));
}

/** The Chat Completions messages of one assembled message (a TOOL message gives one per result). */
function openAiMessagesOf(m: AssembledMessage): OpenAiMessage[] {
  switch (m.role) {
    case 'SYSTEM':
      return [{ content: openAiContent(textsOf(m.parts)), role: 'system' }];
    case 'USER':
      return [{ content: openAiContent(textsOf(m.parts)), role: 'user' }];
    case 'ASSISTANT': {
      const texts = textsOf(m.parts);
      const calls: NonNullable<Extract<OpenAiMessage, { role: 'assistant' }>['tool_calls']> = [];
      for (const p of m.parts) {
        if (p.type === 'toolCall') {
          calls.push({ function: { arguments: toolArgumentsText(p), name: p.name }, id: p.callId, type: 'function' });
        }
      }
      if (calls.length === 0) return [{ content: openAiContent(texts), role: 'assistant' }];
      return [{ content: texts.length === 0 ? null : openAiContent(texts), role: 'assistant', tool_calls: calls }];
    }
    case 'TOOL': {
      const out: OpenAiMessage[] = [];
      for (const p of m.parts) {
        if (p.type === 'toolResult') out.push({ content: p.content, role: 'tool', tool_call_id: p.callId });
      }
      const texts = textsOf(m.parts);
      if (texts.length > 0) out.push({ content: openAiContent(texts), role: 'user' });
      return out;
    }
  }
}

export function toOpenAiChat(messages: readonly AssembledMessage[]): OpenAiChatPayload {
  const out: OpenAiMessage[] = [];
  for (const m of messages) {
    // The messages go into the payload one by one: each is sealed.
    const piece = pieceOf('OPENAI_CHAT', m, openAiMessagesOf, (list) => markImmutable(list.map(seal)));
    for (let i = 0; i < piece.length; i++) out.push(piece[i]);
  }
  return { messages: out };
}

// ---------------------------------------------------------------- OpenAI Responses

export type ResponsesText = { type: 'input_text' | 'output_text'; text: string };
export type ResponsesItem =
  | { type: 'message'; role: 'system' | 'user' | 'assistant'; content: string | ResponsesText[] }
  | { type: 'function_call'; call_id: string; name: string; arguments: string }
  | { type: 'function_call_output'; call_id: string; output: string };
export interface OpenAiResponsesPayload {
  input: ResponsesItem[];
}

function responsesMessage(role: 'system' | 'user' | 'assistant', texts: string[]): ResponsesItem {
  const type = role === 'assistant' ? ('output_text' as const) : ('input_text' as const);
  const content = texts.length === 0 ? '' : texts.length === 1 ? texts[0] : texts.map((text) => ({ text, type }));
  return { content, role, type: 'message' };
}

/** The Responses input items of one assembled message (calls and results are items of their own). */
function responsesItemsOf(m: AssembledMessage): ResponsesItem[] {
  const texts = textsOf(m.parts);
  switch (m.role) {
    case 'SYSTEM':
      return [responsesMessage('system', texts)];
    case 'USER':
      return [responsesMessage('user', texts)];
    case 'ASSISTANT': {
      const out: ResponsesItem[] = [];
      const hasCalls = m.parts.some((p) => p.type === 'toolCall');
      if (texts.length > 0 || !hasCalls) out.push(responsesMessage('assistant', texts));
      for (const p of m.parts) {
        if (p.type === 'toolCall') out.push({ arguments: toolArgumentsText(p), call_id: p.callId, name: p.name, type: 'function_call' });
      }
      return out;
    }
    case 'TOOL': {
      const out: ResponsesItem[] = [];
      for (const p of m.parts) {
        if (p.type === 'toolResult') out.push({ call_id: p.callId, output: p.content, type: 'function_call_output' });
      }
      if (texts.length > 0) out.push(responsesMessage('user', texts));
      return out;
    }
  }
}

export function toOpenAiResponses(messages: readonly AssembledMessage[]): OpenAiResponsesPayload {
  const out: ResponsesItem[] = [];
  for (const m of messages) {
    const piece = pieceOf('OPENAI_RESPONSES', m, responsesItemsOf, (list) => markImmutable(list.map(seal)));
    for (let i = 0; i < piece.length; i++) out.push(piece[i]);
  }
  return { input: out };
}
