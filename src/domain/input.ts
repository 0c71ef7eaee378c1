import { badInput } from './errors.js';
import { LIMITS } from './limits.js';

/**
 * The rules every string and JSON argument obeys, whatever field it reaches: PostgreSQL refuses
 * NUL in text and NUL or unpaired surrogates in jsonb (STACK.md), so they are refused here, with
 * the argument's path, before anything is written. `where` is that path (`input.messages[0].text`).
 */

// A high surrogate not followed by a low one, or a low surrogate not preceded by a high one.
const UNPAIRED = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function checkString(value: string, where: string, maxLength: number) {
  if (value.length > maxLength) throw badInput(`${where} is longer than ${maxLength} characters.`);
  const nul = value.indexOf('\u0000');
  if (nul >= 0) throw badInput(`${where} contains a NUL character (\\u0000) at position ${nul}.`);
  const unpaired = UNPAIRED.exec(value);
  if (unpaired) throw badInput(`${where} contains an unpaired UTF-16 surrogate at position ${unpaired.index}.`);
}

/** A string that names something (an id, a tool name): not blank, at most LIMITS.idLength. */
export function checkName(value: string, where: string) {
  checkString(value, where, LIMITS.idLength);
  if (!value.trim()) throw badInput(`${where} must not be empty.`);
}

/** A title: not blank (`""` and whitespace only are refused; leave it out for the default). */
export function checkTitle(value: string, where: string, maxLength: number) {
  checkString(value, where, maxLength);
  if (!value.trim()) throw badInput(`${where} must not be empty or blank; leave it out to get the default.`);
}

/** Keys that JavaScript treats as the prototype chain: stored naively they vanish or pollute. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * A JSON argument: plain objects, arrays, strings, finite numbers, booleans and null only (a
 * multipart File or any other object is refused), at most LIMITS.jsonDepth deep and
 * LIMITS.jsonLength long once serialized, every key and string checked like a string argument.
 * Iterative, so a value nested 100,000 levels is refused without touching the stack.
 */
export function checkJson(value: unknown, where: string): number {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value, path: where, depth: 0 }];
  let length = 0;
  while (stack.length > 0) {
    const item = stack.pop()!;
    const v = item.value;
    if (v === null || typeof v === 'boolean') {
      length += 5;
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw badInput(`${item.path} is not a finite number.`);
      length += String(v).length;
    } else if (typeof v === 'string') {
      checkString(v, item.path, LIMITS.jsonLength);
      length += v.length + 2;
    } else if (typeof v === 'object') {
      if (item.depth >= LIMITS.jsonDepth) throw badInput(`${where} is nested more than ${LIMITS.jsonDepth} levels deep.`);
      if (Array.isArray(v)) {
        length += 2 + v.length;
        for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: `${item.path}[${i}]`, depth: item.depth + 1 });
      } else {
        const proto = Object.getPrototypeOf(v);
        if (proto !== Object.prototype && proto !== null) throw badInput(`${item.path} is not a JSON value.`);
        length += 2;
        for (const key of Object.keys(v)) {
          const path = `${item.path}.${key.length > 40 ? `${key.slice(0, 37)}...` : key}`;
          if (FORBIDDEN_KEYS.has(key)) throw badInput(`${path}: the key "${key}" is not allowed.`);
          checkString(key, `${item.path} (a key)`, LIMITS.jsonLength);
          length += key.length + 4;
          stack.push({ value: (v as Record<string, unknown>)[key], path, depth: item.depth + 1 });
        }
      }
    } else {
      throw badInput(`${item.path} is not a JSON value.`);
    }
    if (length > LIMITS.jsonLength) throw badInput(`${where} is larger than ${LIMITS.jsonLength} characters as JSON.`);
  }
  return length;
}
