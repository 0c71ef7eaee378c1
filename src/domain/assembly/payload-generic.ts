/** The GENERIC payload: stored ids, names and texts as they are (framing and rules: formats.ts). */
import { hashedByIdentity, pieceOf, toolArgumentsValue } from './payload-pieces.js';
import type { AssembledMessage, MediaPart } from './types.js';

type WithMetadata = { providerMetadata?: Record<string, unknown> };
export type GenericPart = (
  | { type: 'text'; text: string }
  | { type: 'toolCall'; callId: string; name: string; arguments: unknown }
  | { type: 'toolResult'; callId: string; content: string; isError: boolean }
  | { type: 'reasoning'; text: string; redacted: boolean }
  | { type: 'providerPart'; provider: string; data: unknown; format?: string }
  | { type: 'media'; attachmentId: string; name: string; mimeType: string; source: MediaPart['source'] }
) &
  WithMetadata;

/** The part's provider metadata, when it has some: GENERIC carries every part with everything stored. */
const withMetadata = <T extends object>(part: T, p: WithMetadata): T & WithMetadata =>
  p.providerMetadata === undefined ? part : { ...part, providerMetadata: p.providerMetadata };
export interface GenericPayload {
  messages: Array<{ role: 'system' | 'user' | 'assistant' | 'tool'; parts: GenericPart[] }>;
}

function genericMessageOf(m: AssembledMessage): GenericPayload['messages'][number] {
  return {
    parts: m.parts.map((p): GenericPart => {
      switch (p.type) {
        case 'text':
          return withMetadata({ text: p.text, type: 'text' as const }, p);
        case 'toolCall':
          return withMetadata({ arguments: toolArgumentsValue(p), callId: p.callId, name: p.name, type: 'toolCall' as const }, p);
        case 'toolResult':
          return withMetadata({ callId: p.callId, content: p.content, isError: p.isError, type: 'toolResult' as const }, p);
        case 'reasoning':
          return withMetadata({ redacted: p.redacted, text: p.text, type: 'reasoning' as const }, p);
        case 'providerPart': {
          const part = { data: p.data, provider: p.provider, type: 'providerPart' as const };
          return withMetadata(p.format === undefined ? part : { ...part, format: p.format }, p);
        }
        case 'media': {
          const source =
            p.source.type === 'base64' ? hashedByIdentity({ data: p.source.data, type: 'base64' as const }, 'data', p) : p.source;
          return withMetadata({ attachmentId: p.attachmentId, mimeType: p.mimeType, name: p.name, source, type: 'media' as const }, p);
        }
      }
    }),
    role: m.role.toLowerCase() as 'system' | 'user' | 'assistant' | 'tool',
  };
}

export function toGeneric(messages: readonly AssembledMessage[]): GenericPayload {
  return { messages: messages.map((m) => pieceOf('GENERIC', m, genericMessageOf)) };
}
