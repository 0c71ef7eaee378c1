import { contentBytesOf, type ResponseBudget } from '../domain/content-budget.js';
import { PAGE_CONTENT_BYTES } from '../domain/limits.js';
import type { Sql } from '../db/sql.js';
import { GREATER_THAN, HIT_END, HIT_START, LESS_THAN, searchMessages, type SearchPosition } from '../db/stores/search.js';
import { badInput } from '../domain/errors.js';
import type { Message } from '../generated/prisma/client.js';

/** Longest query accepted, in characters. */
export const SEARCH_QUERY_MAX_CHARS = 256;
/** Most words (whitespace-separated) a query may have. */
export const SEARCH_QUERY_MAX_TERMS = 16;
export const SEARCH_DEFAULT_PAGE = 20;
/**
 * Only the newest this-many matches of a query are ranked and returned: ranking every match of a
 * common word would cost in proportion to the workspace (and on PGlite, on the server's thread).
 * Finding the newest N matches of a word in a share s of the messages reads about N / s of them
 * newest first (or, for a rare word, every match through the GIN index), whatever the workspace's
 * size: ten pages of 50 (docs/performance.md has the figure).
 */
export const SEARCH_RANK_WINDOW = 500;
/** Largest page: each hit's highlight is computed by the database. */
export const SEARCH_MAX_PAGE = 50;
/**
 * A hit's highlight is cut from a window of this many characters around the first place one of
 * the query's words shows in its first HIGHLIGHT_SCAN_CHARS (else from its start).
 */
export const HIGHLIGHT_WINDOW_CHARS = 800;
export const HIGHLIGHT_SCAN_CHARS = 10_000;
/** Query words are looked for by a prefix this long, so a stemmed match ("cheap" for "cheaper") is found too. */
const TERM_PREFIX = 5;

/** The query's words as the headline window looks for them (see HeadlineWindow). */
export function windowTerms(query: string): string[] {
  const words = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return [...new Set(words.map((word) => word.slice(0, TERM_PREFIX)))];
}

export interface SearchHit {
  cursor: string;
  message: Message;
  /** The matching text, HTML-escaped, each match in `<mark>…</mark>`. */
  highlight: string;
  rank: number;
  /** Found by its redaction's replacement (the original text is not searched). */
  redacted: boolean;
}

export interface SearchPage {
  hits: SearchHit[];
  hasNextPage: boolean;
}

const PREFIX = 'search:';

function encodeCursor(position: SearchPosition): string {
  return Buffer.from(`${PREFIX}${JSON.stringify([position.rank, position.createdAt.getTime(), position.id])}`).toString('base64url');
}

function decodeCursor(cursor: string): SearchPosition {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  let parsed: unknown;
  try {
    parsed = text.startsWith(PREFIX) ? JSON.parse(text.slice(PREFIX.length)) : null;
  } catch {
    parsed = null;
  }
  if (
    Array.isArray(parsed) &&
    parsed.length === 3 &&
    Number.isFinite(parsed[0]) &&
    Number.isSafeInteger(parsed[1]) &&
    typeof parsed[2] === 'string' &&
    parsed[2].length <= 64
  ) {
    return { rank: parsed[0], createdAt: new Date(parsed[1]), id: parsed[2] };
  }
  throw badInput('after is not a cursor returned by searchMessages.');
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (text: string) =>
  text
    .replaceAll(LESS_THAN, '<')
    .replaceAll(GREATER_THAN, '>')
    .replace(/[&<>"']/g, (c) => ESCAPES[c]);

/** The database's headline (matches between HIT_START and HIT_END) as escaped HTML with `<mark>`. */
export function headlineHtml(headline: string): string {
  return headline
    .split(HIT_START)
    .map((chunk, i) => {
      if (i === 0) return escapeHtml(chunk);
      const end = chunk.indexOf(HIT_END);
      return end < 0 ? escapeHtml(chunk) : `<mark>${escapeHtml(chunk.slice(0, end))}</mark>${escapeHtml(chunk.slice(end + 1))}`;
    })
    .join('');
}

/** Checks a search query's size: not blank, at most SEARCH_QUERY_MAX_CHARS and SEARCH_QUERY_MAX_TERMS. */
export function checkSearchQuery(query: string): string {
  const trimmed = query.trim();
  if (!trimmed) throw badInput('query must not be blank.');
  if (trimmed.length > SEARCH_QUERY_MAX_CHARS) throw badInput(`query must be at most ${SEARCH_QUERY_MAX_CHARS} characters.`);
  if (trimmed.split(/\s+/).length > SEARCH_QUERY_MAX_TERMS) throw badInput(`query must have at most ${SEARCH_QUERY_MAX_TERMS} words.`);
  return trimmed;
}

/** Full-text search over a workspace's messages (db/stores/search.ts says what is searched). */
export class MessageSearchService {
  constructor(private readonly sql: Sql) {}

  async search(
    workspaceId: string,
    query: string,
    first: number | null | undefined,
    after: string | null | undefined,
    budget: ResponseBudget,
  ): Promise<SearchPage> {
    const text = checkSearchQuery(query);
    const size = first ?? SEARCH_DEFAULT_PAGE;
    if (!Number.isInteger(size) || size < 0 || size > SEARCH_MAX_PAGE) throw badInput(`first must be from 0 to ${SEARCH_MAX_PAGE}.`);
    const position = after ? decodeCursor(after) : null;
    if (size === 0) return { hits: [], hasNextPage: false };
    // The page's share of the request's answer budget: spent, the page is empty and says more follows.
    const reserved = budget.reserve(PAGE_CONTENT_BYTES);
    if (reserved === 0) return { hits: [], hasNextPage: true };
    const { rows, fetched } = await searchMessages(
      this.sql.reads,
      workspaceId,
      text,
      position,
      size + 1,
      { terms: windowTerms(text), scanChars: HIGHLIGHT_SCAN_CHARS, chars: HIGHLIGHT_WINDOW_CHARS },
      SEARCH_RANK_WINDOW,
      reserved,
    );
    budget.settle(
      reserved,
      rows.slice(0, size).reduce((sum, row) => sum + contentBytesOf(row.message), 0),
    );
    return {
      hits: rows.slice(0, size).map((row) => ({
        cursor: encodeCursor({ rank: row.rank, createdAt: row.message.createdAt, id: row.message.id }),
        message: row.message,
        highlight: headlineHtml(row.headline),
        rank: row.rank,
        redacted: row.replacement !== null,
      })),
      // More follow: past the page (its look-ahead row), or cut by its content bound.
      hasNextPage: rows.length > size || fetched > rows.length,
    };
  }
}
