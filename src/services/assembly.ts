import { createHash } from 'node:crypto';
import {
  runAssembly,
  canonicalJson,
  DEFAULT_ATTACHMENT_MAX_CHARS,
  DEFAULT_CONTEXT_ATTACHMENT_MAX_CHARS,
  DEFAULT_KEEP_TOOL_CALL_ROUNDS,
  validateAssembleOptions,
  type AssembleContextOptions,
  type AttachmentMode,
  type AssembledContext,
  type ContextDecision,
  type ContextFormat,
} from '../domain/assembly/index.js';
import {
  DEFAULT_WINDOW_PAGING,
  earlierDecisions,
  firstPageSize,
  trimWindowEdge,
  WindowPlan,
  type EarlierWindow,
  type WindowPaging,
} from '../domain/assembly/window.js';
import type { DomainMessage, ResolvedAttachment, StoredPart, TokenEncoding } from '../domain/types.js';
import { clipSegments, historyMark, visibleSegments, type LineageSession, type Segment } from '../domain/lineage.js';
import { foldTransforms, type HistoryTransforms } from '../domain/transforms.js';
import { readTransforms } from '../db/stores/transforms.js';
import { markImmutable } from '../domain/immutable.js';
import type { Sql } from '../db/sql.js';
import { findAttachmentSummaries, findAttachments } from '../db/stores/attachments.js';
import { latestCompaction, type CompactionRow } from '../db/stores/compactions.js';
import { readIdsAndPositions, readLightPage, readLightSegments, readParts, type LightRow } from '../db/stores/messages.js';
import { readAssemblyState, type AssemblyState } from '../db/stores/sessions.js';
import { recordContext } from '../db/stores/turns.js';
import { notFound } from '../domain/errors.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { AssemblyCaches, type WindowHint } from '../caches/index.js';
import { DEFAULT_CACHE_CONFIG } from '../config.js';

export { DEFAULT_WINDOW_PAGING, type WindowPaging } from '../domain/assembly/window.js';

const FIRST_ROWS_MAX = 10_000;

/** A known session's newest messages [from, messageCount), newest first, read with the session. */
interface NewestPage {
  from: number;
  rows: LightRow[];
}
interface LoadedWindow {
  /** The window's messages, oldest first, with their parts. */
  messages: DomainMessage[];
  /** The average lower-bound cost of the messages counted (null when none were). */
  costPerRow: number | null;
}

export interface AssembleRequest {
  sessionId: string;
  maxTokens?: number | null;
  maxMessages?: number | null;
  keepToolCallRounds?: number | null;
  encoding?: TokenEncoding | null;
  system?: string | null;
  turnContext?: unknown;
  format?: ContextFormat | null;
  attachmentMaxChars?: number | null;
  contextAttachmentMaxChars?: number | null;
  keepSystemMessage?: boolean | null;
  attachmentMode?: AttachmentMode | null;
  includeAttachmentTool?: boolean | null;
  /** The id reference blocks (and problem messages) give an attachment: the client's opaque ID. */
  attachmentReferenceId?: (attachmentId: string) => string;
  /** Record the result as this turn's context (a turn of the session). */
  turnId?: string | null;
}

/**
 * An assembled context as served: the messages before the loaded window (`earlier`, all
 * summarized or dropped for the budget) are decided by the window rule; their decisions are read
 * (ids and positions only) when someone asks for them (`decisionsOf`), and come before `decisions`.
 */
export interface ServedContext extends AssembledContext {
  earlier: (EarlierWindow & { segments: Segment[] }) | null;
}

/** What a turn keeps of the context assembled for it. */
export interface RecordedContext extends AssembledContext {
  settingsFingerprint: string;
  assembledAt: string;
}

/**
 * Loads what context assembly needs (the session's visible messages, its applicable compaction,
 * the attachments they reference, the flags), runs the pure pipeline, and records the result on a
 * turn when asked. It never writes to the session's messages.
 */
export class AssemblyService {
  /** Position-0 light rows of root sessions (finished ones only), for the leading system message. */
  private readonly firstRows = new Map<string, LightRow | null>();

  constructor(
    private readonly prisma: PrismaClient,
    private readonly sql: Sql,
    private readonly paging: WindowPaging = DEFAULT_WINDOW_PAGING,
    private readonly caches: AssemblyCaches = new AssemblyCaches(DEFAULT_CACHE_CONFIG),
  ) {}

  async assemble(workspaceId: string, request: AssembleRequest, clientId?: string): Promise<ServedContext> {
    const options: AssembleContextOptions = validateAssembleOptions({
      maxTokens: request.maxTokens ?? null,
      maxMessages: request.maxMessages ?? null,
      keepToolCallRounds: request.keepToolCallRounds ?? DEFAULT_KEEP_TOOL_CALL_ROUNDS,
      encoding: request.encoding ?? 'O200K_BASE',
      system: request.system ?? null,
      turnContext: (request.turnContext ?? null) as Record<string, unknown> | null,
      format: request.format ?? 'GENERIC',
      attachmentMaxChars: request.attachmentMaxChars ?? DEFAULT_ATTACHMENT_MAX_CHARS,
      contextAttachmentMaxChars: request.contextAttachmentMaxChars ?? DEFAULT_CONTEXT_ATTACHMENT_MAX_CHARS,
      keepSystemMessage: request.keepSystemMessage ?? true,
      attachmentMode: request.attachmentMode ?? 'INLINE',
      includeAttachmentTool: request.includeAttachmentTool ?? false,
    });

    // A session assembled before is known here: its lineage never changes, so its compaction and
    // its newest messages (those the rows cache lacks, as many as the cost per message seen last
    // time says can fit) are read in the same statement as the session, from the same snapshot.
    // Otherwise they are read once the session is.
    // Windowing needs a budget and stored counts of its encoding.
    const countable = options.encoding === 'CHARS_DIV_4' ? null : options.encoding;
    const windowed = options.maxTokens !== null && countable !== null;
    const hint = this.caches.hints.get(request.sessionId);
    const known = hint ? { hint, newest: windowed ? firstPageSize(hint.costPerRow, options.maxTokens!, this.paging) : 0 } : null;
    const session = await this.readSession(workspaceId, request.sessionId, request.turnId ?? null, known);
    if (!session) throw notFound('Session', clientId ?? request.sessionId);
    if (!session.turnFound) throw notFound('Turn of this session', request.turnId!);

    const segments = visibleSegments(session);
    // No statement when neither the session nor the ancestors it inherits from made any transform.
    const transforms = foldTransforms(await readTransforms(this.sql, session));
    const compactionRead: Promise<CompactionRow | null> = session.known
      ? Promise.resolve(session.known.compaction)
      : latestCompaction(this.sql, session);
    const [compaction, window] = await Promise.all([
      compactionRead,
      windowed
        ? this.loadWindow(
            session,
            segments,
            compactionRead.then((c) => c?.uptoIndex ?? 0),
            options.maxTokens!,
            countable!,
            session.known?.newest ?? null,
            transforms,
          )
        : this.loadAll(
            session,
            segments,
            compactionRead.then((c) => c?.uptoIndex ?? 0),
          ),
    ]);
    const windowMessages = window.messages;
    this.remember(session, window);
    const upto = compaction?.uptoIndex ?? 0;
    const lo = windowMessages.length ? windowMessages[0].index : session.messageCount;
    // The leading system message is kept whatever the window: loaded on its own when the window
    // starts after it (a compaction covering it included: it is kept ahead of the summary).
    const pinned = options.keepSystemMessage !== false && lo > 0 ? await this.leadingSystemMessage(segments) : null;
    const messages = pinned ? [pinned, ...windowMessages] : windowMessages;
    const attachments = await this.loadAttachments(session.workspaceId, messages, options.attachmentMode === 'REFERENCE');
    const fingerprint = settingsFingerprint(session.settings);
    const mark = historyMark(session);

    const assembled = runAssembly({
      messages,
      compaction: compaction
        ? {
            id: compaction.id,
            uptoIndex: compaction.uptoIndex,
            summary: compaction.summary,
            tokens: { O200K_BASE: compaction.tokensO200k, CL100K_BASE: compaction.tokensCl100k },
          }
        : null,
      attachments,
      transforms,
      options,
      attachmentReferenceId: request.attachmentReferenceId,
      flags: {
        isFork: session.parentId !== null,
        isFirstTurn: !session.hadTurn,
        hasConnectorSwap: session.previousFingerprint !== null && session.previousFingerprint !== fingerprint,
        hasNewTransforms: session.previousHistoryMark !== null && session.previousHistoryMark !== mark,
      },
    });

    const result: ServedContext =
      lo > 0
        ? {
            // Messages [upto, lo) were dropped for the budget (the pinned one is not among them).
            ...withEarlier(assembled, lo, upto + (pinned && upto === 0 ? 1 : 0), transforms),
            earlier: {
              lo,
              compaction: compaction ? { id: compaction.id, uptoIndex: upto } : null,
              maxTokens: options.maxTokens,
              segments,
              pinnedFirst: pinned !== null,
              hidden: transforms.hidden,
            },
          }
        : { ...assembled, earlier: null };
    if (request.turnId) {
      const { earlier: _, ...plain } = result;
      const decisions = await this.decisionsOf(result);
      const recorded: RecordedContext = { ...plain, decisions, settingsFingerprint: fingerprint, assembledAt: new Date().toISOString() };
      if (!(await recordContext(this.sql, request.turnId, recorded, fingerprint, mark)))
        throw notFound('Turn of this session', request.turnId);
    }
    return result;
  }

  /** The session and what its turns say; for a known session, also its compaction and what the rows cache lacks of its newest messages. */
  private readSession(
    workspaceId: string,
    sessionId: string,
    turnId: string | null,
    known: { hint: WindowHint; newest: number } | null,
  ): Promise<AssemblyState | null> {
    const from = known ? Math.max(known.hint.forkIndex ?? 0, this.caches.rows.range(sessionId)?.hi ?? 0) : 0;
    return readAssemblyState(this.sql, workspaceId, sessionId, turnId, known ? { session: known.hint, from, newest: known.newest } : null);
  }

  /**
   * The messages worth assembling, oldest first, as the window rule (domain/assembly/window.ts)
   * decides them: from the rows cache where it has them, else read a page at a time (the first
   * while the compaction is read, or already read with the session). Without stored counts,
   * everything after the compaction is loaded (`loadAll`).
   */
  private async loadWindow(
    session: LineageSession,
    segments: Segment[],
    uptoRead: Promise<number>,
    budget: number,
    encoding: Exclude<TokenEncoding, 'CHARS_DIV_4'>,
    newest: NewestPage | null,
    transforms: HistoryTransforms,
  ): Promise<LoadedWindow> {
    const count = session.messageCount;
    const plan = new WindowPlan(budget, encoding, this.paging);
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
   * row never changes, so it is read once per root session (bounded: oldest forgotten first).
   */
  private async leadingSystemMessage(segments: Segment[]): Promise<DomainMessage | null> {
    const [first] = clipSegments(segments, 0, 1);
    if (!first) return null;
    let row = this.firstRows.get(first.sessionId);
    if (row === undefined) {
      const rows = await readLightPage(this.sql, first.sessionId, 0, 1);
      row = rows[0] ?? null;
      if (row && !row.generating) {
        if (this.firstRows.size >= FIRST_ROWS_MAX) this.firstRows.delete(this.firstRows.keys().next().value!);
        this.firstRows.set(first.sessionId, row);
      }
    }
    if (row?.role !== 'SYSTEM' || row.generating) return null;
    return (await this.withParts([row]))[0];
  }

  /** Every message after the compaction: without a budget (or a countable one), nothing bounds the window. */
  private async loadAll(session: LineageSession, segments: Segment[], uptoRead: Promise<number>): Promise<LoadedWindow> {
    const scope = clipSegments(segments, await uptoRead, session.messageCount);
    const rows = await readLightSegments(this.prisma, scope);
    return { messages: await this.withParts(rows), costPerRow: null };
  }

  /** Keeps what the next assembly of this session can read early (bounded: oldest forgotten first). */
  private remember(session: LineageSession, window: LoadedWindow) {
    this.caches.hints.set({ id: session.id, forkIndex: session.forkIndex, lineage: session.lineage, costPerRow: window.costPerRow });
  }

  /** The rows as messages with their parts: finished messages' from the cache, the others (generating ones too) in one query. */
  private async withParts(rows: LightRow[]): Promise<DomainMessage[]> {
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
   * Every decision of a served context, in index order: those of the messages before its window
   * (read now, ids and positions only) and then the pipeline's.
   */
  async decisionsOf(context: AssembledContext & Partial<Pick<ServedContext, 'earlier'>>): Promise<ContextDecision[]> {
    const { earlier } = context;
    if (!earlier) return context.decisions;
    const rows = await readIdsAndPositions(this.prisma, clipSegments(earlier.segments, 0, earlier.lo));
    // The leading system message loaded apart comes first (index 0), before the earlier ones.
    if (earlier.pinnedFirst) return [context.decisions[0], ...earlierDecisions(rows, earlier), ...context.decisions.slice(1)];
    return [...earlierDecisions(rows, earlier), ...context.decisions];
  }

  /** The attachments the messages reference; by reference, without their content (a reference block needs only its length). */
  private async loadAttachments(
    workspaceId: string,
    messages: DomainMessage[],
    byReference: boolean,
  ): Promise<Map<string, ResolvedAttachment>> {
    const ids = new Set<string>();
    for (const message of messages) for (const part of message.parts) if (part.type === 'attachment') ids.add(part.attachmentId);
    if (ids.size === 0) return new Map();
    if (byReference) {
      const rows = await findAttachmentSummaries(this.sql, workspaceId, [...ids]);
      return new Map(
        rows.map((row) => [
          row.id,
          row.chars === null
            ? {
                id: row.id,
                name: row.name,
                mimeType: row.mimeType,
                size: row.size,
                content: null,
                problem: 'the stored attachment has no text content',
              }
            : { id: row.id, name: row.name, mimeType: row.mimeType, size: row.size, content: null, chars: row.chars },
        ]),
      );
    }
    const rows = await findAttachments(this.prisma, workspaceId, [...ids]);
    return new Map(
      rows.map((row) => [
        row.id,
        {
          id: row.id,
          name: row.name,
          mimeType: row.mimeType,
          size: row.size,
          content: row.content,
          ...(row.content === null ? { problem: 'the stored attachment has no text content' } : {}),
        },
      ]),
    );
  }
}

/** What the window rule sees of a row: a hidden message costs nothing (as a generating one), a redacted one its replacement. */
function windowView(row: LightRow, transforms: HistoryTransforms): LightRow {
  if (transforms.hidden.has(row.id)) return { ...row, generating: true };
  const redaction = transforms.redacted.get(row.id);
  if (redaction) return { ...row, tokensO200k: redaction.tokens.O200K_BASE, tokensCl100k: redaction.tokens.CL100K_BASE };
  return row;
}

/** The counts of an assembly of the window, with the messages [upto, lo) before it dropped for the budget (hidden ones are not dropped). */
function withEarlier(windowed: AssembledContext, lo: number, upto: number, transforms: HistoryTransforms): AssembledContext {
  let hidden = 0;
  for (const h of transforms.hidden.values()) if (h.position >= upto && h.position < lo) hidden++;
  const dropped = lo - upto - hidden;
  return { ...windowed, droppedMessageCount: windowed.droppedMessageCount + dropped, truncated: windowed.truncated || dropped > 0 };
}

/** A stable hash of the session's settings: a change of model or connector changes it. */
export function settingsFingerprint(settings: unknown): string {
  return createHash('sha256')
    .update(canonicalJson(settings ?? {}))
    .digest('hex')
    .slice(0, 16);
}
