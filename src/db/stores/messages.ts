/**
 * Every statement on the `Message` table: the light rows windowing reads (plain SQL, newest first,
 * a page at a time), parts by id, the whole rows of `Session.messages` pages (read through the page
 * cache by caches/message-ranges.ts), and
 * the writes of updateMessage (appendMessages writes its rows in one statement with the session's
 * counters and events: stores/append.ts).
 */
import type { Segment } from '../../domain/lineage.js';
import { joinText, partsChars, toolCallIdsOf, toolResultIdsOf } from '../../domain/parts.js';
import { countStoredTokens, type KnownTokenCounts } from '../../domain/tokens.js';
import type { StoredPart } from '../../domain/types.js';
import type { Message, Prisma, PrismaClient } from '../../generated/prisma/client.js';
import { SqlParams, type SqlClient, type Tx } from '../sql.js';
import { columnList, type ColumnSet } from './columns.js';

/** Every column of a message row. */
export const MESSAGE_COLUMNS: ColumnSet<Message> = {
  id: true,
  sessionId: true,
  position: true,
  role: true,
  parts: true,
  text: true,
  toolCallIds: true,
  toolResultIds: true,
  generating: true,
  tokensO200k: true,
  tokensCl100k: true,
  turnId: true,
  agentId: true,
  createdAt: true,
  updatedAt: true,
  contentBytes: true,
};
export const MESSAGE_SQL = columnList(MESSAGE_COLUMNS);

/** What windowing looks at of a message: its place, role, state, tool calls and results, and stored counts. */
export const LIGHT_COLUMNS = {
  id: true,
  position: true,
  role: true,
  generating: true,
  toolCallIds: true,
  toolResultIds: true,
  tokensO200k: true,
  tokensCl100k: true,
} as const satisfies Partial<ColumnSet<Message>>;
export const LIGHT_SQL = columnList(LIGHT_COLUMNS);
export type LightRow = Prisma.MessageGetPayload<{ select: typeof LIGHT_COLUMNS }>;

/** The where clause selecting exactly the rows of these segments. */
export function segmentsWhere(segments: readonly Segment[]) {
  return {
    OR: segments.map((s) => ({ sessionId: s.sessionId, position: { gte: s.start, lt: s.end } })),
  };
}

/**
 * Messages [lo, hi) of one session, newest first. Positions are dense, so the range itself bounds
 * the rows: whatever plan the planner picks (with stale statistics it may sort every row of the
 * session instead of reading the index backwards), it reads no more than that.
 */
export function readLightPage(sql: SqlClient, sessionId: string, lo: number, hi: number): Promise<LightRow[]> {
  return sql.query<LightRow>(
    `SELECT ${LIGHT_SQL} FROM "Message"
     WHERE "sessionId" = $1 AND position >= $2 AND position < $3 ORDER BY position DESC`,
    [sessionId, lo, hi],
  );
}

/** The light rows of these segments, oldest first. */
export function readLightSegments(prisma: PrismaClient, segments: readonly Segment[]): Promise<LightRow[]> {
  if (segments.length === 0) return Promise.resolve([]);
  return prisma.message.findMany({ where: segmentsWhere(segments), orderBy: { position: 'asc' }, select: LIGHT_COLUMNS });
}

/**
 * Role, tool calls and results of the messages of these segments, newest first, in plain SQL (what
 * a regenerate cut checks before it: db/sql.ts's client, or a Prisma transaction seen as one).
 */
export function readToolRoundTail(
  sql: SqlClient,
  segments: readonly Segment[],
): Promise<{ role: string; toolCallIds: string[]; toolResultIds: string[] }[]> {
  if (segments.length === 0) return Promise.resolve([]);
  const params = new SqlParams();
  const where = segments
    .map((s) => `("sessionId" = ${params.add(s.sessionId)} AND position >= ${params.add(s.start)} AND position < ${params.add(s.end)})`)
    .join(' OR ');
  return sql.query(
    `SELECT role::text AS role, "toolCallIds", "toolResultIds" FROM "Message" WHERE ${where} ORDER BY position DESC`,
    params.values,
  );
}

/** Ids and positions of the messages of these segments, oldest first. */
export function readIdsAndPositions(prisma: PrismaClient, segments: readonly Segment[]): Promise<{ id: string; position: number }[]> {
  return prisma.message.findMany({ where: segmentsWhere(segments), orderBy: { position: 'asc' }, select: { id: true, position: true } });
}

/** Parts (and whether still generating) of messages by id. */
export function readParts(
  sql: SqlClient,
  ids: string[],
): Promise<{ id: string; sessionId: string; parts: StoredPart[]; generating: boolean }[]> {
  return sql.query('SELECT id, "sessionId", parts, generating FROM "Message" WHERE id = ANY($1::text[])', [ids]);
}

/** What a whole message row weighs in the page cache: its characters (text, and the parts' strings), plus its other fields. */
export function messageRowChars(row: Message): number {
  return 256 + row.text.length + partsChars(row.parts as unknown as StoredPart[]);
}

/**
 * Whole rows of the messages of these segments, oldest first, in plain SQL (the page reads of
 * `Session.messages`). Each segment's position range bounds its rows (positions are dense).
 */
export function readSegments(sql: SqlClient, segments: readonly Segment[]): Promise<Message[]> {
  const params = new SqlParams();
  const where = segments
    .map((s) => `("sessionId" = ${params.add(s.sessionId)} AND position >= ${params.add(s.start)} AND position < ${params.add(s.end)})`)
    .join(' OR ');
  return sql.query<Message>(`SELECT ${MESSAGE_SQL} FROM "Message" WHERE ${where} ORDER BY position ASC`, params.values);
}

/** The segments of one page, and its order: index order, or newest first (`fromEnd`, for last/before). */
export interface PageSegments {
  segments: readonly Segment[];
  fromEnd: boolean;
}

/**
 * Whole rows of pages of messages (`page` is the page's number in `pages`), each cut by
 * `cutPages`'s rule (domain/content-budget.ts) to `pageBytes` and all of them together to
 * `availableBytes`, in one statement. The cut is decided from `contentBytes` (a generated column)
 * by window sums over each page, before any row's content is read: only the kept rows' text and
 * parts leave the table. Rows come oldest first within each page.
 */
export function readPagesWithin(
  sql: SqlClient,
  pages: readonly PageSegments[],
  pageBytes: number,
  availableBytes: number,
): Promise<(Message & { page: number })[]> {
  const segments = pages.flatMap(({ segments, fromEnd }, page) => segments.map((s) => ({ page, fromEnd, ...s })));
  // One statement text whatever the number of pages (its plan is prepared once). The windows run
  // over ids and sizes only, and only the kept rows' content is read. Each LATERAL (fenced by
  // OFFSET 0, so the planner keeps it) reads by index, whatever the table's statistics say: a range
  // by its position bounds, a kept row by its id.
  return sql.query<Message & { page: number }>(
    `SELECT kept.page, ${columnList(MESSAGE_COLUMNS, 'm')} FROM (SELECT * FROM (
       SELECT *, sum(size) OVER (ORDER BY page, n) AS total FROM (
         SELECT *, sum(size) OVER (PARTITION BY page ORDER BY ord) AS run, row_number() OVER (PARTITION BY page ORDER BY ord) AS n
         FROM (
           SELECT r.page, CASE WHEN r.from_end THEN -w.position ELSE w.position END AS ord, w.id, w.size
           FROM unnest($1::int[], $2::text[], $3::int[], $4::int[], $5::boolean[]) AS r(page, session_id, lo, hi, from_end)
           CROSS JOIN LATERAL (
             SELECT id, position, coalesce("contentBytes", 0) AS size FROM "Message"
             WHERE "sessionId" = r.session_id AND position >= r.lo AND position < r.hi OFFSET 0
           ) AS w
         ) AS wanted
       ) AS sized WHERE n = 1 OR run <= $6::bigint
     ) AS cut WHERE total <= $7::bigint OR (n = 1 AND total - size < $7::bigint)) AS kept
     CROSS JOIN LATERAL (SELECT ${MESSAGE_SQL} FROM "Message" WHERE id = kept.id OFFSET 0) AS m
     ORDER BY kept.page, m.position`,
    [
      segments.map((s) => s.page),
      segments.map((s) => s.sessionId),
      segments.map((s) => s.start),
      segments.map((s) => s.end),
      segments.map((s) => s.fromEnd),
      pageBytes,
      availableBytes,
    ],
  );
}

/**
 * What a message's parts decide of its row: the parts, their text and tool ids, and (once finished)
 * its token counts, taken from `known` where its long texts were counted ahead.
 */
export function contentColumns(parts: StoredPart[], generating: boolean, known: KnownTokenCounts) {
  const tokens = generating ? null : countStoredTokens(parts, known);
  return {
    parts: parts as unknown as Prisma.JsonValue,
    text: joinText(parts),
    toolCallIds: toolCallIdsOf(parts),
    toolResultIds: toolResultIdsOf(parts),
    generating,
    tokensO200k: tokens?.O200K_BASE ?? null,
    tokensCl100k: tokens?.CL100K_BASE ?? null,
  } satisfies Partial<Message>;
}

/** The session of a message of the workspace, or null. */
export function findMessageSession(tx: Tx, workspaceId: string, messageId: string): Promise<{ sessionId: string } | null> {
  return tx.message.findFirst({ where: { id: messageId, session: { workspaceId } }, select: { sessionId: true } });
}

/** The session that wrote a message of the workspace, in plain SQL; null when there is none. */
export async function findMessageOwner(sql: SqlClient, workspaceId: string, messageId: string): Promise<string | null> {
  const [row] = await sql.query<{ sessionId: string }>(
    'SELECT m."sessionId" FROM "Message" m JOIN "Session" s ON s.id = m."sessionId" WHERE m.id = $1 AND s."workspaceId" = $2',
    [messageId, workspaceId],
  );
  return row?.sessionId ?? null;
}

/** Locks a message row for a change (its session is locked first). */
export async function lockMessage(tx: Tx, messageId: string): Promise<Message> {
  const [row] = await tx.$queryRawUnsafe<Message[]>(`SELECT ${MESSAGE_SQL} FROM "Message" WHERE id = $1 FOR UPDATE`, messageId);
  return row;
}

export function updateMessageContent(
  tx: Tx,
  messageId: string,
  parts: StoredPart[],
  generating: boolean,
  known: KnownTokenCounts,
): Promise<Message> {
  const { parts: json, ...rest } = contentColumns(parts, generating, known);
  return tx.message.update({ where: { id: messageId }, data: { ...rest, parts: json as Prisma.InputJsonValue } });
}

/** The tool call ids among `wanted` made by the messages of these segments. */
export async function findToolCalls(tx: Tx, segments: readonly Segment[], wanted: string[]): Promise<string[]> {
  const where = segmentsWhere(segments);
  if (where.OR.length === 0) return [];
  const rows = await tx.message.findMany({ where: { ...where, toolCallIds: { hasSome: wanted } }, select: { toolCallIds: true } });
  return rows.flatMap((row) => row.toolCallIds);
}

/** The first still-generating message of these segments, or null. */
export function findGenerating(tx: Tx, segments: readonly Segment[]): Promise<{ position: number } | null> {
  return tx.message.findFirst({ where: { ...segmentsWhere(segments), generating: true }, select: { position: true } });
}

/** A message by id (what a replayed event names), or null once deleted. */
export function findMessage(prisma: PrismaClient, id: string): Promise<Message | null> {
  return prisma.message.findUnique({ where: { id } });
}

/** Messages by id (what a transform event names), in index order; a deleted one is left out. */
export function findMessagesInIndexOrder(prisma: PrismaClient, ids: string[]): Promise<Message[]> {
  return prisma.message.findMany({ where: { id: { in: ids } }, orderBy: { position: 'asc' } });
}

/** How many messages were appended with a turn (`Turn.messages`' totalCount). */
export function countTurnMessages(prisma: PrismaClient, turnId: string): Promise<number> {
  return prisma.message.count({ where: { turnId } });
}

/** Where a page of a turn's messages lies: positions strictly between `after` and `before`, `limit` of them from one end. */
export interface TurnPageBounds {
  after: number;
  before: number;
  limit: number;
  fromEnd: boolean;
}

/**
 * A page of the messages of a turn (its rows in index order), cut by `cutPages`'s rule to
 * `pageBytes` and `availableBytes` from the end it is read from, in one statement: the sizes
 * first, then the kept rows' content by id. `fetched` is how many rows the bounds held (up to
 * `limit`) before the cut.
 */
export async function readTurnPage(
  sql: SqlClient,
  turnId: string,
  bounds: TurnPageBounds,
  pageBytes: number,
  availableBytes: number,
): Promise<{ rows: Message[]; fetched: number }> {
  const rows = await sql.query<Message & { fetched: number }>(
    `SELECT c.fetched::int AS fetched, ${columnList(MESSAGE_COLUMNS, 'm')} FROM (
       SELECT *, count(*) OVER () AS fetched, sum(size) OVER (ORDER BY ord) AS run, row_number() OVER (ORDER BY ord) AS n FROM (
         SELECT id, CASE WHEN $5::boolean THEN -position ELSE position END AS ord, coalesce("contentBytes", 0) AS size
         FROM "Message" WHERE "turnId" = $1 AND position > $2 AND position < $3
         ORDER BY ord LIMIT $4
       ) AS w
     ) AS c
     CROSS JOIN LATERAL (SELECT ${MESSAGE_SQL} FROM "Message" WHERE id = c.id OFFSET 0) AS m
     WHERE (c.n = 1 OR c.run <= $6::bigint) AND (c.run <= $7::bigint OR (c.n = 1 AND c.run - c.size < $7::bigint))
     ORDER BY m.position`,
    [turnId, bounds.after, bounds.before, bounds.limit, bounds.fromEnd, pageBytes, availableBytes],
  );
  return { rows: rows.map(({ fetched: _, ...row }) => row), fetched: rows[0]?.fetched ?? 0 };
}
