import { isRetryableSqlError, type Sql, type SqlClient, type SqlTarget, type Tx } from '../db/sql.js';
import * as sessionStore from '../db/stores/sessions.js';
import type { LockedSession } from '../db/stores/sessions.js';
import { notFound } from '../domain/errors.js';
import { Prisma, type PrismaClient } from '../generated/prisma/client.js';
import type { EventBus, SessionEventMessage } from '../pubsub/bus.js';
import { writeThenPublish } from './event-log.js';

/**
 * The frame of every write to a session: a transaction (retried on a serialization failure or a
 * deadlock) whose first statements lock the session rows it changes (`SELECT … FOR UPDATE`), so
 * appends, forks and compactions of one session are serialized on one server or many, and whose
 * events are published only after it commits.
 */
export class SessionWrites {
  constructor(
    readonly prisma: PrismaClient,
    readonly sql: Sql,
    readonly bus: EventBus,
  ) {}

  /** Runs `work` in a Prisma transaction, retrying serialization failures and deadlocks, then publishes. */
  write<T>(work: (tx: Tx, events: SessionEventMessage[]) => Promise<T>): Promise<T> {
    return this.retrying((events) => this.prisma.$transaction((tx) => work(tx, events)));
  }

  /** `write` in a plain SQL transaction, for the hot paths (see db/sql.ts). */
  writeSql<T>(work: (sql: SqlClient, events: SessionEventMessage[]) => Promise<T>): Promise<T> {
    return this.retrying((events) => this.sql.transaction((sql) => work(sql, events)));
  }

  /** `run` (which opens its own transaction, or is one statement), retried like `write`, then publishes. */
  retrying<T>(run: (events: SessionEventMessage[]) => Promise<T>): Promise<T> {
    return writeThenPublish(this.bus, run, isRetryable);
  }

  async lock(db: SqlTarget, workspaceId: string, sessionId: string, clientId = sessionId): Promise<LockedSession> {
    const row = await sessionStore.lockSession(db, workspaceId, sessionId);
    if (!row) throw notFound('Session', clientId);
    return row;
  }

  /**
   * Locks the root of the session's fork tree, in one statement. Forks and deletes take it first
   * (then the session itself), so concurrent forks anywhere in one tree get distinct numbers and a
   * delete never races a fork of a session it removes.
   */
  async lockTreeRoot(db: SqlTarget, workspaceId: string, sessionId: string, clientId = sessionId): Promise<LockedSession> {
    const row = await sessionStore.lockTreeRoot(db, workspaceId, sessionId);
    if (!row) throw notFound('Session', clientId);
    return row;
  }
}

function isRetryable(error: unknown): boolean {
  if (isRetryableSqlError(error)) return true;
  if (!(error instanceof Prisma.PrismaClientKnownRequestError)) return false;
  if (error.code === 'P2034') return true;
  const meta = error.meta as { code?: string; driverAdapterError?: { cause?: { originalCode?: string } } } | undefined;
  return isRetryableSqlError({ code: meta?.code ?? meta?.driverAdapterError?.cause?.originalCode });
}
