/**
 * The message search statement (`searchMessages`): PostgreSQL full-text search over the generated,
 * GIN-indexed `Message."searchVector"` (NULL while a message is generating, so a streaming message
 * is found once it is finished), one statement per page.
 *
 * What is searched is what a reader sees of a message in the session that wrote it (each message
 * row once: a fork's inherited messages are its ancestor's rows):
 *   - a message redacted there (its latest REDACT/UNREDACT in that session is a REDACT) is matched
 *     and highlighted by its replacement only, never by its original text;
 *   - only a text's first 16,384 characters are searched (the generated column's bound, which keeps
 *     to_tsvector's cost per message small: on PGlite it runs on the server's thread);
 *   - a hidden message is matched like any other: hiding leaves it out of assembled context, not
 *     out of `Session.messages`, and the hit's `message.hidden` says so.
 */
import type { Message } from '../../generated/prisma/client.js';
import { SqlParams, type SqlClient } from '../sql.js';
import { columnList } from './columns.js';
import { MESSAGE_COLUMNS } from './messages.js';

/** Where a page starts: strictly after this hit in (rank, createdAt, id) descending order. */
export interface SearchPosition {
  rank: number;
  createdAt: Date;
  id: string;
}

export interface SearchHitRow {
  message: Message;
  rank: number;
  /** The hit's text around its best match, each match between `HIT_START` and `HIT_END`, `<` and `>` as LESS_THAN and GREATER_THAN. */
  headline: string;
  /** The replacement the message was found by, when it is redacted. */
  replacement: string | null;
}

/** Marks the start of a match in `headline` (a control character removed from the text beforehand). */
export const HIT_START = '\u0002';
/** Marks the end of a match in `headline`. */
export const HIT_END = '\u0003';

/**
 * `<` and `>` stand in the headline's source as these private-use characters: PostgreSQL's parser
 * reads `<…>` as a tag and ts_headline leaves tags out (HIT_START and HIT_END are removed as well).
 */
export const LESS_THAN = '\ue000';
export const GREATER_THAN = '\ue001';
const HEADLINE_OPTIONS = `StartSel=${HIT_START}, StopSel=${HIT_END}, MaxWords=35, MinWords=15`;

/** `m`'s latest REDACT/UNREDACT in the session that wrote it is a REDACT. */
const REDACTED_IN_ITS_SESSION = `(
  SELECT t.kind FROM "MessageTransform" t
  WHERE t."messageId" = m.id AND t."sessionId" = m."sessionId" AND t.kind IN ('REDACT', 'UNREDACT')
  ORDER BY t.ordinal DESC LIMIT 1
) = 'REDACT'`;

/** Where a hit's headline is cut from: a window of its text around the first place a query word shows. */
export interface HeadlineWindow {
  /** The query's words, lower-case, cut to a prefix (so "cheaper" is found by "cheap…" too). */
  terms: string[];
  /** How far into the text to look for them (the window is at the start when none shows there). */
  scanChars: number;
  /** The window's length; it starts a fifth of it before the place found. */
  chars: number;
}

/**
 * One page of the workspace's messages matching `query` (websearch syntax: words, "phrases", or,
 * -not), best rank first, then newest, then by id; `limit` rows after `after` (`fetched`), of which
 * those within `contentBytes` of text and parts are read (the first always). A query of stop words
 * only matches nothing. Only the newest `rankWindow` matches (by id: ids are time-ordered uuidv7s)
 * are ranked and paged through, so a common word costs the same in any workspace: the matches are
 * found newest first (the planner walks the primary key backwards when they are many, takes the GIN
 * index when they are few: the query is written out there, not read from the CTE, so the planner
 * sees its words and estimates how many match) and ranking stops at the window. A message's rank
 * depends on it alone, so a cursor stays valid while messages are added. ts_headline parses the
 * whole text it is given, and on PGlite it runs on the server's thread, so it runs for the page's
 * rows only, each on a window of `window.chars` characters found by lower() and strpos() over at
 * most `window.scanChars`.
 */
export function searchMessages(
  sql: SqlClient,
  workspaceId: string,
  query: string,
  after: SearchPosition | null,
  limit: number,
  window: HeadlineWindow,
  rankWindow: number,
  contentBytes: number,
): Promise<{ rows: SearchHitRow[]; fetched: number }> {
  const p = new SqlParams();
  const q = p.add(query);
  const ws = p.add(workspaceId);
  const cap = p.add(rankWindow, '::int');
  const cursor = after
    ? `WHERE (h.rank, h."createdAt", h.id) < (${p.add(after.rank, '::real')}, ${p.add(after.createdAt.toISOString(), '::timestamp(3)')}, ${p.add(after.id)})`
    : '';
  return sql
    .query<Message & { rank: number; headline: string; replacement: string | null; fetched: number }>(
      `WITH q AS (SELECT websearch_to_tsquery('english', ${q}) AS query),
       found AS (
         (SELECT m.id, m."createdAt", m."searchVector" AS vector, NULL::text AS replacement
          FROM "Message" m JOIN "Session" s ON s.id = m."sessionId"
          WHERE m."searchVector" @@ websearch_to_tsquery('english', ${q}) AND s."workspaceId" = ${ws}
            AND (${REDACTED_IN_ITS_SESSION}) IS NOT TRUE
          ORDER BY m.id DESC LIMIT ${cap})
         UNION ALL
         (SELECT m.id, m."createdAt", to_tsvector('english', left(t.replacement, 16384)), t.replacement
          FROM q, "MessageTransform" t
            JOIN "Message" m ON m.id = t."messageId" AND m."sessionId" = t."sessionId"
            JOIN "Session" s ON s.id = t."sessionId"
          WHERE t.kind = 'REDACT' AND s."workspaceId" = ${ws} AND to_tsvector('english', left(t.replacement, 16384)) @@ q.query
            AND NOT EXISTS (
              SELECT 1 FROM "MessageTransform" later
              WHERE later."messageId" = t."messageId" AND later."sessionId" = t."sessionId"
                AND later.kind IN ('REDACT', 'UNREDACT') AND later.ordinal > t.ordinal
            )
          ORDER BY m.id DESC LIMIT ${cap})
       ),
       newest AS (SELECT * FROM found ORDER BY id DESC LIMIT ${cap}),
       hits AS (SELECT n.id, n."createdAt", ts_rank(n.vector, q.query) AS rank, n.replacement FROM q, newest n),
       fetched AS (
         SELECT h.* FROM hits h ${cursor}
         ORDER BY h.rank DESC, h."createdAt" DESC, h.id DESC
         LIMIT ${p.add(limit, '::int')}
       ),
       sized AS (
         SELECT f.*, count(*) OVER () AS fetched,
           sum(coalesce(c."contentBytes", 0)) OVER (ORDER BY f.rank DESC, f."createdAt" DESC, f.id DESC) AS run,
           row_number() OVER (ORDER BY f.rank DESC, f."createdAt" DESC, f.id DESC) AS n
         FROM fetched f JOIN "Message" c ON c.id = f.id
       ),
       -- Cut to the content bound before any hit's text is read (PAGE_CONTENT_BYTES): its first hit always.
       page AS (SELECT * FROM sized WHERE n = 1 OR run <= ${p.add(contentBytes, '::bigint')})
       SELECT ${columnList(MESSAGE_COLUMNS, 'm')}, page.rank, page.replacement, page.fetched::int AS fetched,
         ts_headline('english',
           translate(substr(src.text, greatest(1, coalesce(hit.at, 1) - ${p.add(Math.floor(window.chars / 5), '::int')}), ${p.add(window.chars, '::int')}),
             ${p.add(`<>${HIT_START}${HIT_END}`)}, ${p.add(LESS_THAN + GREATER_THAN)}),
           q.query, ${p.add(HEADLINE_OPTIONS)}) AS headline
       FROM page JOIN "Message" m ON m.id = page.id
         CROSS JOIN LATERAL (SELECT coalesce(page.replacement, m.text) AS text) src
         CROSS JOIN LATERAL (SELECT lower(left(src.text, ${p.add(window.scanChars, '::int')})) AS text) low
         CROSS JOIN LATERAL (SELECT min(nullif(strpos(low.text, term), 0)) AS at FROM unnest(${p.add(window.terms, '::text[]')}) term) hit,
         q
       ORDER BY page.rank DESC, page."createdAt" DESC, page.id DESC`,
      p.values,
    )
    .then((rows) => ({
      rows: rows.map(({ rank, headline, replacement, fetched: _, ...message }) => ({
        message: message as Message,
        rank,
        headline,
        replacement,
      })),
      fetched: rows[0]?.fetched ?? 0,
    }));
}
