/**
 * Group commit for the plain appends (`SessionService.appendMessages` without a turn, tool results
 * or uploads): calls that arrive while a batch is being written wait for it, then go together as
 * one statement (db/stores/append.ts `appendMessageBatch`), to one session or many: one round trip,
 * one plan execution and one commit for the calls of a batch; a call alone is written at the next
 * `setImmediate`.
 *
 * Each call is settled in the order it was queued: its messages have the positions and sequence
 * numbers that order gives within their session (dense, as the statement numbers them from the
 * locked counters), and `complete` (which publishes the call's events) runs for each in that order.
 *
 * A call alone on a database that is one connection (PGlite) goes as the single-call statement
 * (`appendMessageRows`), which is cheaper than the batched one: the batched statement's grouping,
 * lock skipping and second read of the sessions are there for many calls and for locks held
 * elsewhere, and one connection holds no lock elsewhere. On PostgreSQL a call alone still goes
 * batched: the single-call statement would wait for a lock another transaction holds, and every
 * call queued behind it with it.
 */
import { appendMessageBatch, appendMessageRows, type AppendJob, batchInput, batchKey, type BatchedSession } from '../db/stores/append.js';
import { isRetryableSqlError, type Sql } from '../db/sql.js';
import { isOutage } from '../db/faults.js';
import type { Session } from '../generated/prisma/client.js';

/** The most calls in one batch. */
const MAX_BATCH_CALLS = 100;
/** The most JSON (characters) one batch sends; a call larger than this goes alone. */
const MAX_BATCH_CHARS = 1 << 20;
/** Attempts of a batch that fails on a deadlock or serialization failure (nothing was written). */
const ATTEMPTS = 5;

/**
 * What became of a call: `appended` (with what `complete` returned), `locked` (its session was held
 * by another transaction: nothing written, the caller appends on its own and waits for the lock),
 * or `elsewhere` (not a plain append: unknown session, another workspace's, or a sub-session,
 * whose events are wrapped into the logs above it; nothing written).
 */
export type BatchOutcome<R> = { kind: 'appended'; result: R } | { kind: 'locked' } | { kind: 'elsewhere' };

interface Queued {
  job: AppendJob;
  input: string;
  complete: (session: Session, now: Date) => unknown;
  settle: (outcome: BatchOutcome<unknown>) => void;
  fail: (error: unknown) => void;
}

export class AppendBatcher {
  private readonly queue: Queued[] = [];
  private running = false;
  /** Orders the messages of one session across a batch (the statement's `o`). */
  private order = 0;

  constructor(private readonly sql: Pick<Sql, 'query' | 'oneConnection'>) {}

  /**
   * Appends `job` in the next batch. `complete` gets the session as this call's append left it
   * (its counters after its own messages, as if the calls had run one after another) and the
   * time of the write; it runs once the batch has committed, in queue order.
   */
  append<R>(job: AppendJob, complete: (session: Session, now: Date) => R): Promise<BatchOutcome<R>> {
    const input = batchInput(job, this.order);
    this.order += job.messages.length;
    return new Promise<BatchOutcome<R>>((resolve, reject) => {
      this.queue.push({ job, input, complete, settle: resolve as (outcome: BatchOutcome<unknown>) => void, fail: reject });
      if (!this.running) {
        this.running = true;
        // The calls parsed in the same event-loop tick go together.
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain() {
    try {
      while (this.queue.length > 0) {
        const batch = this.take();
        try {
          await this.write(batch);
        } catch (error) {
          // Not expected (write settles every call itself); no call is left waiting if it happens.
          for (const q of batch) q.fail(error);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private take(): Queued[] {
    let chars = 0;
    let count = 0;
    while (count < this.queue.length && count < MAX_BATCH_CALLS) {
      const size = this.queue[count].input.length + 1;
      if (count > 0 && chars + size > MAX_BATCH_CHARS) break;
      chars += size;
      count++;
    }
    return this.queue.splice(0, count);
  }

  private async write(batch: Queued[]): Promise<void> {
    if (batch.length === 1 && this.sql.oneConnection) return this.writeAlone(batch[0]);
    const now = new Date();
    let done: Map<string, BatchedSession>;
    try {
      done = await retried(() => appendMessageBatch(this.sql, batch.map((q) => q.input).join(','), now));
    } catch (error) {
      if (batch.length > 1 && !isOutage(error)) {
        // One call's input failed the statement (nothing was written): each call again on its
        // own, so the error reaches only the call that caused it.
        for (const q of batch) await this.write([q]);
      } else {
        for (const q of batch) q.fail(error);
      }
      return;
    }
    this.settle(batch, done, now);
  }

  /** A call alone, as the single-call statement; `elsewhere` when it finds no session to append to. */
  private async writeAlone(q: Queued): Promise<void> {
    const now = new Date();
    const { workspaceId, sessionId, messages } = q.job;
    let session: Session | null;
    try {
      session = await retried(() => appendMessageRows(this.sql, workspaceId, sessionId, null, messages, now, false));
    } catch (error) {
      return q.fail(error);
    }
    if (!session) return q.settle({ kind: 'elsewhere' });
    try {
      q.settle({ kind: 'appended', result: q.complete(session, now) });
    } catch (error) {
      q.fail(error);
    }
  }

  /** Settles each call of a batch from what the statement did to its session, in queue order. */
  private settle(batch: Queued[], done: Map<string, BatchedSession>, now: Date) {
    /** Per session: its counters before the next call of this batch. */
    const before = new Map<string, { messageCount: number; eventSequence: number }>();
    for (const q of batch) {
      const key = batchKey(q.job.workspaceId, q.job.sessionId);
      const outcome = done.get(key);
      if (!outcome) {
        q.settle({ kind: 'elsewhere' });
        continue;
      }
      if (!outcome.appended) {
        q.settle({ kind: 'locked' });
        continue;
      }
      let at = before.get(key);
      if (!at) {
        at = { messageCount: outcome.session.messageCount - outcome.count, eventSequence: outcome.session.eventSequence - outcome.count };
        before.set(key, at);
      }
      at.messageCount += q.job.messages.length;
      at.eventSequence += q.job.messages.length;
      try {
        q.settle({ kind: 'appended', result: q.complete({ ...outcome.session, ...at }, now) });
      } catch (error) {
        q.fail(error);
      }
    }
  }
}

/** `run`, again while it fails on a deadlock or serialization failure (nothing was written), at most ATTEMPTS times. */
async function retried<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= ATTEMPTS || !isRetryableSqlError(error)) throw error;
    }
  }
}
