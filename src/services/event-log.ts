import { uuidv7 } from '../db/ids.js';
import type { SqlClient } from '../db/sql.js';
import type { EventBus, SessionEventMessage } from '../pubsub.js';
import type { Prisma, PrismaClient, SessionEventType } from '../generated/prisma/client.js';

export type Tx = Prisma.TransactionClient;

/** A Prisma transaction or a plain SQL one: the statements shared by both kinds of write take either. */
export type SqlTarget = Tx | SqlClient;

/** `db` as plain SQL (`$1` parameters); a Prisma transaction runs it with `$queryRawUnsafe`. */
export function asSql(db: SqlTarget): SqlClient {
  if ('query' in db && typeof db.query === 'function') return db as SqlClient;
  const tx = db as Tx;
  return { query: <T>(text: string, values: readonly unknown[] = []) => tx.$queryRawUnsafe<T[]>(text, ...values) };
}

export interface NewSessionEvent {
  type: SessionEventType;
  turnId?: string | null;
  messageId?: string | null;
  payload?: Record<string, unknown>;
}

/**
 * Appends events to a session's log inside the caller's transaction. The sequence counter lives on
 * the session row, so numbers are gapless per session even across server instances. Returns the
 * events to publish once the transaction has committed.
 */
export async function appendEvents(db: SqlTarget, sessionId: string, events: NewSessionEvent[]): Promise<SessionEventMessage[]> {
  if (events.length === 0) return [];
  const createdAt = new Date();
  const ids = events.map(() => uuidv7());
  // One statement: take the next sequence numbers from the session row and insert the events.
  const rows = await asSql(db).query<{ id: string; sequence: number }>(
    `WITH numbered AS (
       UPDATE "Session" SET "eventSequence" = "eventSequence" + $2::int WHERE id = $1
       RETURNING "eventSequence" - $2::int AS base
     )
     INSERT INTO "SessionEvent" (id, "sessionId", sequence, type, "turnId", "messageId", payload, "createdAt")
     SELECT e.id, $1, numbered.base + e.ord, e.type::"SessionEventType", e.turn_id, e.message_id, e.payload::jsonb, $3::timestamp(3)
     FROM numbered, unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
       WITH ORDINALITY AS e(id, type, turn_id, message_id, payload, ord)
     RETURNING id, sequence`,
    [
      sessionId,
      events.length,
      createdAt.toISOString(),
      ids,
      events.map((e) => e.type),
      events.map((e) => e.turnId ?? null),
      events.map((e) => e.messageId ?? null),
      events.map((e) => JSON.stringify(e.payload ?? {})),
    ],
  );
  const sequenceOf = new Map(rows.map((row) => [row.id, Number(row.sequence)]));
  return events.map((event, i) => ({
    id: ids[i],
    sessionId,
    sequence: sequenceOf.get(ids[i])!,
    type: event.type,
    turnId: event.turnId ?? null,
    messageId: event.messageId ?? null,
    payload: event.payload ?? {},
    createdAt: createdAt.toISOString(),
  }));
}

export function publishAll(bus: EventBus, events: SessionEventMessage[]) {
  for (const event of events) bus.publish(event);
}

const REPLAY_PAGE = 500;

/**
 * One session's events as a stream: with `afterSequence`, every stored event after it first, then
 * live ones; without, live ones from now. Live events come from pub/sub; any gap (a publish lost or
 * raced by our SUBSCRIBE) is filled from the log, so a client sees each event once, in order.
 */
export async function* sessionEventStream(
  prisma: PrismaClient,
  bus: EventBus,
  sessionId: string,
  afterSequence: number | null,
  signal?: AbortSignal,
): AsyncGenerator<SessionEventMessage> {
  const live = bus.subscribe(sessionId);
  const stop = () => live.close();
  signal?.addEventListener('abort', stop);
  try {
    await live.ready;
    let last: number;
    if (afterSequence === null) {
      const session = await prisma.session.findUnique({ where: { id: sessionId }, select: { eventSequence: true } });
      last = session?.eventSequence ?? 0;
    } else {
      last = Math.max(0, afterSequence);
    }
    const readFromLog = async function* (upTo: number | null) {
      for (;;) {
        const rows = await prisma.sessionEvent.findMany({
          where: { sessionId, sequence: upTo === null ? { gt: last } : { gt: last, lte: upTo } },
          orderBy: { sequence: 'asc' },
          take: REPLAY_PAGE,
        });
        for (const row of rows) {
          last = row.sequence;
          yield { ...row, createdAt: row.createdAt.toISOString() } as SessionEventMessage;
        }
        if (rows.length < REPLAY_PAGE) return;
      }
    };
    yield* readFromLog(null);
    for await (const event of live) {
      if (event.sequence <= last) continue;
      if (event.sequence > last + 1) yield* readFromLog(event.sequence - 1);
      if (event.sequence <= last) continue;
      last = event.sequence;
      yield event;
    }
  } finally {
    signal?.removeEventListener('abort', stop);
    live.close();
  }
}
