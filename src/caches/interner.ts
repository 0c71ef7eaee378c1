import { LRUCache } from 'lru-cache';

/** Strings longer than this are not interned: they would stay in the table after their holder left. */
const MAX_INTERNED_CHARS = 4 * 1024;

/**
 * Hands every string seen before back as the same string, so that thousands of holders of equal
 * texts (subscribed sockets' query texts, their selection keys) keep one copy.
 *
 * Rule: a string is its own value, so an entry can never be stale and nothing calls `forget`.
 * At most `max` strings of up to 4 KB are kept, the least recently handed out forgotten first
 * (which only costs sharing between holders on either side of it); a longer string is returned
 * as it is.
 */
export function stringInterner(max: number): (text: string) => string {
  const texts = new LRUCache<string, string>({ max });
  return (text) => {
    if (text.length > MAX_INTERNED_CHARS) return text;
    const known = texts.get(text);
    if (known !== undefined) return known;
    texts.set(text, text);
    return text;
  };
}
