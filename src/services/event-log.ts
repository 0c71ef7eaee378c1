import type { EventBus, SessionEventMessage } from '../pubsub/bus.js';

/*
 * The session event log: its statements (the append, and the reads the streams make) live in the
 * events store; events are published only after the transaction that appended them commits, and
 * read back as streams that fill gaps from the log (event-stream.ts).
 */

/** Publishes events of a committed transaction. */
export function publishAll(bus: EventBus, events: SessionEventMessage[]) {
  for (const event of events) bus.publish(event);
}

/**
 * Runs a write transaction (`run` collects the events it appends), again with fresh events on a
 * serialization failure or deadlock (`retryable`), at most five times; publishes the events only
 * once it has committed.
 */
export async function writeThenPublish<T>(
  bus: EventBus,
  run: (events: SessionEventMessage[]) => Promise<T>,
  retryable: (error: unknown) => boolean,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const events: SessionEventMessage[] = [];
    try {
      const result = await run(events);
      publishAll(bus, events);
      return result;
    } catch (error) {
      if (attempt < 5 && retryable(error)) continue;
      throw error;
    }
  }
}
