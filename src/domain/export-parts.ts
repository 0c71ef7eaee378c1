/**
 * The checks on a message's stored parts in an import (domain/types.ts, `StoredPart`): each part is
 * one the server writes itself, with its fields of the right types, so that nothing imported can
 * make a later read or context assembly fail.
 */
import { badInput } from './errors.js';
import { LIMITS } from './limits.js';
import { PROVIDERS } from './types.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const FORMATS = ['OPENAI_CHAT', 'OPENAI_RESPONSES', 'ANTHROPIC_MESSAGES', 'GEMINI'];
const KINDS = ['TEXT', 'BYTES', 'URL', 'PROVIDER_FILE'];

function need(ok: boolean, where: string, what: string): void {
  if (!ok) throw badInput(`${where}: ${what}.`);
}

const isId = (v: unknown) => typeof v === 'string' && v.length > 0 && v.length <= LIMITS.idLength;
const isCount = (v: unknown) => v === undefined || (Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) < 2 ** 31);

/** Checks the parts of one message line (BAD_USER_INPUT naming the part). */
export function checkStoredParts(parts: readonly Json[]): void {
  parts.forEach((part, i) => {
    const where = `parts[${i}] (${String(part.type)})`;
    need(part.providerMetadata === undefined || isObject(part.providerMetadata), where, '"providerMetadata" must be an object');
    switch (part.type) {
      case 'text':
        need(typeof part.text === 'string', where, '"text" must be a string');
        return;
      case 'toolCall':
        need(isId(part.callId) && isId(part.name), where, '"callId" and "name" must be short strings');
        need('arguments' in part, where, 'it must have "arguments"');
        if (part.argumentsJson !== undefined) {
          need(typeof part.argumentsJson === 'string', where, '"argumentsJson" must be JSON text');
          try {
            JSON.parse(part.argumentsJson as string);
          } catch {
            need(false, where, '"argumentsJson" must be JSON text');
          }
        }
        return;
      case 'toolResult':
        need(
          isId(part.callId) && typeof part.content === 'string' && typeof part.isError === 'boolean',
          where,
          'it has "callId", "content" and "isError"',
        );
        return;
      case 'attachment':
        need(
          isId(part.attachmentId) && typeof part.name === 'string' && typeof part.mimeType === 'string',
          where,
          'it names its attachment',
        );
        need(
          isCount(part.size) && part.size !== undefined && isCount(part.width) && isCount(part.height) && isCount(part.pages),
          where,
          'sizes are integers ≥ 0',
        );
        need(part.kind === undefined || KINDS.includes(part.kind as string), where, `"kind" is one of ${KINDS.join(', ')}`);
        need(part.url === undefined || typeof part.url === 'string', where, '"url" must be a string');
        need(
          part.providerFile === undefined ||
            (isObject(part.providerFile) && isId(part.providerFile.provider) && isId(part.providerFile.fileId)),
          where,
          '"providerFile" must be { provider, fileId }',
        );
        return;
      case 'reasoning':
        need(typeof part.text === 'string' && typeof part.redacted === 'boolean', where, 'it has "text" and "redacted"');
        return;
      case 'providerPart':
        need(
          (PROVIDERS as readonly unknown[]).includes(part.provider) && isObject(part.data),
          where,
          `it has a "provider" (${PROVIDERS.join(', ')}) and its "data"`,
        );
        need(part.format === undefined || FORMATS.includes(part.format as string), where, `"format" is one of ${FORMATS.join(', ')}`);
        return;
      default:
        need(false, where, 'not a part type (text, toolCall, toolResult, attachment, reasoning, providerPart)');
    }
  });
}
