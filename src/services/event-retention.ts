import { deleteEventsBefore, firstKeptSequence } from '../db/stores/events.js';
import type { Sql } from '../db/sql.js';
import { DomainError } from '../domain/errors.js';
import type { Logger } from '../logger.js';

/** Events one sweep statement looks at: a short statement, so PGlite's one connection is never held long. */
const SWEEP_BATCH = 500;

export interface EventRetentionOptions {
  /** Events older than this are deleted (EVENT_RETENTION_MS). */
  retentionMs: number;
  /** How often each instance sweeps (`eventSweepInterval`). */
  sweepIntervalMs: number;
}

/**
 * The bounded event log: every `sweepIntervalMs` each instance deletes the events older than
 * `retentionMs`, one batch statement at a time (`deleteEventsBefore`: a primary-key range, row
 * locks on old rows only, safe while another instance sweeps the same rows), until no old event is
 * left. What a session keeps is a gapless suffix of its log; a replay that would need an event
 * before it is refused with EVENTS_EXPIRED (`checkReplay`) instead of silently skipping it.
 */
export class EventRetention {
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<unknown> | null = null;
  private stopped = false;

  constructor(
    private readonly sql: Sql,
    private readonly logger: Logger,
    readonly options: EventRetentionOptions,
  ) {}

  start() {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => {
      if (this.sweeping) return;
      this.sweeping = this.sweep()
        .catch((error: unknown) => this.logger.error('event retention sweep failed', { error }))
        .finally(() => (this.sweeping = null));
    }, this.options.sweepIntervalMs);
    this.timer.unref();
  }

  /** Deletes every event older than the retention, batch by batch; resolves with the number deleted. */
  async sweep(now = Date.now()): Promise<number> {
    const before = new Date(now - this.options.retentionMs);
    let deleted = 0;
    for (;;) {
      const batch = await deleteEventsBefore(this.sql, before, SWEEP_BATCH);
      deleted += batch.deleted;
      if (batch.found < SWEEP_BATCH || this.stopped) break;
      // Between batches, whatever else waits (a request, another statement on PGlite's connection) goes first.
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (deleted) this.logger.debug('swept old events', { deleted, before: before.toISOString() });
    return deleted;
  }

  /**
   * Refuses a replay after `afterSequence` when the session's log no longer holds the event right
   * after it (EVENTS_EXPIRED): the client must re-read the session and subscribe from its current
   * sequence. `rawSessionId` is how the client named the session.
   */
  async checkReplay(sessionId: string, afterSequence: number, rawSessionId: string): Promise<void> {
    // A read: on PGlite it leaves the caches kept until the next write alone.
    const first = await firstKeptSequence(this.sql.reads, sessionId);
    if (first === null || afterSequence >= first - 1) return;
    throw eventsExpired(rawSessionId, afterSequence, first);
  }

  /** Stops sweeping and waits for a sweep in progress. */
  async stop() {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sweeping;
  }
}

/** EVENTS_EXPIRED for a replay after `afterSequence` of a session whose oldest kept event is `firstKept`. */
export function eventsExpired(rawSessionId: string, afterSequence: number, firstKept: number): DomainError {
  return new DomainError(
    'EVENTS_EXPIRED',
    `The events of session ${rawSessionId} after sequence ${afterSequence} are no longer kept (the oldest kept is ${firstKept}). ` +
      'Re-read the session, then subscribe with afterSequence set to its current sequence.',
    { afterSequence, oldestKeptSequence: firstKept },
  );
}
