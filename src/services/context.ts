import { createHash } from 'node:crypto';
import {
  assembleContext,
  canonicalJson,
  DEFAULT_ATTACHMENT_MAX_CHARS,
  DEFAULT_CONTEXT_ATTACHMENT_MAX_CHARS,
  DEFAULT_KEEP_TOOL_CALL_ROUNDS,
  validateAssembleOptions,
  type AssembleContextOptions,
  type AssembledContext,
  type ContextDecision,
  type ContextFormat,
  toolResultStubTokens,
} from '../domain/context/index.js';
import type { DomainMessage, ResolvedAttachment, StoredPart, TokenEncoding } from '../domain/types.js';
import { clipSegments, visibleSegments, type Segment } from '../domain/lineage.js';
import { notFound } from '../errors.js';
import type { Prisma, PrismaClient } from '../generated/prisma/client.js';
import { segmentsWhere } from './messages.js';
import type { SessionService } from './sessions.js';

/** Messages loaded before the point where nothing older can fit, so the cut is decided by the pipeline. */
const WINDOW_MARGIN = 16;
/** Messages read per page, newest first, while looking for the window's start. */
const WINDOW_PAGE = 256;

const LIGHT_COLUMNS = {
  id: true,
  position: true,
  role: true,
  generating: true,
  toolResultIds: true,
  tokensO200k: true,
  tokensCl100k: true,
} as const;

type LightRow = Prisma.MessageGetPayload<{ select: typeof LIGHT_COLUMNS }>;
type WindowRow = LightRow & { parts: StoredPart[] };

/**
 * Parsed parts of finished messages, least recently used first out. A finished message never
 * changes, so an entry is never stale, and a deleted one is never asked for again: every lookup
 * is by an id the database just returned.
 */
export class FinishedPartsCache {
  private readonly entries = new Map<string, { parts: StoredPart[]; size: number }>();
  private size = 0;

  constructor(private readonly maxChars = 32_000_000) {}

  get(id: string): StoredPart[] | undefined {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    this.entries.delete(id);
    this.entries.set(id, entry);
    return entry.parts;
  }

  set(id: string, parts: StoredPart[]) {
    if (this.entries.has(id)) return;
    const size = parts.reduce((sum, p) => sum + 64 + (p.type === 'text' ? p.text.length : p.type === 'toolResult' ? p.content.length : 0), 0);
    this.entries.set(id, { parts, size });
    this.size += size;
    for (const [oldest, entry] of this.entries) {
      if (this.size <= this.maxChars) break;
      this.entries.delete(oldest);
      this.size -= entry.size;
    }
  }
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
  /** Record the result as this turn's context (a turn of the session). */
  turnId?: string | null;
}

/**
 * An assembled context as served: the decisions of messages before the loaded window (all
 * summarized or dropped for the budget) are read only when asked for, and come before `decisions`.
 */
export interface ServedContext extends AssembledContext {
  earlierDecisions?: () => Promise<ContextDecision[]>;
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
export class ContextService {
  private readonly parts = new FinishedPartsCache();

  constructor(
    private readonly prisma: PrismaClient,
    private readonly sessions: SessionService,
  ) {}

  async assemble(workspaceId: string, request: AssembleRequest, label?: string): Promise<ServedContext> {
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
    });

    const session = await this.prisma.session.findFirst({ where: { id: request.sessionId, workspaceId } });
    if (!session) throw notFound('Session', label ?? request.sessionId);
    if (request.turnId) {
      const turn = await this.prisma.turn.findFirst({ where: { id: request.turnId, sessionId: session.id }, select: { id: true } });
      if (!turn) throw notFound('Turn of this session', request.turnId);
    }

    const segments = visibleSegments(session);
    const [previous, { compaction, rows }] = await Promise.all([
      this.previousContext(session.id, session.parentId, request.turnId ?? null),
      this.sessions.latestCompaction(this.prisma, session).then(async (compaction) => ({
        compaction,
        rows: await this.loadWindow(segments, compaction?.uptoIndex ?? 0, session.messageCount, options),
      })),
    ]);
    const upto = compaction?.uptoIndex ?? 0;
    const lo = rows.length ? rows[0].position : session.messageCount;

    const messages: DomainMessage[] = rows.map((row) => ({
      id: row.id,
      index: row.position,
      role: row.role,
      parts: row.parts,
      generating: row.generating,
      tokens:
        row.tokensO200k === null || row.tokensCl100k === null
          ? null
          : { O200K_BASE: row.tokensO200k, CL100K_BASE: row.tokensCl100k },
    }));
    const attachments = await this.loadAttachments(session.workspaceId, messages);
    const fingerprint = settingsFingerprint(session.settings);

    const windowed = assembleContext({
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
      options,
      flags: {
        isFork: session.parentId !== null,
        isFirstTurn: !previous.hadTurn,
        hasConnectorSwap: previous.fingerprint !== null && previous.fingerprint !== fingerprint,
      },
    });

    const result = lo > 0 ? this.withEarlierDecisions(windowed, segments, lo, upto) : windowed;
    if (request.turnId) {
      const { earlierDecisions, ...plain } = result as ServedContext;
      const decisions = earlierDecisions ? [...(await earlierDecisions()), ...plain.decisions] : plain.decisions;
      const recorded: RecordedContext = { ...plain, decisions, settingsFingerprint: fingerprint, assembledAt: new Date().toISOString() };
      await this.prisma.turn.update({
        where: { id: request.turnId },
        data: { context: JSON.parse(JSON.stringify(recorded)) as Prisma.InputJsonValue },
      });
    }
    return result;
  }

  /**
   * The messages worth assembling, oldest first. They are kept newest first as a contiguous run,
   * so a message cannot be kept once even a lower bound of the cost of it and everything after it
   * exceeds the budget: stored content tokens plus one framing token a message, a tool result
   * counted at most as its elision stub, a generating message (dropped) as nothing. Messages are
   * read newest first, a page at a time, until that point plus a margin and the newest user
   * message (always kept). Everything before is decided without being loaded: summarized when the
   * compaction covers it, dropped for the budget otherwise. Without a budget, or without stored
   * counts, everything after the compaction is loaded.
   */
  private async loadWindow(segments: Segment[], upto: number, count: number, options: AssembleContextOptions): Promise<WindowRow[]> {
    const scope = clipSegments(segments, upto, count);
    const loadAll = async () =>
      scope.length
        ? this.withParts(await this.prisma.message.findMany({ where: segmentsWhere(scope), orderBy: { position: 'asc' }, select: LIGHT_COLUMNS }))
        : [];
    if (options.maxTokens === null || options.encoding === 'CHARS_DIV_4') return loadAll();
    const stub = toolResultStubTokens(0, options.encoding);
    const newestFirst: LightRow[] = [];
    let spent = 0;
    let margin: number | null = null;
    let userSeen = false;
    const done = () => margin !== null && margin <= 0 && userSeen;
    for (const segment of [...scope].reverse()) {
      for (let hi = segment.end; !done() && hi > segment.start; ) {
        const rows = await this.prisma.message.findMany({
          where: { sessionId: segment.sessionId, position: { gte: segment.start, lt: hi } },
          orderBy: { position: 'desc' },
          take: WINDOW_PAGE,
          select: LIGHT_COLUMNS,
        });
        if (rows.length === 0) break;
        for (const row of rows) {
          if (done()) break;
          newestFirst.push(row);
          if (row.role === 'USER' && !row.generating) userSeen = true;
          if (margin !== null) {
            margin--;
            continue;
          }
          const tokens = options.encoding === 'CL100K_BASE' ? row.tokensCl100k : row.tokensO200k;
          // A message counted before counts were stored bounds nothing: load everything.
          if (tokens === null && !row.generating) return loadAll();
          spent += row.generating || tokens === null ? 0 : row.role === 'TOOL' ? Math.min(tokens, row.toolResultIds.length * stub) : tokens + 1;
          if (spent > options.maxTokens) margin = WINDOW_MARGIN;
        }
        hi = rows[rows.length - 1].position;
      }
      if (done()) break;
    }
    const window = newestFirst.reverse();
    // Tool results at the window's edge answer calls before it: dropped for the budget like those calls.
    const head = window.findIndex((row) => row.role !== 'TOOL');
    return this.withParts(head > 0 && window[0].position > upto ? window.slice(head) : window);
  }

  /** Adds the parts: finished messages' from the cache, the others (generating ones too) in one query. */
  private async withParts(rows: LightRow[]): Promise<WindowRow[]> {
    const resolved = new Map<string, StoredPart[]>();
    const missing: string[] = [];
    for (const row of rows) {
      const cached = row.generating ? undefined : this.parts.get(row.id);
      if (cached) resolved.set(row.id, cached);
      else missing.push(row.id);
    }
    if (missing.length) {
      const found = await this.prisma.message.findMany({ where: { id: { in: missing } }, select: { id: true, parts: true, generating: true } });
      for (const row of found) {
        const parts = row.parts as unknown as StoredPart[];
        resolved.set(row.id, parts);
        if (!row.generating) this.parts.set(row.id, parts);
      }
    }
    return rows.map((row) => {
      const parts = resolved.get(row.id);
      // Only a delete running alongside removes a message between the two reads.
      if (!parts) throw notFound('Message', row.id);
      return { ...row, parts };
    });
  }

  /**
   * Accounts for the messages before the loaded window: [0, upto) summarized, [upto, lo) dropped
   * for the budget. Their decisions are read (ids and positions only) when someone asks for them.
   */
  private withEarlierDecisions(windowed: AssembledContext, segments: Segment[], lo: number, upto: number): ServedContext {
    const dropped = lo - upto;
    const budgetReason = `Does not fit maxTokens (${windowed.maxTokens}) after the newer messages kept.`;
    let loaded: Promise<ContextDecision[]> | null = null;
    const earlierDecisions = () =>
      (loaded ??= this.prisma.message
        .findMany({
          where: segmentsWhere(clipSegments(segments, 0, lo)),
          orderBy: { position: 'asc' },
          select: { id: true, position: true },
        })
        .then((earlier) =>
          earlier.map((m): ContextDecision =>
            m.position < upto
              ? { messageId: m.id, index: m.position, decision: 'SUMMARIZED', reason: `Covered by the compaction of messages [0, ${upto}).` }
              : { messageId: m.id, index: m.position, decision: 'DROPPED_BUDGET', reason: budgetReason },
          ),
        ));
    return {
      ...windowed,
      droppedMessageCount: windowed.droppedMessageCount + dropped,
      truncated: windowed.truncated || dropped > 0,
      earlierDecisions,
    };
  }

  /**
   * Whether the session had a turn before this one, and the settings fingerprint recorded with the
   * latest earlier context (a fork with no context of its own compares with its parent's latest).
   */
  private async previousContext(sessionId: string, parentId: string | null, turnId: string | null) {
    const excludeTurn = turnId ? { id: { not: turnId } } : {};
    const hadTurn = (await this.prisma.turn.count({ where: { sessionId, ...excludeTurn } })) > 0;
    for (const id of parentId ? [sessionId, parentId] : [sessionId]) {
      const turn = await this.prisma.turn.findFirst({
        where: { sessionId: id, context: { not: { equals: null } } as never, ...(id === sessionId ? excludeTurn : {}) },
        orderBy: { number: 'desc' },
        select: { context: true },
      });
      const fingerprint = (turn?.context as { settingsFingerprint?: string } | null)?.settingsFingerprint;
      if (fingerprint) return { hadTurn, fingerprint };
    }
    return { hadTurn, fingerprint: null };
  }

  private async loadAttachments(workspaceId: string, messages: DomainMessage[]): Promise<Map<string, ResolvedAttachment>> {
    const ids = new Set<string>();
    for (const message of messages) for (const part of message.parts) if (part.type === 'attachment') ids.add(part.attachmentId);
    if (ids.size === 0) return new Map();
    const rows = await this.prisma.attachment.findMany({ where: { id: { in: [...ids] }, workspaceId } });
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

/** A stable hash of the session's settings: a change of model or connector changes it. */
export function settingsFingerprint(settings: unknown): string {
  return createHash('sha256').update(canonicalJson(settings ?? {})).digest('hex').slice(0, 16);
}
