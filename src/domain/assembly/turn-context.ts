/**
 * Step 7: the turn context becomes one block right before the last user message:
 *
 *     <turn_context>{"a":1,"b":{"c":"\u003c/turn_context\u003e"}}</turn_context>
 *
 * Keys are sorted recursively (stable order, stable hash); the JSON has <, > and & written as
 * \u003c, \u003e, \u0026 (and U+2028/U+2029 escaped), which is still the same JSON but cannot close
 * the block or open a tag whatever the values hold.
 */
import { badInput } from '../errors.js';
import { canonicalJson } from './hash.js';

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** JSON safe to embed in markup: no <, >, & or line/paragraph separators outside escapes. */
export function escapeJsonForMarkup(json: string): string {
  return json.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The block's text; BAD_USER_INPUT when `turnContext` is not a plain JSON object. */
export function renderTurnContext(turnContext: unknown): string {
  if (!isPlainObject(turnContext)) {
    const what = Array.isArray(turnContext) ? 'an array' : turnContext === null ? 'null' : `a ${typeof turnContext}`;
    throw badInput(`turnContext must be a JSON object (like {"cwd": "/repo"}), not ${what}.`, { field: 'turnContext' });
  }
  let json: string;
  try {
    json = canonicalJson(turnContext);
  } catch (error) {
    throw badInput(`turnContext must be plain JSON: ${(error as Error).message}.`, { field: 'turnContext' });
  }
  return `<turn_context>${escapeJsonForMarkup(json)}</turn_context>`;
}
