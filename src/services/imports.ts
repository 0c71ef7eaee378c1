/**
 * `POST /import` and `importSessions`: export lines (domain/export-format.ts) stored as new
 * sessions of the caller's workspace. Two passes. The first reads the body line by line (each
 * line and the whole body capped), checks every line in its place (`ExportChecker`) and keeps it
 * (`ImportSpool`); a line it cannot read is refused with its number and nothing is written. The
 * second writes the file in one transaction, with new ids for every row and every reference
 * mapped (sessions, turns and attachments by a map of their ids; messages by their owner and
 * position, so no map grows with the messages), timestamps kept, in batches that yield to the
 * event loop between them.
 */
import { uuidv7 } from '../db/ids.js';
import type { Sql, SqlClient } from '../db/sql.js';
import { keepBlob } from '../db/stores/attachments.js';
import * as store from '../db/stores/exports.js';
import { decodeBase64 } from '../domain/attachment-bytes.js';
import { DomainError } from '../domain/errors.js';
import { type CheckedSession, ExportChecker } from '../domain/export-check.js';
import { type ExportLine, LineError, type MessageLine, type SessionLine } from '../domain/export-format.js';
import { checkLine } from '../domain/export-line.js';
import { importLineBytes, LIMITS, type TextCaps } from '../domain/limits.js';
import { ownerOf } from '../domain/lineage.js';
import type { Session } from '../generated/prisma/client.js';
import type { TokenPrecount } from '../caches/token-precount.js';
import { countStoredTokens } from '../domain/tokens.js';
import type { StoredPart } from '../domain/types.js';
import { ImportSpool } from './import-spool.js';
import { precountFinished } from './message-appends.js';

export interface ImportResult {
  /** Each imported session: its new id and its id in the file, in file order. */
  sessions: { id: string; sourceId: string }[];
}

/**
 * Rows written per statement: on PGlite a statement runs on the request thread, and 500 messages
 * took about 100 ms there (each row's search vector is computed), 100 about 20; on PostgreSQL the
 * statement runs elsewhere and larger batches cost fewer round trips. A batch also ends at one
 * full-size string's worth of line text (`TextCaps.stringLength`, which is what one append may
 * carry within the same rule).
 */
const BATCH_ROWS = { oneConnection: 100, pooled: 500 };
/** Characters checked between two yields to the event loop in the first pass. */
const YIELD_CHARS = 1024 * 1024;

const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

export class ImportService {
  constructor(
    private readonly sql: Sql,
    private readonly caps: TextCaps,
    /** Counts the long texts of imported messages in the token worker (see TreeWriter's messages). */
    private readonly precount: TokenPrecount,
  ) {}

  /** `importSessions`: a small body given whole; the imported sessions' rows, in file order. */
  async importSessions(workspaceId: string, lines: string): Promise<Session[]> {
    const { sessions } = await this.importBody(workspaceId, lines);
    const rows = new Map(
      (
        await store.readSessionsForExport(
          this.sql,
          workspaceId,
          sessions.map((s) => s.id),
        )
      ).map((row) => [row.id, row]),
    );
    return sessions.map((s) => rows.get(s.id)!);
  }

  /** Imports a body given as chunks (an HTTP request's stream) or as one string. */
  async importBody(workspaceId: string, body: AsyncIterable<Uint8Array | string> | string): Promise<ImportResult> {
    const spool = new ImportSpool();
    try {
      const checker = await this.check(typeof body === 'string' ? [body] : body, spool);
      return await this.write(workspaceId, checker, spool);
    } finally {
      await spool.close();
    }
  }

  /** First pass: every line read, checked in place and kept. */
  private async check(
    body: Iterable<Uint8Array | string> | AsyncIterable<Uint8Array | string>,
    spool: ImportSpool,
  ): Promise<ExportChecker> {
    const checker = new ExportChecker(this.caps);
    const lineCap = importLineBytes(this.caps);
    const decoder = new TextDecoder('utf-8', { fatal: false });
    let pending = '';
    let lineNumber = 0;
    let total = 0;
    let sinceYield = 0;
    const take = async (text: string) => {
      lineNumber++;
      if (text.endsWith('\r')) text = text.slice(0, -1);
      if (text.trim() !== '') {
        try {
          checker.check(checkLine(text));
        } catch (error) {
          throw asLineError(error, lineNumber);
        }
      }
      await spool.add(text);
      sinceYield += text.length;
      if (sinceYield >= YIELD_CHARS) {
        sinceYield = 0;
        await nextTick();
      }
    };
    for await (const chunk of body) {
      const text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
      total += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
      if (total > LIMITS.importBytes)
        throw new LineError(lineNumber + 1, `the body is larger than ${LIMITS.importBytes} bytes, the cap on this server.`);
      pending += text;
      let newline = pending.indexOf('\n');
      let start = 0;
      while (newline >= 0) {
        await take(pending.slice(start, newline));
        start = newline + 1;
        newline = pending.indexOf('\n', start);
      }
      pending = pending.slice(start);
      if (pending.length > lineCap)
        throw new LineError(lineNumber + 1, `the line is longer than ${lineCap} bytes, the cap on this server.`);
    }
    pending += decoder.decode();
    if (pending !== '') await take(pending);
    try {
      checker.finish();
    } catch (error) {
      throw asLineError(error, lineNumber);
    }
    return checker;
  }

  /** Second pass: the kept lines written in one transaction, under new ids. */
  private write(workspaceId: string, checker: ExportChecker, spool: ImportSpool): Promise<ImportResult> {
    return this.sql.transaction(async (sql) => {
      const writer = new TreeWriter(sql, workspaceId, checker, this.precount, {
        rows: this.sql.oneConnection ? BATCH_ROWS.oneConnection : BATCH_ROWS.pooled,
        chars: this.caps.stringLength,
      });
      let lineNumber = 0;
      for await (const text of spool.read()) {
        lineNumber++;
        if (text.trim() === '') continue;
        try {
          await writer.take(JSON.parse(text) as ExportLine, lineNumber, text.length);
        } catch (error) {
          throw asLineError(error, writer.batchLine ?? lineNumber);
        }
      }
      try {
        await writer.flush();
      } catch (error) {
        throw asLineError(error, writer.batchLine ?? lineNumber);
      }
      return { sessions: writer.imported };
    });
  }
}

/** A refusal of a line: a domain error or a statement the database refused for its data (classes 22 and 23). */
function asLineError(error: unknown, line: number): unknown {
  if (error instanceof LineError) return error;
  if (error instanceof DomainError) return new LineError(line, error.message);
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^2[23]/.test(code)) return new LineError(line, `the database refused it: ${(error as Error).message}`);
  return error;
}

type Batchable = Exclude<ExportLine, { type: 'header' | 'session' | 'attachment' | 'end' }>;

/** The second pass's state: the id maps and the batch being gathered. */
class TreeWriter {
  readonly imported: ImportResult['sessions'] = [];
  private readonly sessionIds = new Map<string, string>();
  private readonly turnIds = new Map<string, string>();
  private readonly attachmentIds = new Map<string, string>();
  private batch: Batchable[] = [];
  private batchChars = 0;
  /** The line the batch being gathered starts at (what a refusal of its statement names). */
  batchLine: number | null = null;
  private current: SessionLine | null = null;

  constructor(
    private readonly sql: SqlClient,
    private readonly workspaceId: string,
    private readonly checker: ExportChecker,
    private readonly precount: TokenPrecount,
    private readonly limits: { rows: number; chars: number },
  ) {}

  async take(line: ExportLine, lineNumber: number, chars: number): Promise<void> {
    if (line.type === 'header') return;
    if (
      this.batch.length > 0 &&
      (this.batch[0].type !== line.type || this.batch.length >= this.limits.rows || this.batchChars >= this.limits.chars)
    ) {
      await this.flush();
    }
    switch (line.type) {
      case 'session':
        await this.closeSession();
        return this.openSession(line);
      case 'end':
        return this.closeSession();
      case 'attachment':
        return this.attachment(line);
    }
    if (this.batch.length === 0) this.batchLine = lineNumber;
    this.batch.push(line);
    this.batchChars += chars;
  }

  async flush(): Promise<void> {
    const batch = this.batch;
    if (batch.length === 0) return;
    this.batch = [];
    this.batchChars = 0;
    const sessionId = this.newSession(this.current!.id);
    switch (batch[0].type) {
      case 'turn':
        await store.insertImportedTurns(
          this.sql,
          (batch as Extract<Batchable, { type: 'turn' }>[]).map((t) => ({ ...t, id: this.newId(this.turnIds, t.id), sessionId })),
        );
        break;
      case 'usage':
        await store.insertImportedUsage(
          this.sql,
          (batch as Extract<Batchable, { type: 'usage' }>[]).map((u) => ({ ...u, id: uuidv7(), turnId: this.turnIds.get(u.turnId)! })),
        );
        break;
      case 'message': {
        const rows = (batch as MessageLine[]).map((m) => ({
          ...m,
          id: uuidv7(),
          sessionId,
          turnId: m.turnId === null ? null : this.turnIds.get(m.turnId)!,
          parts: m.parts.map((p) =>
            p.type === 'attachment' ? { ...p, attachmentId: this.attachmentIds.get(p.attachmentId as string)! } : p,
          ),
        }));
        // A finished message's counts are counted here as an append counts them, never taken from
        // the file: the window and the gauge trust stored counts, and a file may hold none (the
        // ChatGPT and Claude importers), or wrong ones. Long texts go to the token worker first.
        // (The parts are stored parts: the first pass checked each as the server writes it.)
        const finished = rows.filter((m) => !m.generating);
        await precountFinished(
          this.precount,
          finished.map((m) => m.parts as unknown as StoredPart[]),
        );
        for (const m of finished) {
          const tokens = countStoredTokens(m.parts as unknown as StoredPart[], this.precount);
          m.tokensO200k = tokens.O200K_BASE;
          m.tokensCl100k = tokens.CL100K_BASE;
        }
        await store.insertImportedMessages(this.sql, rows);
        break;
      }
      case 'compaction':
        await store.insertImportedCompactions(
          this.sql,
          (batch as Extract<Batchable, { type: 'compaction' }>[]).map((c) => ({ ...c, id: uuidv7(), sessionId })),
        );
        break;
      case 'transform': {
        const rows = [];
        for (const t of batch as Extract<Batchable, { type: 'transform' }>[]) {
          const messageId = t.messageId === null ? null : await this.messageAt(this.checked(this.current!.id), t.position);
          rows.push({ ...t, id: uuidv7(), sessionId, messageId });
        }
        await store.insertImportedTransforms(this.sql, rows);
        break;
      }
    }
    this.batchLine = null;
    await nextTick();
  }

  private newId(map: Map<string, string>, old: string): string {
    const id = uuidv7();
    map.set(old, id);
    return id;
  }

  private newSession(old: string): string {
    return this.sessionIds.get(old)!;
  }

  private checked(old: string): CheckedSession {
    return this.checker.sessions.get(old)!;
  }

  /** The new id of the message at `position` as `session` (by its old id and lineage) sees it. */
  private async messageAt(session: CheckedSession, position: number): Promise<string> {
    const owner = ownerOf({ ...session.line, lineage: session.line.lineage }, position);
    const found = owner === null ? null : await store.findMessageAt(this.sql, this.newSession(owner), position);
    if (!found) throw new DomainError('BAD_USER_INPUT', `no message at position ${position} of session ${session.line.id}.`);
    return found.id;
  }

  private async openSession(s: SessionLine): Promise<void> {
    const id = this.newId(this.sessionIds, s.id);
    const forkPointMessageId = s.kind === 'FORK' ? await this.messageAt(this.checked(s.parentId!), s.forkIndex!) : null;
    await store.insertImportedSession(this.sql, this.workspaceId, {
      ...s,
      id,
      parentId: s.parentId === null ? null : this.newSession(s.parentId),
      rootId: s.rootId === s.id ? id : this.newSession(s.rootId),
      ancestorIds: s.ancestorIds.map((a) => this.newSession(a)),
      forkPointMessageId,
      lineage: s.lineage.map((entry) => ({ ...entry, sessionId: this.newSession(entry.sessionId) })),
      parentTurnId: s.parentTurnId === null ? null : this.turnIds.get(s.parentTurnId)!,
      activeTurnId: null,
    });
    this.imported.push({ id, sourceId: s.id });
    this.current = s;
  }

  private async closeSession(): Promise<void> {
    await this.flush();
    const s = this.current;
    if (s?.activeTurnId) await store.setImportedActiveTurn(this.sql, this.newSession(s.id), this.turnIds.get(s.activeTurnId)!);
    this.current = null;
  }

  private async attachment(a: Extract<ExportLine, { type: 'attachment' }>): Promise<void> {
    const id = this.newId(this.attachmentIds, a.id);
    if (a.kind === 'BYTES') await keepBlob(this.sql, this.workspaceId, a.sha256, decodeBase64(a.data!, '"data"'));
    await store.insertImportedAttachment(this.sql, this.workspaceId, { ...a, id, sessionId: this.newSession(a.sessionId) });
  }
}
