/**
 * The statements of export (reads, page by page: keyset on position, number, ordinal or id, so a
 * session of any length is read in bounded pages) and of import (batched inserts of whole rows,
 * ids already mapped by the service). See services/exports.ts and services/imports.ts.
 */
import type { Session } from '../../generated/prisma/client.js';
import type {
  AttachmentLine,
  CompactionLine,
  MessageLine,
  SessionLine,
  TransformLine,
  TurnLine,
  UsageLine,
} from '../../domain/export-format.js';
import type { SqlClient } from '../sql.js';
import { SESSION_SQL } from './session-columns.js';
import { branchAnchorSql } from './sessions.js';

const ISO = (column: string) => `to_char(${column}, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const ISO_OR_NULL = (column: string) => `CASE WHEN ${column} IS NULL THEN NULL ELSE ${ISO(column)} END`;

/** The session of the workspace, or null. */
export async function readSessionForExport(sql: SqlClient, workspaceId: string, id: string): Promise<Session | null> {
  const [row] = await sql.query<Session>(`SELECT ${SESSION_SQL} FROM "Session" WHERE id = $1 AND "workspaceId" = $2`, [id, workspaceId]);
  return row ?? null;
}

/** The sessions of the workspace by id (any order). */
export function readSessionsForExport(sql: SqlClient, workspaceId: string, ids: readonly string[]): Promise<Session[]> {
  return sql.query<Session>(`SELECT ${SESSION_SQL} FROM "Session" WHERE id = ANY($1::text[]) AND "workspaceId" = $2`, [ids, workspaceId]);
}

/** The forks of these sessions and the sub-agent sessions nested in their turns, oldest first: one level of the tree below them. */
export async function readChildSessionIds(sql: SqlClient, workspaceId: string, parents: readonly string[]): Promise<string[]> {
  const rows = await sql.query<{ id: string }>(
    `SELECT id FROM "Session" WHERE "workspaceId" = $1 AND "parentId" = ANY($2::text[])
     UNION
     SELECT s.id FROM "Turn" t JOIN "Session" s ON s."parentTurnId" = t.id WHERE t."sessionId" = ANY($2::text[]) AND s."workspaceId" = $1
     ORDER BY id`,
    [workspaceId, parents],
  );
  return rows.map((row) => row.id);
}

/** The session that holds this turn, or null. */
export async function sessionOfTurn(sql: SqlClient, turnId: string): Promise<string | null> {
  const [row] = await sql.query<{ sessionId: string }>('SELECT "sessionId" FROM "Turn" WHERE id = $1', [turnId]);
  return row?.sessionId ?? null;
}

const USAGE_COLUMNS = (t: string) =>
  `${t}."inputTokens"::text AS "inputTokens", ${t}."outputTokens"::text AS "outputTokens",
   ${t}."cacheReadTokens"::text AS "cacheReadTokens", ${t}."cacheWriteTokens"::text AS "cacheWriteTokens", ${t}.cost`;

/** Turns of the session after `afterNumber`, by number, with their agents, as export lines. */
export function readTurnLines(sql: SqlClient, sessionId: string, afterNumber: number, upTo: number, limit: number): Promise<TurnLine[]> {
  return sql.query<TurnLine>(
    `SELECT 'turn' AS type, t.id, t."sessionId", t.number, t."clientTurnId", t.status, t."initiatorKind", t."initiatorId",
            ${USAGE_COLUMNS('t')}, t.error, t.context, t."contextSettingsFingerprint", t."contextHistoryMark",
            ${ISO('t."startedAt"')} AS "startedAt", ${ISO_OR_NULL('t."completedAt"')} AS "completedAt",
            ${ISO('t."lastActivityAt"')} AS "lastActivityAt",
            coalesce((SELECT json_agg(json_build_object('agentId', a."agentId", 'status', a.status,
                        'inputTokens', a."inputTokens"::text, 'outputTokens', a."outputTokens"::text,
                        'cacheReadTokens', a."cacheReadTokens"::text, 'cacheWriteTokens', a."cacheWriteTokens"::text,
                        'cost', a.cost, 'error', a.error, 'completedAt', ${ISO_OR_NULL('a."completedAt"')}) ORDER BY a."agentId")
                      FROM "TurnAgent" a WHERE a."turnId" = t.id), '[]'::json) AS agents
       FROM "Turn" t WHERE t."sessionId" = $1 AND t.number > $2 AND t.number <= $3 ORDER BY t.number LIMIT $4`,
    [sessionId, afterNumber, upTo, limit],
  );
}

/** Usage reports of the session's turns after `afterId`, by id, as export lines. */
export function readUsageLines(sql: SqlClient, sessionId: string, afterId: string, turnsUpTo: number, limit: number): Promise<UsageLine[]> {
  return sql.query<UsageLine>(
    `SELECT 'usage' AS type, r.id, r."turnId", r."callId", r."agentId", r.model, ${USAGE_COLUMNS('r')}, r."costSource",
            ${ISO('r."createdAt"')} AS "createdAt"
       FROM "TurnUsageReport" r JOIN "Turn" t ON t.id = r."turnId"
      WHERE t."sessionId" = $1 AND r.id > $2 AND t.number <= $3 ORDER BY r.id LIMIT $4`,
    [sessionId, afterId, turnsUpTo, limit],
  );
}

/** Attachments of the session after `afterId`, by id, without the bytes of BYTES ones (`readBlobBase64`). */
export function readAttachmentLines(
  sql: SqlClient,
  sessionId: string,
  afterId: string,
  limit: number,
): Promise<(AttachmentLine & { blobSha256: string | null })[]> {
  return sql.query(
    `SELECT 'attachment' AS type, a.id, a."sessionId", a.name, a."mimeType", a.size, a.sha256, a.kind, a.content, NULL AS data,
            a.width, a.height, a.pages, a.url, a."providerFile", ${ISO('a."createdAt"')} AS "createdAt", a."blobSha256"
       FROM "Attachment" a WHERE a."sessionId" = $1 AND a.id > $2 ORDER BY a.id LIMIT $3`,
    [sessionId, afterId, limit],
  );
}

/** A blob's bytes as base64 (one line, as the export writes it), or null. */
export async function readBlobBase64(sql: SqlClient, workspaceId: string, sha256: string): Promise<string | null> {
  const [row] = await sql.query<{ data: string }>(
    `SELECT translate(encode(bytes, 'base64'), E'\\n', '') AS data FROM "AttachmentBlob" WHERE "workspaceId" = $1 AND sha256 = $2`,
    [workspaceId, sha256],
  );
  return row?.data ?? null;
}

/**
 * The session's own messages after `afterPosition` and before `before`, by position: at most `limit`, cut to `bytes`
 * of content (the first always kept) from the generated `contentBytes` before any content is read.
 */
export function readMessageLines(
  sql: SqlClient,
  sessionId: string,
  afterPosition: number,
  before: number,
  limit: number,
  bytes: number,
): Promise<MessageLine[]> {
  return sql.query<MessageLine>(
    `SELECT 'message' AS type, m.id, m."sessionId", m.position, m.role, m.parts, m."toolCallIds", m."toolResultIds", m.generating,
            m."tokensO200k", m."tokensCl100k", m."turnId", m."agentId",
            ${ISO('m."createdAt"')} AS "createdAt", ${ISO('m."updatedAt"')} AS "updatedAt"
       FROM (
         SELECT id, row_number() OVER (ORDER BY position) AS n, sum(size) OVER (ORDER BY position) AS run FROM (
           SELECT id, position, coalesce("contentBytes", 0) AS size FROM "Message"
            WHERE "sessionId" = $1 AND position > $2 AND position < $3 ORDER BY position LIMIT $4
         ) AS w
       ) AS c
       CROSS JOIN LATERAL (SELECT * FROM "Message" WHERE id = c.id OFFSET 0) AS m
      WHERE c.n = 1 OR c.run <= $5::bigint
      ORDER BY m.position`,
    [sessionId, afterPosition, before, limit, bytes],
  );
}

/** The session's compactions after `afterOrdinal`, by ordinal, as export lines. */
export function readCompactionLines(
  sql: SqlClient,
  sessionId: string,
  afterOrdinal: number,
  upTo: number,
  limit: number,
): Promise<CompactionLine[]> {
  return sql.query<CompactionLine>(
    `SELECT 'compaction' AS type, id, "sessionId", ordinal, "uptoIndex", summary, "extractedContext", "tokensO200k", "tokensCl100k",
            ${ISO('"createdAt"')} AS "createdAt"
       FROM "Compaction" WHERE "sessionId" = $1 AND ordinal > $2 AND ordinal <= $3 ORDER BY ordinal LIMIT $4`,
    [sessionId, afterOrdinal, upTo, limit],
  );
}

/** The session's history transforms after `afterOrdinal`, by ordinal, as export lines. */
export function readTransformLines(
  sql: SqlClient,
  sessionId: string,
  afterOrdinal: number,
  upTo: number,
  limit: number,
): Promise<TransformLine[]> {
  return sql.query<TransformLine>(
    `SELECT 'transform' AS type, id, "sessionId", ordinal, kind, "messageId", position, reason, replacement, "tokensO200k", "tokensCl100k",
            ${ISO('"createdAt"')} AS "createdAt"
       FROM "MessageTransform" WHERE "sessionId" = $1 AND ordinal > $2 AND ordinal <= $3 ORDER BY ordinal LIMIT $4`,
    [sessionId, afterOrdinal, upTo, limit],
  );
}

// ---- import ------------------------------------------------------------------------------------

const UTC = (expression: string) => `(${expression})::timestamptz AT TIME ZONE 'UTC'`;

/**
 * Inserts an imported session row (ids already mapped; no event log: its sequence starts at 0, no
 * active turn yet). A fork's alternatives anchor is derived as a fork's INSERT derives it, so the
 * sessions of a tree must come parents first (the export's order), each after the messages it cuts at.
 */
export async function insertImportedSession(sql: SqlClient, workspaceId: string, s: SessionLine): Promise<void> {
  await sql.query(
    `INSERT INTO "Session" (id, "workspaceId", title, settings, metadata, "parentId", "rootId", "ancestorIds", depth, "forkIndex",
        "forkPointMessageId", lineage, kind, "parentTurnId", "parentMessageCount", "agentId", "messageCount", "compactionCount",
        "transformCount", "turnCount", "createdAt", "updatedAt", "branchAnchorId")
     VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6, $7, $8::text[], $9, $10, $11, $12::jsonb, $13::"SessionKind", $14, $15, $16, $17, $18,
        $19, $20, ${UTC('$21::text')}, ${UTC('$22::text')}, ${branchAnchorSql('$11')})`,
    [
      s.id,
      workspaceId,
      s.title,
      JSON.stringify(s.settings),
      JSON.stringify(s.metadata),
      s.parentId,
      s.rootId,
      s.ancestorIds,
      s.depth,
      s.forkIndex,
      s.forkPointMessageId,
      JSON.stringify(s.lineage),
      s.kind,
      s.parentTurnId,
      s.parentMessageCount,
      s.agentId,
      s.messageCount,
      s.compactionCount,
      s.transformCount,
      s.turnCount,
      s.createdAt,
      s.updatedAt,
    ],
  );
}

/** Sets an imported session's active turn once its turns are in. */
export async function setImportedActiveTurn(sql: SqlClient, sessionId: string, turnId: string): Promise<void> {
  await sql.query('UPDATE "Session" SET "activeTurnId" = $2 WHERE id = $1', [sessionId, turnId]);
}

/** Inserts turns (ids mapped) and their agents, in two statements. */
export async function insertImportedTurns(sql: SqlClient, turns: readonly TurnLine[]): Promise<void> {
  if (turns.length === 0) return;
  await sql.query(
    `INSERT INTO "Turn" (id, "sessionId", number, "clientTurnId", status, "initiatorKind", "initiatorId", "inputTokens", "outputTokens",
        "cacheReadTokens", "cacheWriteTokens", cost, error, context, "contextSettingsFingerprint", "contextHistoryMark", "startedAt",
        "completedAt", "lastActivityAt")
     SELECT r.id, r."sessionId", r.number, r."clientTurnId", r.status::"TurnStatus", r."initiatorKind"::"InitiatorKind", r."initiatorId",
        r."inputTokens"::bigint, r."outputTokens"::bigint, r."cacheReadTokens"::bigint, r."cacheWriteTokens"::bigint, r.cost, r.error,
        r.context, r."contextSettingsFingerprint", r."contextHistoryMark", ${UTC('r."startedAt"')}, ${UTC('r."completedAt"')},
        ${UTC('r."lastActivityAt"')}
     FROM jsonb_to_recordset($1::jsonb) AS r(id text, "sessionId" text, number int, "clientTurnId" text, status text, "initiatorKind" text,
        "initiatorId" text, "inputTokens" text, "outputTokens" text, "cacheReadTokens" text, "cacheWriteTokens" text, cost float8,
        error text, context jsonb, "contextSettingsFingerprint" text, "contextHistoryMark" int, "startedAt" text, "completedAt" text,
        "lastActivityAt" text)`,
    [JSON.stringify(turns.map(({ agents: _, ...turn }) => turn))],
  );
  const agents = turns.flatMap((turn) => turn.agents.map((agent) => ({ ...agent, turnId: turn.id })));
  if (agents.length === 0) return;
  await sql.query(
    `INSERT INTO "TurnAgent" ("turnId", "agentId", status, "inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", cost,
        error, "completedAt")
     SELECT r."turnId", r."agentId", r.status::"TurnAgentStatus", r."inputTokens"::bigint, r."outputTokens"::bigint,
        r."cacheReadTokens"::bigint, r."cacheWriteTokens"::bigint, r.cost, r.error, ${UTC('r."completedAt"')}
     FROM jsonb_to_recordset($1::jsonb) AS r("turnId" text, "agentId" text, status text, "inputTokens" text, "outputTokens" text,
        "cacheReadTokens" text, "cacheWriteTokens" text, cost float8, error text, "completedAt" text)`,
    [JSON.stringify(agents)],
  );
}

/** Inserts usage reports (ids mapped). */
export async function insertImportedUsage(sql: SqlClient, reports: readonly UsageLine[]): Promise<void> {
  if (reports.length === 0) return;
  await sql.query(
    `INSERT INTO "TurnUsageReport" (id, "turnId", "callId", "agentId", model, "inputTokens", "outputTokens", "cacheReadTokens",
        "cacheWriteTokens", cost, "costSource", "createdAt")
     SELECT r.id, r."turnId", r."callId", r."agentId", r.model, r."inputTokens"::bigint, r."outputTokens"::bigint,
        r."cacheReadTokens"::bigint, r."cacheWriteTokens"::bigint, r.cost, r."costSource"::"CostSource", ${UTC('r."createdAt"')}
     FROM jsonb_to_recordset($1::jsonb) AS r(id text, "turnId" text, "callId" text, "agentId" text, model text, "inputTokens" text,
        "outputTokens" text, "cacheReadTokens" text, "cacheWriteTokens" text, cost float8, "costSource" text, "createdAt" text)`,
    [JSON.stringify(reports)],
  );
}

/** Inserts one attachment (id mapped; a BYTES one's blob already kept with `keepBlob`). */
export async function insertImportedAttachment(sql: SqlClient, workspaceId: string, a: AttachmentLine): Promise<void> {
  await sql.query(
    `INSERT INTO "Attachment" (id, "workspaceId", "sessionId", name, "mimeType", size, sha256, kind, content, "blobSha256", width, height,
        pages, url, "providerFile", "createdAt")
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8::"AttachmentKind", $9, $10, $11, $12, $13, $14, $15::jsonb, ${UTC('$16::text')})`,
    [
      a.id,
      workspaceId,
      a.sessionId,
      a.name,
      a.mimeType,
      a.size,
      a.sha256,
      a.kind,
      a.content,
      a.kind === 'BYTES' ? a.sha256 : null,
      a.width,
      a.height,
      a.pages,
      a.url,
      a.providerFile === null ? null : JSON.stringify(a.providerFile),
      a.createdAt,
    ],
  );
}

/** The text parts of `r.parts` joined by newlines, as appends derive a message's `text`. */
const JOINED_TEXT = `(SELECT coalesce(string_agg(x.p->>'text', E'\\n' ORDER BY x.o), '')
     FROM jsonb_array_elements(r.parts) WITH ORDINALITY AS x(p, o) WHERE x.p->>'type' = 'text')`;

/** Inserts messages (ids and references mapped); `text` and the tool call and result ids are derived from the parts in SQL. */
export async function insertImportedMessages(sql: SqlClient, messages: readonly MessageLine[]): Promise<void> {
  if (messages.length === 0) return;
  await sql.query(
    `INSERT INTO "Message" (id, "sessionId", position, role, parts, text, "toolCallIds", "toolResultIds", generating, "tokensO200k",
        "tokensCl100k", "turnId", "agentId", "createdAt", "updatedAt")
     SELECT r.id, r."sessionId", r.position, r.role::"MessageRole", r.parts, ${JOINED_TEXT},
        ARRAY(SELECT x->>'callId' FROM jsonb_array_elements(r.parts) WITH ORDINALITY AS t(x, o) WHERE x->>'type' = 'toolCall' ORDER BY o),
        ARRAY(SELECT x->>'callId' FROM jsonb_array_elements(r.parts) WITH ORDINALITY AS t(x, o) WHERE x->>'type' = 'toolResult' ORDER BY o),
        r.generating, r."tokensO200k", r."tokensCl100k", r."turnId", r."agentId", ${UTC('r."createdAt"')}, ${UTC('r."updatedAt"')}
     FROM jsonb_to_recordset($1::jsonb) AS r(id text, "sessionId" text, position int, role text, parts jsonb, generating boolean, "tokensO200k" int, "tokensCl100k" int, "turnId" text, "agentId" text,
        "createdAt" text, "updatedAt" text)`,
    [JSON.stringify(messages)],
  );
}

/** Inserts compactions (ids mapped). */
export async function insertImportedCompactions(sql: SqlClient, rows: readonly CompactionLine[]): Promise<void> {
  if (rows.length === 0) return;
  await sql.query(
    `INSERT INTO "Compaction" (id, "sessionId", ordinal, "uptoIndex", summary, "extractedContext", "tokensO200k", "tokensCl100k", "createdAt")
     SELECT r.id, r."sessionId", r.ordinal, r."uptoIndex", r.summary, r."extractedContext", r."tokensO200k", r."tokensCl100k",
        ${UTC('r."createdAt"')}
     FROM jsonb_to_recordset($1::jsonb) AS r(id text, "sessionId" text, ordinal int, "uptoIndex" int, summary text, "extractedContext" jsonb,
        "tokensO200k" int, "tokensCl100k" int, "createdAt" text)`,
    [JSON.stringify(rows)],
  );
}

/** Inserts history transforms (ids and message references mapped). */
export async function insertImportedTransforms(sql: SqlClient, rows: readonly TransformLine[]): Promise<void> {
  if (rows.length === 0) return;
  await sql.query(
    `INSERT INTO "MessageTransform" (id, "sessionId", ordinal, kind, "messageId", position, reason, replacement, "tokensO200k",
        "tokensCl100k", "createdAt")
     SELECT r.id, r."sessionId", r.ordinal, r.kind::"MessageTransformKind", r."messageId", r.position, r.reason, r.replacement,
        r."tokensO200k", r."tokensCl100k", ${UTC('r."createdAt"')}
     FROM jsonb_to_recordset($1::jsonb) AS r(id text, "sessionId" text, ordinal int, kind text, "messageId" text, position int,
        reason text, replacement text, "tokensO200k" int, "tokensCl100k" int, "createdAt" text)`,
    [JSON.stringify(rows)],
  );
}

/** The id and role of the message at `position` owned by `sessionId`, or null. */
export async function findMessageAt(sql: SqlClient, sessionId: string, position: number): Promise<{ id: string; role: string } | null> {
  const [row] = await sql.query<{ id: string; role: string }>('SELECT id, role FROM "Message" WHERE "sessionId" = $1 AND position = $2', [
    sessionId,
    position,
  ]);
  return row ?? null;
}
