import type { AssemblyCaches, WindowHint } from '../caches/index.js';
import type { Sql } from '../db/sql.js';
import { needsBytes, type ContextFormat } from '../domain/assembly/index.js';
import { type AttachmentSummary, findAttachmentSummaries, findAttachments, readAttachmentBytes } from '../db/stores/attachments.js';
import { readLightPage, readLightSegments, readParts, type LightRow } from '../db/stores/messages.js';
import { readAssemblyState, type AssemblyState } from '../db/stores/assembly-state.js';
import { trimWindowEdge, WindowPlan, type WindowPaging } from '../domain/assembly/window.js';
import { notFound } from '../domain/errors.js';
import { markImmutable } from '../domain/immutable.js';
import { clipSegments, type LineageSession, type Segment } from '../domain/lineage.js';
import type { HistoryTransforms } from '../domain/transforms.js';
import type { DomainMessage, ResolvedAttachment, StoredPart, TokenEncoding } from '../domain/types.js';
import type { PrismaClient } from '../generated/prisma/client.js';

/** A known session's newest messages [from, messageCount), newest first, read with the session. */
export interface NewestPage {
  from: number;
  rows: LightRow[];
}
export interface LoadedWindow {
  /** The window's messages, oldest first, with their parts. */
  messages: DomainMessage[];
  /** The average lower-bound cost of the messages counted (null when none were). */
  costPerRow: number | null;
}

/**
 * The reads of context assembly: the session with what its turns say, the window of messages the
 * window rule (domain/assembly/window.ts) keeps, paged newest first from the rows cache where it
 * has them, else from the database; their parts, the leading system message and the attachments
 * they reference. It reads, and fills the caches it reads through; it never writes to the database.
 */
export class AssemblyReads {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly sql: Sql,
    private readonly paging: WindowPaging,
    private readonly caches: AssemblyCaches,
  ) {}

  /**
   * The session and what its turns say, and the prefix of its last assembly in `format`; for a known
   * session, also its compaction and what the rows cache lacks of its newest messages.
   */
  readSession(
    workspaceId: string,
    sessionId: string,
    turnId: string | null,
    known: { hint: WindowHint; newest: number } | null,
    format: ContextFormat | null = null,
  ): Promise<AssemblyState | null> {
    const from = known ? Math.max(known.hint.forkIndex ?? 0, this.caches.rows.range(sessionId)?.hi ?? 0) : 0;
    return readAssemblyState(
      this.sql,
      workspaceId,
      sessionId,
      turnId,
      known ? { session: known.hint, from, newest: known.newest } : null,
      format,
    );
  }

  /**
   * The messages worth assembling, oldest first, as the window rule (domain/assembly/window.ts)
   * decides them: from the rows cache where it has them, else read a page at a time (the first
   * while the compaction is read, or already read with the session). Without stored counts,
   * everything after the compaction is loaded (`loadAll`).
   */
  async loadWindow(
    session: LineageSession,
    segments: Segment[],
    uptoRead: Promise<number>,
    budget: number,
    encoding: Exclude<TokenEncoding, 'CHARS_DIV_4'>,
    newest: NewestPage | null,
    transforms: HistoryTransforms,
    framing = 1,
  ): Promise<LoadedWindow> {
    const count = session.messageCount;
    const plan = new WindowPlan(budget, encoding, this.paging, framing);
    const newestFirst: LightRow[] = [];
    // Rows read from the database, by session, for the rows cache.
    const fetched = new Map<string, LightRow[]>();
    const keep = (sessionId: string, rows: LightRow[]) => {
      const list = fetched.get(sessionId);
      if (list) list.push(...rows);
      else fetched.set(sessionId, rows);
    };
    let upto: number | null = null;
    for (const segment of [...clipSegments(segments, 0, count)].reverse()) {
      for (let hi = segment.end; !plan.done && hi > Math.max(segment.start, upto ?? 0); ) {
        const floor = Math.max(segment.start, upto ?? 0);
        const cached = this.caches.rows.range(segment.sessionId);
        let rows: LightRow[];
        if (newest && segment.sessionId === session.id && hi === count && newest.from < count) {
          // Read with the session: [from, count).
          rows = newest.rows;
          newest = null;
          keep(segment.sessionId, rows);
        } else if (cached && cached.lo < hi && hi <= cached.hi) {
          rows = this.caches.rows.newestFirst(segment.sessionId, Math.max(cached.lo, floor), hi);
        } else {
          // What is kept below `hi` is not read again.
          const lo = Math.max(floor, hi - plan.nextPageSize(), cached && cached.hi < hi ? cached.hi : 0);
          rows = await readLightPage(this.sql, segment.sessionId, lo, hi);
          keep(segment.sessionId, rows);
        }
        // The first page was read before the compaction's end was known.
        upto ??= await uptoRead;
        if (rows.length === 0) break;
        for (const row of rows) {
          if (plan.done || row.position < upto) break;
          newestFirst.push(row);
          // A message counted before counts were stored bounds nothing: load everything.
          if (!plan.take(windowView(row, transforms))) return this.loadAll(session, segments, uptoRead);
        }
        hi = rows[rows.length - 1].position;
      }
      if (plan.done || (upto !== null && segment.start <= upto)) break;
    }
    for (const [sessionId, rows] of fetched) this.caches.rows.add(sessionId, rows);
    const rows = trimWindowEdge(newestFirst.reverse(), upto ?? 0);
    return { messages: await this.withParts(rows), costPerRow: plan.costPerRow };
  }

  /**
   * The message at position 0 when it is a finished SYSTEM message, with its parts. A finished
   * row never changes, so it is read once per session owning position 0 (caches/first-rows.ts).
   */
  async leadingSystemMessage(segments: Segment[]): Promise<DomainMessage | null> {
    const [first] = clipSegments(segments, 0, 1);
    if (!first) return null;
    let row: LightRow | null | undefined = this.caches.firstRows.get(first.sessionId);
    if (row === undefined) {
      const rows = await readLightPage(this.sql, first.sessionId, 0, 1);
      row = rows[0] ?? null;
      if (row) this.caches.firstRows.keep(first.sessionId, row);
    }
    if (row?.role !== 'SYSTEM' || row.generating) return null;
    return (await this.withParts([row]))[0];
  }

  /** Every message after the compaction: without a budget (or a countable one), nothing bounds the window. */
  async loadAll(session: LineageSession, segments: Segment[], uptoRead: Promise<number>): Promise<LoadedWindow> {
    const scope = clipSegments(segments, await uptoRead, session.messageCount);
    const rows = await readLightSegments(this.prisma, scope);
    return { messages: await this.withParts(rows), costPerRow: null };
  }

  /** The rows as messages with their parts: finished messages' from the cache, the others (generating ones too) in one query. */
  async withParts(rows: LightRow[]): Promise<DomainMessage[]> {
    const parts: (StoredPart[] | undefined)[] = new Array(rows.length);
    let missing: string[] | null = null;
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      parts[i] = row.generating ? undefined : this.caches.parts.get(row.id);
      if (parts[i] === undefined) (missing ??= []).push(row.id);
    }
    if (missing) {
      const found = await readParts(this.sql, missing);
      const byId = new Map<string, StoredPart[]>();
      for (const row of found) {
        byId.set(row.id, row.parts);
        // A finished message never changes: its parts are frozen, and what is derived from them kept.
        if (!row.generating) this.caches.parts.set(row.id, markImmutable(row.parts), row.sessionId);
      }
      for (let i = 0; i < rows.length; i++) {
        if (parts[i] !== undefined) continue;
        parts[i] = byId.get(rows[i].id);
        // Only a delete running alongside removes a message between the two reads.
        if (parts[i] === undefined) throw notFound('Message', rows[i].id);
      }
    }
    return rows.map((row, i) => ({
      id: row.id,
      index: row.position,
      role: row.role,
      parts: parts[i]!,
      generating: row.generating,
      tokens: row.tokensO200k === null || row.tokensCl100k === null ? null : { O200K_BASE: row.tokensO200k, CL100K_BASE: row.tokensCl100k },
    }));
  }

  /**
   * The attachments the messages reference; by reference, without their text (a reference block
   * needs only its length). The bytes of BYTES attachments are read newest message first while
   * their sizes stay within `mediaBytes` (the context's cap); older ones are left unread (`bytes`
   * null), and assembly reports them.
   */
  async loadAttachments(
    workspaceId: string,
    messages: DomainMessage[],
    how: { byReference: boolean; format: ContextFormat; mediaBytes: number },
  ): Promise<Map<string, ResolvedAttachment>> {
    const { byReference, format } = how;
    const ids = new Set<string>();
    const withBytes: string[] = [];
    let room = how.mediaBytes;
    for (let m = messages.length - 1; m >= 0; m--) {
      for (const part of messages[m].parts) {
        if (part.type !== 'attachment' || ids.has(part.attachmentId)) continue;
        ids.add(part.attachmentId);
        // Only the bytes the format will send, in that message's place (needsBytes: the resolver's rule).
        if (needsBytes(format, messages[m].role, part) && part.size <= room) {
          room -= part.size;
          withBytes.push(part.attachmentId);
        }
      }
    }
    if (ids.size === 0) return new Map();
    const [rows, blobs] = await Promise.all([
      findAttachmentSummaries(this.sql, workspaceId, [...ids]),
      withBytes.length > 0 ? readAttachmentBytes(this.sql, workspaceId, withBytes) : [],
    ]);
    const bytesOf = new Map(blobs.map((b) => [b.id, b.bytes]));
    const textOf = byReference ? new Map<string, string | null>() : await this.attachmentTexts(workspaceId, rows);
    return new Map(
      rows.map((row): [string, ResolvedAttachment] => {
        const held = {
          id: row.id,
          name: row.name,
          mimeType: row.mimeType,
          size: row.size,
          kind: row.kind,
          sha256: row.sha256,
          bytes: bytesOf.get(row.id) ?? null,
          width: row.width,
          height: row.height,
          pages: row.pages,
          url: row.url,
          providerFile: row.providerFile,
        };
        if (row.chars === null) {
          // Bytes, a URL or a provider file: no text, which is no problem (the resolver sends them as media).
          return [
            row.id,
            row.kind === 'TEXT'
              ? { ...held, content: null, problem: 'the stored attachment has no text content' }
              : { ...held, content: null },
          ];
        }
        return [row.id, byReference ? { ...held, content: null, chars: row.chars } : { ...held, content: textOf.get(row.id) ?? null }];
      }),
    );
  }

  /** The whole text of the TEXT attachments among `rows` (INLINE mode). */
  private async attachmentTexts(workspaceId: string, rows: readonly AttachmentSummary[]): Promise<Map<string, string | null>> {
    const ids = rows.filter((row) => row.chars !== null).map((row) => row.id);
    if (ids.length === 0) return new Map();
    return new Map((await findAttachments(this.prisma, workspaceId, ids)).map((row) => [row.id, row.content]));
  }
}

/** What the window rule sees of a row: a hidden message costs nothing (as a generating one), a redacted one its replacement. */
function windowView(row: LightRow, transforms: HistoryTransforms): LightRow {
  if (transforms.hidden.has(row.id)) return { ...row, generating: true };
  const redaction = transforms.redacted.get(row.id);
  if (redaction) return { ...row, tokensO200k: redaction.tokens.O200K_BASE, tokensCl100k: redaction.tokens.CL100K_BASE };
  return row;
}
