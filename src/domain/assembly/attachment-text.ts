/**
 * Attachment text as the model reads it: which MIME types are text, the escaping of the
 * <attachment> element (attributes: & < > " '; content: & and <, so nothing inside can close the
 * block or open a fake one), cuts that never split a code point or a nearby grapheme cluster, and
 * the inline block and placeholder elements (attachments.ts says when each is used).
 */
const TEXT_APPLICATION_TYPES = new Set([
  'application/json',
  'application/ld+json',
  'application/xml',
  'application/javascript',
  'application/ecmascript',
  'application/typescript',
  'application/x-typescript',
  'application/x-javascript',
  'application/x-sh',
  'application/x-shellscript',
  'application/sql',
  'application/graphql',
  'application/yaml',
  'application/x-yaml',
  'application/toml',
  'application/x-toml',
  'application/csv',
  'application/x-ndjson',
  'application/ndjson',
  'application/markdown',
  'application/x-markdown',
  'application/x-python',
  'application/x-ruby',
  'application/x-httpd-php',
  'application/xhtml+xml',
  'application/x-www-form-urlencoded',
]);

/** Whether a mime type is text we can inline (`text/*`, JSON, XML, YAML, source code…). */
export function isTextMimeType(mimeType: string): boolean {
  const base = mimeType.split(';')[0].trim().toLowerCase();
  if (base.startsWith('text/')) return true;
  if (TEXT_APPLICATION_TYPES.has(base)) return true;
  return base.startsWith('application/') && (base.endsWith('+json') || base.endsWith('+xml') || base.endsWith('+yaml'));
}

/** Escapes an attribute value: & < > " ' . */
export function escapeXmlAttribute(value: string): string {
  return value.replace(/[&<>"']/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#39;'));
}

/** Escapes element content: & and < (enough that no tag can be opened or closed). */
export function escapeXmlText(value: string): string {
  return value.replace(/[&<]/g, (c) => (c === '&' ? '&amp;' : '&lt;'));
}

const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff;
const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
const GRAPHEME_WINDOW = 32;

/**
 * The longest prefix of `text` of at most `maxChars` UTF-16 code units that ends on a code point
 * boundary, and on a grapheme boundary when one lies within a few characters before the cut.
 */
export function truncateAtBoundary(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  if (maxChars <= 0) return '';
  let cut = maxChars;
  if (isHigh(text.charCodeAt(cut - 1)) && isLow(text.charCodeAt(cut))) cut--;
  const from = Math.max(0, cut - GRAPHEME_WINDOW);
  const window = text.slice(from, Math.min(text.length, cut + GRAPHEME_WINDOW));
  let best = -1;
  for (const segment of graphemes.segment(window)) {
    const at = from + segment.index;
    if (at > cut) break;
    best = at;
  }
  // A boundary at the window start is only trusted when it is the text start.
  if (best > from || (best === 0 && from === 0)) cut = best;
  return text.slice(0, cut);
}

export function renderAttachmentBlock(
  attachment: { name: string; mimeType: string },
  content: string,
  truncatedNote: string | null,
): string {
  const attrs = `name="${escapeXmlAttribute(attachment.name)}" mime="${escapeXmlAttribute(attachment.mimeType)}"`;
  const note = truncatedNote ? ` truncated="${escapeXmlAttribute(truncatedNote)}"` : '';
  return `<attachment ${attrs}${note}>\n${escapeXmlText(content)}\n</attachment>`;
}

export function renderAttachmentPlaceholder(attachment: { name: string; mimeType: string }, omitted: string): string {
  return `<attachment name="${escapeXmlAttribute(attachment.name)}" mime="${escapeXmlAttribute(attachment.mimeType)}" omitted="${escapeXmlAttribute(omitted)}" />`;
}
