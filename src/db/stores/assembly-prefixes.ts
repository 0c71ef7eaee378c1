/**
 * Every statement on the `AssemblyPrefix` table: the payload prefix of a session's last assembly in
 * each format (domain/assembly/payload-prefix.ts), which the next assembly in that format compares
 * with (`AssembledContext.reusedPrefixTokens`). Read with the session (`previousPrefixSql`, a part of
 * the assembly read), written by one upsert when it changed.
 */
import type { PayloadPrefix } from '../../domain/assembly/payload-prefix.js';
import type { AssemblyPrefix } from '../../generated/prisma/client.js';
import type { SqlClient, SqlParams } from '../sql.js';
import { insertSelectSql, type InsertShape } from './columns.js';

/** The columns the assembly read adds: the session's previous prefix in the format, null when it has none. */
export interface PreviousPrefixColumns {
  prefixHashes: Uint8Array | null;
  prefixTokens: number[] | null;
}

/** `"prefixHashes"` and `"prefixTokens"` of the session aliased `session` in `format`, for a select list. */
export function previousPrefixSql(params: SqlParams, session: string, format: string): string {
  const f = params.add(format);
  return `(SELECT ap.hashes FROM "AssemblyPrefix" ap WHERE ap."sessionId" = ${session}.id AND ap.format = ${f}) AS "prefixHashes",
       (SELECT ap.tokens FROM "AssemblyPrefix" ap WHERE ap."sessionId" = ${session}.id AND ap.format = ${f}) AS "prefixTokens"`;
}

/** The previous prefix those columns hold (null: none). */
export function previousPrefixOf(row: PreviousPrefixColumns): PayloadPrefix | null {
  return row.prefixHashes && row.prefixTokens ? { hashes: row.prefixHashes, tokens: row.prefixTokens } : null;
}

export const ASSEMBLY_PREFIX_INSERT: InsertShape<AssemblyPrefix> = {
  table: 'AssemblyPrefix',
  values: { sessionId: '$1', format: '$2', hashes: '$3::bytea', tokens: '$4::int[]', updatedAt: 'now()' },
};

/*
 * One statement. Two assemblies of a session racing in one format: each upsert waits for the
 * other's row lock, the last one stays (either is a prefix the provider was just sent). A prefix
 * that is already there is not written again (the WHERE of the update). A session deleted before
 * the statement: nothing written (EXISTS); deleted while it runs: the foreign key refuses the row,
 * and that too is nothing to store.
 */
const UPSERT_SQL = `${insertSelectSql(ASSEMBLY_PREFIX_INSERT, 'WHERE EXISTS (SELECT 1 FROM "Session" WHERE id = $1)')}
     ON CONFLICT ("sessionId", format) DO UPDATE SET hashes = EXCLUDED.hashes, tokens = EXCLUDED.tokens, "updatedAt" = EXCLUDED."updatedAt"
     WHERE "AssemblyPrefix".hashes IS DISTINCT FROM EXCLUDED.hashes OR "AssemblyPrefix".tokens IS DISTINCT FROM EXCLUDED.tokens`;

/** Stores `prefix` as the session's last in `format`, in one statement (see above). */
export async function writeAssemblyPrefix(sql: SqlClient, sessionId: string, format: string, prefix: PayloadPrefix): Promise<void> {
  const hashes = Buffer.from(prefix.hashes.buffer, prefix.hashes.byteOffset, prefix.hashes.byteLength);
  try {
    await sql.query(UPSERT_SQL, [sessionId, format, hashes, prefix.tokens], { name: 'sg_assembly_prefix_upsert' });
  } catch (error) {
    if ((error as { code?: string }).code !== '23503') throw error;
  }
}
