import { DEFAULT_STRING_CHARS } from '../domain/limits.js';
import { createHash } from 'node:crypto';
import { AssemblyCaches } from '../caches/index.js';
import { DEFAULT_CACHE_CONFIG } from '../caches/sizes.js';
import type { Sql } from '../db/sql.js';
import type { CompactionRow } from '../db/stores/compactions.js';
import { latestCompaction } from '../db/stores/compactions.js';
import { readIdsAndPositions } from '../db/stores/messages.js';
import { readTransforms } from '../db/stores/transforms.js';
import { recordContext } from '../db/stores/turns.js';
import { writeAssemblyPrefix } from '../db/stores/assembly-prefixes.js';
import {
  runAssembly,
  canonicalJson,
  samePrefix,
  DEFAULT_ATTACHMENT_MAX_CHARS,
  DEFAULT_CACHE_SLACK,
  DEFAULT_CACHE_STRATEGY,
  DEFAULT_CONTEXT_ATTACHMENT_MAX_CHARS,
  DEFAULT_KEEP_TOOL_CALL_ROUNDS,
  validateAssembleOptions,
  withMediaByReference,
  type AssembleContextOptions,
  type AttachmentMode,
  type AssembledContext,
  type CacheStrategy,
  type ContextDecision,
  type ContextFormat,
} from '../domain/assembly/index.js';
import {
  DEFAULT_WINDOW_PAGING,
  earlierDecisions,
  firstPageSize,
  framingLowerBound,
  type EarlierWindow,
  type WindowPaging,
} from '../domain/assembly/window.js';
import { notFound } from '../domain/errors.js';
import { loadModelCatalog } from '../domain/model-catalog.js';
import { clipSegments, historyMark, visibleSegments, type LineageSession, type Segment } from '../domain/lineage.js';
import { foldTransforms, type HistoryTransforms } from '../domain/transforms.js';
import type { KnownTokenCounts } from '../domain/tokens.js';
import type { TokenEncoding } from '../domain/types.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { AssemblyReads, type LoadedWindow } from './assembly-reads.js';
import { ContextGaugeService } from './context-gauge.js';

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
  cacheStrategy?: CacheStrategy | null;
  cacheSlack?: number | null;
  /** The id reference blocks (and problem messages) give an attachment: the client's opaque ID. */
  attachmentReferenceId?: (attachmentId: string) => string;
  /** Record the result as this turn's context (a turn of the session). */
  turnId?: string | null;
  /** A model of the catalog: the default maxTokens and `estimatedCost` (model-catalog.ts). */
  model?: string | null;
  /** Tokens kept for the answer when maxTokens defaults from the model's window. */
  outputReserve?: number | null;
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
  private readonly reads: AssemblyReads;
  /** `Session.contextGauge`: the same counts without assembling (context-gauge.ts). */
  readonly gauges: ContextGaugeService;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly sql: Sql,
    private readonly paging: WindowPaging = DEFAULT_WINDOW_PAGING,
    private readonly caches: AssemblyCaches = new AssemblyCaches(DEFAULT_CACHE_CONFIG),
    /** Long texts counted ahead (the app's TokenPrecount): a long system prompt is not counted again. */
    private readonly knownTokens?: KnownTokenCounts,
    /** Bytes of images and files one context may send (twice `TextCaps.fileBytes`): older ones beyond it are reported, not sent. */
    private readonly mediaBytes: number = DEFAULT_STRING_CHARS.postgres * 8,
  ) {
    this.reads = new AssemblyReads(prisma, sql, paging, caches);
    this.gauges = new ContextGaugeService(sql, caches.rows, knownTokens);
  }

  async assemble(workspaceId: string, request: AssembleRequest, clientId?: string): Promise<ServedContext> {
    const catalog = request.model === null || request.model === undefined ? null : await loadModelCatalog();
    const priced = catalog
      ? catalog.budget({
          model: request.model!,
          maxTokens: request.maxTokens ?? null,
          outputReserve: request.outputReserve ?? null,
          format: request.format ?? 'GENERIC',
        })
      : null;
    const options: AssembleContextOptions = validateAssembleOptions({
      maxTokens: priced?.maxTokens ?? request.maxTokens ?? null,
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
      cacheStrategy: request.cacheStrategy ?? DEFAULT_CACHE_STRATEGY,
      cacheSlack: request.cacheSlack ?? DEFAULT_CACHE_SLACK,
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
    const session = await this.reads.readSession(workspaceId, request.sessionId, request.turnId ?? null, known, options.format);
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
        ? this.reads.loadWindow(
            session,
            segments,
            compactionRead.then((c) => c?.uptoIndex ?? 0),
            options.maxTokens!,
            countable!,
            session.known?.newest ?? null,
            transforms,
            framingLowerBound(options.format),
          )
        : this.reads.loadAll(
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
    const pinned = options.keepSystemMessage !== false && lo > 0 ? await this.reads.leadingSystemMessage(segments) : null;
    const messages = pinned ? [pinned, ...windowMessages] : windowMessages;
    const attachments = await this.reads.loadAttachments(session.workspaceId, messages, {
      byReference: options.attachmentMode === 'REFERENCE',
      format: options.format,
      mediaBytes: this.mediaBytes,
    });
    const fingerprint = settingsFingerprint(session.settings);
    const mark = historyMark(session);

    const assembled = runAssembly({
      messages,
      compaction: compaction
        ? {
            id: compaction.id,
            uptoIndex: compaction.uptoIndex,
            summary: compaction.summary,
            extractedContext: compaction.extractedContext,
            tokens: { O200K_BASE: compaction.tokensO200k, CL100K_BASE: compaction.tokensCl100k },
          }
        : null,
      attachments,
      transforms,
      options,
      attachmentReferenceId: request.attachmentReferenceId,
      knownTokens: this.knownTokens,
      previousPrefix: session.previousPrefix,
      flags: {
        isFork: session.parentId !== null,
        isFirstTurn: !session.hadTurn,
        hasConnectorSwap: session.previousFingerprint !== null && session.previousFingerprint !== fingerprint,
        hasNewTransforms: session.previousHistoryMark !== null && session.previousHistoryMark !== mark,
      },
    });

    const priceable: AssembledContext = {
      ...assembled,
      estimatedCost: priced ? catalog!.estimateInput(priced.model, assembled.tokenCount, assembled.reusedPrefixTokens ?? 0) : null,
    };
    const result: ServedContext =
      lo > 0
        ? {
            // Messages [upto, lo) were dropped for the budget (the pinned one is not among them).
            ...withEarlier(priceable, lo, upto + (pinned && upto === 0 ? 1 : 0), transforms),
            earlier: {
              lo,
              compaction: compaction ? { id: compaction.id, uptoIndex: upto } : null,
              maxTokens: options.maxTokens,
              segments,
              pinnedFirst: pinned !== null,
              hidden: transforms.hidden,
            },
          }
        : { ...priceable, earlier: null };
    // What the next assembly in this format compares with: one statement, none when it is the same.
    const writes: Promise<unknown>[] = [];
    if (assembled.payloadPrefix && !samePrefix(assembled.payloadPrefix, session.previousPrefix)) {
      writes.push(writeAssemblyPrefix(this.sql, session.id, options.format, assembled.payloadPrefix));
    }
    if (request.turnId) {
      const { earlier: _, payloadPrefix: __, ...plain } = result;
      const decisions = await this.decisionsOf(result);
      const recorded: RecordedContext = {
        ...withMediaByReference(plain),
        decisions,
        settingsFingerprint: fingerprint,
        assembledAt: new Date().toISOString(),
      };
      writes.push(
        recordContext(this.sql, request.turnId, recorded, fingerprint, mark).then((found) => {
          if (!found) throw notFound('Turn of this session', request.turnId!);
        }),
      );
    }
    await Promise.all(writes);
    return result;
  }

  /** Keeps what the next assembly of this session can read early (bounded: oldest forgotten first). */
  private remember(session: LineageSession, window: LoadedWindow) {
    this.caches.hints.set({ id: session.id, forkIndex: session.forkIndex, lineage: session.lineage, costPerRow: window.costPerRow });
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
