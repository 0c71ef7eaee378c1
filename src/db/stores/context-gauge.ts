/**
 * The statements behind `Session.contextGauge` (services/context-gauge.ts): the applicable
 * compaction with whether any session of the lineage has attachments, and the attachment parts of
 * the messages in some ranges. The light rows come from messages.ts (`readLightPage`).
 */
import type { LineageSession, Segment } from '../../domain/lineage.js';
import type { MessageRole } from '../../domain/types.js';
import type { Compaction } from '../../generated/prisma/client.js';
import { SqlParams, type SqlClient } from '../sql.js';
import { latestCompactionSql } from './compactions.js';

export interface GaugeBasics {
  compaction: Pick<Compaction, 'id' | 'uptoIndex' | 'summary' | 'extractedContext'> | null;
  /** Some session of `sessionIds` has an attachment (then its messages' attachment parts are worth reading). */
  hasAttachments: boolean;
}

/** The compaction that applies to `session`, and whether the sessions it sees messages of have attachments, in one statement. */
export async function readGaugeBasics(
  sql: SqlClient,
  session: Pick<LineageSession, 'id' | 'lineage'>,
  sessionIds: readonly string[],
): Promise<GaugeBasics> {
  const p = new SqlParams();
  const compaction = latestCompactionSql(p, session);
  const ids = p.add(sessionIds, '::text[]');
  const [row] = await sql.query<GaugeBasics>(
    `SELECT (SELECT json_build_object('id', c.id, 'uptoIndex', c."uptoIndex", 'summary', c.summary, 'extractedContext', c."extractedContext")
             FROM (${compaction}) c) AS compaction,
       EXISTS (SELECT 1 FROM "Attachment" a WHERE a."sessionId" = ANY(${ids})) AS "hasAttachments"`,
    p.values,
  );
  return row;
}

/** An attachment part as stored in a message's parts (domain/types.ts, AttachmentStoredPart). */
export interface GaugeAttachmentRow {
  position: number;
  role: MessageRole;
  part: { mimeType?: string; size?: number; width?: number; height?: number; pages?: number };
}

/** The attachment parts of the finished messages in `segments`, in position order. */
export function readAttachmentParts(sql: SqlClient, segments: readonly Segment[]): Promise<GaugeAttachmentRow[]> {
  if (segments.length === 0) return Promise.resolve([]);
  const p = new SqlParams();
  const sids = p.add(
    segments.map((s) => s.sessionId),
    '::text[]',
  );
  const los = p.add(
    segments.map((s) => s.start),
    '::int[]',
  );
  const his = p.add(
    segments.map((s) => s.end),
    '::int[]',
  );
  return sql.query<GaugeAttachmentRow>(
    `SELECT m.position, m.role, part FROM unnest(${sids}, ${los}, ${his}) AS g(sid, lo, hi)
     JOIN "Message" m ON m."sessionId" = g.sid AND m.position >= g.lo AND m.position < g.hi
     CROSS JOIN LATERAL jsonb_array_elements(m.parts) AS part
     WHERE NOT m.generating AND m.parts @> '[{"type":"attachment"}]' AND part->>'type' = 'attachment'
     ORDER BY m.position`,
    p.values,
  );
}
