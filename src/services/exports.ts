/**
 * `GET /export/sessions/<id>`: a session (with `tree`, every fork and sub-agent session below it)
 * as export lines (domain/export-format.ts), produced page by page so that memory stays bounded
 * however long the session: messages by position (`ExportPaging`), turns by number, the rest by ordinal or id, one
 * attachment's bytes at a time. A fork needs the sessions it was forked from to be read, so its
 * ancestors come first, whole. A sub-agent session exported without the session of its turn
 * becomes a root (its parentTurnId would name nothing). Each session's rows are read up to the
 * counts its row had when the export began (messageCount, turnCount, …), so the file stays
 * consistent while the session is written to.
 */
import type { SqlClient } from '../db/sql.js';
import * as store from '../db/stores/exports.js';
import { notFound } from '../domain/errors.js';
import { EXPORT_FORMAT, EXPORT_VERSION, type SessionLine } from '../domain/export-format.js';
import type { LineageEntry } from '../domain/lineage.js';
import type { Session } from '../generated/prisma/client.js';

/** A page of messages: how many, and how much content at most (the first message of a page always comes). */
export interface ExportPaging {
  messages: number;
  bytes: number;
}

/**
 * On PGlite a page's statement runs on the request thread: 500 messages took about 100 ms there,
 * 100 about 20, within the 50 ms rule. On PostgreSQL larger pages cost fewer round trips.
 */
export const EXPORT_PAGING = {
  oneConnection: { messages: 100, bytes: 1024 * 1024 },
  pooled: { messages: 500, bytes: 4 * 1024 * 1024 },
} satisfies Record<string, ExportPaging>;
const PAGE = 100;

const line = (value: unknown) => `${JSON.stringify(value)}\n`;

export class ExportService {
  constructor(
    private readonly sql: SqlClient,
    private readonly paging: ExportPaging,
  ) {}

  /**
   * The sessions exported, in the order they are written (every session after those it refers
   * to); NOT_FOUND when the workspace has no such session. Checked before the response starts.
   */
  async plan(workspaceId: string, sessionId: string, tree: boolean): Promise<Session[]> {
    const asked = await store.readSessionForExport(this.sql, workspaceId, sessionId);
    if (!asked) throw notFound('Session', sessionId);
    const ids: string[] = [...asked.ancestorIds, asked.id];
    if (tree) {
      let level = [asked.id];
      while (level.length > 0) {
        level = await store.readChildSessionIds(this.sql, workspaceId, level);
        ids.push(...level);
      }
    }
    const rows = new Map<string, Session>();
    for (let i = 0; i < ids.length; i += PAGE) {
      for (const row of await store.readSessionsForExport(this.sql, workspaceId, ids.slice(i, i + PAGE))) rows.set(row.id, row);
    }
    return ids.map((id) => rows.get(id)).filter((row): row is Session => row !== undefined);
  }

  /** The lines of `sessions` (from `plan`), one chunk of text at a time. */
  async *lines(workspaceId: string, askedId: string, tree: boolean, sessions: Session[]): AsyncGenerator<string> {
    yield line({
      type: 'header',
      format: EXPORT_FORMAT,
      version: EXPORT_VERSION,
      exportedAt: new Date().toISOString(),
      sessionId: askedId,
      tree,
    });
    const exported = new Set(sessions.map((s) => s.id));
    let messages = 0;
    for (const session of sessions) {
      let detached = false;
      if (session.parentTurnId) {
        const owner = await store.sessionOfTurn(this.sql, session.parentTurnId);
        detached = owner === null || !exported.has(owner);
      }
      yield line(sessionLine(session, detached));
      yield* this.pages(
        (after: number) => store.readTurnLines(this.sql, session.id, after, session.turnCount, PAGE),
        (t) => t.number,
        0,
      );
      yield* this.pages(
        (after: string) => store.readUsageLines(this.sql, session.id, after, session.turnCount, PAGE),
        (u) => u.id,
        '',
      );
      for await (const attachments of this.rawPages(
        (after: string) => store.readAttachmentLines(this.sql, session.id, after, PAGE),
        (a) => a.id,
        '',
      )) {
        for (const { blobSha256, ...attachment } of attachments) {
          const data = blobSha256 ? await store.readBlobBase64(this.sql, workspaceId, blobSha256) : null;
          yield line({ ...attachment, data });
        }
      }
      for await (const page of this.rawPages(
        (after: number) =>
          store.readMessageLines(this.sql, session.id, after, session.messageCount, this.paging.messages, this.paging.bytes),
        (m) => m.position,
        -1,
      )) {
        messages += page.length;
        yield page.map(line).join('');
      }
      yield* this.pages(
        (after: number) => store.readCompactionLines(this.sql, session.id, after, session.compactionCount, PAGE),
        (c) => c.ordinal,
        0,
      );
      yield* this.pages(
        (after: number) => store.readTransformLines(this.sql, session.id, after, session.transformCount, PAGE),
        (t) => t.ordinal,
        0,
      );
    }
    yield line({ type: 'end', sessions: sessions.length, messages });
  }

  private async *pages<Row, Key>(read: (after: Key) => Promise<Row[]>, keyOf: (row: Row) => Key, first: Key): AsyncGenerator<string> {
    for await (const page of this.rawPages(read, keyOf, first)) yield page.map(line).join('');
  }

  /** Keyset pages until one comes back empty, yielding to the event loop after each. */
  private async *rawPages<Row, Key>(read: (after: Key) => Promise<Row[]>, keyOf: (row: Row) => Key, first: Key): AsyncGenerator<Row[]> {
    let after = first;
    for (;;) {
      const page = await read(after);
      if (page.length === 0) return;
      yield page;
      after = keyOf(page[page.length - 1]);
      // On PGlite a page's statement runs on this thread and resolves without leaving it: let
      // other requests (and timers) in between pages, however fast the client reads.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
}

function sessionLine(s: Session, detached: boolean): SessionLine {
  return {
    type: 'session',
    id: s.id,
    kind: detached ? 'ROOT' : s.kind,
    title: s.title,
    settings: s.settings,
    metadata: s.metadata,
    parentId: s.parentId,
    rootId: s.rootId,
    ancestorIds: s.ancestorIds,
    depth: s.depth,
    forkIndex: s.forkIndex,
    forkPointMessageId: s.forkPointMessageId,
    lineage: s.lineage as unknown as LineageEntry[],
    parentTurnId: detached ? null : s.parentTurnId,
    parentMessageCount: detached ? null : s.parentMessageCount,
    agentId: s.agentId,
    messageCount: s.messageCount,
    compactionCount: s.compactionCount,
    transformCount: s.transformCount,
    turnCount: s.turnCount,
    activeTurnId: s.activeTurnId,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
  };
}
