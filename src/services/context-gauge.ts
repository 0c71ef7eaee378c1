import { LRUCache } from 'lru-cache';
import type { SqlClient } from '../db/sql.js';
import type { FinishedRowsCache } from '../caches/finished-rows.js';
import { readAttachmentParts, readGaugeBasics, type GaugeBasics } from '../db/stores/context-gauge.js';
import { readLightPage, type LightRow } from '../db/stores/messages.js';
import { readTransforms } from '../db/stores/transforms.js';
import { renderSummary, type ContextFormat } from '../domain/assembly/index.js';
import { gaugeContext, withBudget, type ContextGauge } from '../domain/context-gauge.js';
import { badInput } from '../domain/errors.js';
import { clipSegments, visibleSegments, type LineageSession, type Segment } from '../domain/lineage.js';
import { loadModelCatalog } from '../domain/model-catalog.js';
import { countTokens, type KnownTokenCounts } from '../domain/tokens.js';
import { foldTransforms } from '../domain/transforms.js';
import type { TokenEncoding } from '../domain/types.js';

export interface GaugeRequest {
  model?: string | null;
  maxTokens?: number | null;
  outputReserve?: number | null;
  encoding?: TokenEncoding | null;
  format?: ContextFormat | null;
}

/**
 * `Session.contextGauge`: the compaction (one statement, which also says whether the lineage has
 * attachments), the light rows after it (from the rows cache, the rest read), the attachment parts
 * when there are attachments, the history transforms when there are any; then sums them
 * (domain/context-gauge.ts). No payload is built and no message content is read but attachment
 * parts. Polled, a session that gained nothing costs no statement beyond its own node and no loop
 * over its rows (the settled gauges below); one with new messages, the compaction statement, the
 * read of what is new and the sum.
 */
export class ContextGaugeService {
  /**
   * Content tokens of rendered summary blocks, by compaction and encoding. Never stale: a
   * compaction never changes. Bounded, oldest forgotten first.
   */
  private readonly summaries = new LRUCache<string, number>({ max: 1_000 });
  /**
   * Settled gauges (ContextGauge.settled) by everything that can change their rows: the session, its
   * message, transform and compaction counts (a fork's view of its ancestors' messages, transforms
   * and compactions is frozen in its lineage; an attachment comes with its message), the encoding
   * and the format. A polled session that gained nothing then costs no statement of its own and no
   * loop over its rows. Never stale: a new message, transform or compaction is a new key. Bounded,
   * oldest forgotten first.
   */
  private readonly settled = new LRUCache<string, ContextGauge>({ max: 1_000 });

  constructor(
    private readonly sql: SqlClient,
    /** The assembly's cache of finished light rows (caches/finished-rows.ts): a polled session is read only past what it keeps. */
    private readonly rows: FinishedRowsCache<LightRow>,
    private readonly knownTokens?: KnownTokenCounts,
  ) {}

  async gauge(session: LineageSession & { transformCount: number; compactionCount: number }, request: GaugeRequest): Promise<ContextGauge> {
    const encoding = request.encoding ?? 'O200K_BASE';
    if (encoding === 'CHARS_DIV_4') {
      throw badInput('contextGauge reads the counts stored with each message, kept for O200K_BASE and CL100K_BASE only.', {
        field: 'encoding',
      });
    }
    const format = request.format ?? 'GENERIC';
    if (request.maxTokens !== null && request.maxTokens !== undefined && (!Number.isInteger(request.maxTokens) || request.maxTokens < 1)) {
      throw badInput(`maxTokens must be a whole number of at least 1 (got ${request.maxTokens}).`, { field: 'maxTokens' });
    }
    let maxTokens = request.maxTokens ?? null;
    if (request.model !== null && request.model !== undefined) {
      const catalog = await loadModelCatalog();
      maxTokens = catalog.budget({ model: request.model, maxTokens, outputReserve: request.outputReserve ?? null, format }).maxTokens;
    }
    const key = `${session.id}:${session.messageCount}:${session.transformCount}:${session.compactionCount}:${encoding}:${format}`;
    const known = this.settled.get(key);
    if (known) return withBudget(known, maxTokens);
    const segments = visibleSegments(session);
    const basics = await readGaugeBasics(
      this.sql,
      session,
      segments.map((s) => s.sessionId),
    );
    const transforms = foldTransforms(await readTransforms(this.sql, session));
    const upto = basics.compaction?.uptoIndex ?? 0;
    // The rows after the compaction, and the first one (a leading system message is kept ahead of the summary).
    const scope = upto > 0 ? [...clipSegments(segments, 0, 1), ...clipSegments(segments, upto, session.messageCount)] : segments;
    const [rows, attachments] = await Promise.all([
      this.lightRows(scope),
      basics.hasAttachments ? readAttachmentParts(this.sql, scope) : Promise.resolve([]),
    ]);
    const gauge = gaugeContext({
      rows,
      uptoIndex: upto,
      hidden: new Set([...transforms.hidden.values()].map((h) => h.position)),
      redacted: new Map([...transforms.redacted.values()].map((r) => [r.position, r.tokens[encoding]])),
      encoding,
      attachments,
      summaryTokens: basics.compaction ? this.summaryTokens(basics.compaction, encoding) : null,
      format,
      maxTokens,
    });
    if (gauge.settled) this.settled.set(key, gauge);
    return gauge;
  }

  /**
   * The light rows of `segments`, oldest first: what the rows cache keeps of each segment's session
   * (finished rows never change), and the rest read, one statement a range, and kept.
   */
  private async lightRows(segments: readonly Segment[]): Promise<LightRow[]> {
    const parts: Array<LightRow[] | Promise<LightRow[]>> = [];
    for (const s of segments) {
      const kept = this.rows.range(s.sessionId);
      const lo = kept ? Math.min(Math.max(kept.lo, s.start), s.end) : s.end;
      const hi = kept ? Math.max(Math.min(kept.hi, s.end), lo) : s.end;
      if (lo > s.start) parts.push(this.read(s.sessionId, s.start, lo));
      if (hi > lo) parts.push(this.rows.oldestFirst(s.sessionId, lo, hi));
      if (s.end > hi) parts.push(this.read(s.sessionId, Math.max(hi, s.start), s.end));
    }
    return (await Promise.all(parts)).flat();
  }

  private async read(sessionId: string, lo: number, hi: number): Promise<LightRow[]> {
    const rows = (await readLightPage(this.sql, sessionId, lo, hi)).reverse();
    this.rows.add(sessionId, rows);
    return rows;
  }

  private summaryTokens(compaction: NonNullable<GaugeBasics['compaction']>, encoding: TokenEncoding): number {
    const key = `${compaction.id}:${encoding}`;
    let tokens = this.summaries.get(key);
    if (tokens === undefined) {
      tokens = countTokens(renderSummary({ ...compaction, tokens: null }), encoding, this.knownTokens);
      this.summaries.set(key, tokens);
    }
    return tokens;
  }
}
