/** The GENERIC payload: stored ids, names and texts as they are (framing and rules: formats.ts). */
import { pieceOf, toolArgumentsValue } from './payload-pieces.js';
import type { AssembledMessage } from './types.js';

export type GenericPart =
  | { type: 'text'; text: string }
  | { type: 'toolCall'; callId: string; name: string; arguments: unknown }
  | { type: 'toolResult'; callId: string; content: string; isError: boolean };
export interface GenericPayload {
  messages: Array<{ role: 'system' | 'user' | 'assistant' | 'tool'; parts: GenericPart[] }>;
}

function genericMessageOf(m: AssembledMessage): GenericPayload['messages'][number] {
  return {
    parts: m.parts.map((p): GenericPart => {
      switch (p.type) {
        case 'text':
          return { text: p.text, type: 'text' };
        case 'toolCall':
          return { arguments: toolArgumentsValue(p), callId: p.callId, name: p.name, type: 'toolCall' };
        case 'toolResult':
          return { callId: p.callId, content: p.content, isError: p.isError, type: 'toolResult' };
      }
    }),
    role: m.role.toLowerCase() as 'system' | 'user' | 'assistant' | 'tool',
  };
}

export function toGeneric(messages: readonly AssembledMessage[]): GenericPayload {
  return { messages: messages.map((m) => pieceOf('GENERIC', m, genericMessageOf)) };
}
