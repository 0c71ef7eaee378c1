/** Strings longer than this are not interned: they would stay in the table after their holder left. */
const MAX_INTERNED_CHARS = 4 * 1024;

/**
 * Hands every string seen before back as the same string, so that thousands of holders of equal
 * texts (subscribed sockets' query texts, their selection keys) keep one copy. At most `max`
 * strings of up to 4 KB are kept; the table starts over when full (which only costs sharing
 * between holders on either side of the reset); a longer string is returned as it is.
 */
export function stringInterner(max: number): (text: string) => string {
  const texts = new Map<string, string>();
  return (text) => {
    if (text.length > MAX_INTERNED_CHARS) return text;
    const known = texts.get(text);
    if (known !== undefined) return known;
    if (texts.size >= max) texts.clear();
    texts.set(text, text);
    return text;
  };
}
