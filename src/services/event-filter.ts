import type { SessionEventMessage } from '../pubsub/bus.js';
import type { SessionEventStream } from './event-stream.js';
import { PULL, type StepConsumer } from './pull-protocol.js';

/**
 * The events of `stream` that `keep` accepts (turnEvents takes a session's turn events this way).
 * Unlike an `async function*` wrapper, `return()` reaches the stream at once, so a client that
 * leaves is released without waiting for the session's next event.
 */
export function filterEvents(
  stream: SessionEventStream,
  keep: (event: SessionEventMessage) => boolean,
  onReturn?: () => void,
): SessionEventStream {
  return new FilteredEvents(stream, keep, onReturn);
}

/** The stream `filterEvents` returns: one object per subscriber, pulling its source without a promise. */
class FilteredEvents implements SessionEventStream, StepConsumer<SessionEventMessage> {
  private consumer: StepConsumer<SessionEventMessage> | null = null;

  constructor(
    private readonly stream: SessionEventStream,
    private readonly keep: (event: SessionEventMessage) => boolean,
    private readonly onReturn?: () => void,
  ) {}

  [PULL](consumer: StepConsumer<SessionEventMessage>) {
    if (this.consumer) return consumer.fail(new Error('filterEvents: next() called while another next() is pending'));
    this.consumer = consumer;
    this.stream[PULL](this);
  }

  /** The source's step: passed on if kept (or the end); otherwise the next one is asked for. */
  step(step: IteratorResult<SessionEventMessage>) {
    // The source hands ready events in a loop: asking again from here does not recurse.
    if (!step.done && !this.keep(step.value)) return this.stream[PULL](this);
    const consumer = this.consumer;
    this.consumer = null;
    consumer?.step(step);
  }

  fail(error: unknown) {
    const consumer = this.consumer;
    this.consumer = null;
    consumer?.fail(error);
  }

  next(): Promise<IteratorResult<SessionEventMessage>> {
    return new Promise((resolve, reject) => this[PULL]({ step: resolve, fail: reject }));
  }

  return(): Promise<IteratorResult<SessionEventMessage>> {
    this.onReturn?.();
    return this.stream.return();
  }

  [Symbol.asyncIterator]() {
    return this;
  }
}
