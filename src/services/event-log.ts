import { uuidv7 } from '../db/ids.js';
import type { EventBus, SessionEventMessage } from '../pubsub.js';
import type { PrismaClient } from '../generated/prisma/client.js';

// The log's writes and their SQL live in the events store.
export { appendEvents, type NewSessionEvent } from '../db/stores/events.js';

/** The type of the live-only event that ends a deleted session's streams. */
export const SESSION_DELETED = 'SESSION_DELETED';

/**
 * The last event of a deleted session's stream. Its log rows went with the session, so it is never
 * stored: it is published once (after the delete commits) with the sequence after the session's
 * last one, and a stream that delivers it completes.
 */
export function sessionDeletedEvent(sessionId: string, lastSequence: number): SessionEventMessage {
  return {
    id: uuidv7(),
    sessionId,
    sequence: Number(lastSequence) + 1,
    type: SESSION_DELETED,
    turnId: null,
    messageId: null,
    payload: {},
    createdAt: new Date().toISOString(),
  };
}

/** Publishes events of a committed transaction. */
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
      if (event.type === SESSION_DELETED) return;
    }
  } finally {
    signal?.removeEventListener('abort', stop);
    live.close();
  }
}
