/**
 * A stream's next step handed to an object's methods instead of a promise. Every subscribed socket
 * waits on its stream for as long as it stays, and a pending `next()` is a promise, its `resolve`
 * and `reject` closures, their context and the awaiting frame per layer and subscriber: the layers
 * of a WebSocket subscription (the session's event stream, the pump that executes and writes its
 * events, the socket's operation) wait on each other this way, each handing the step to the next
 * one's prototype methods.
 */
export interface StepConsumer<T> {
  /** The next value, or the end (`done`). */
  step(result: IteratorResult<T>): void;
  /** The stream failed; it is over. */
  fail(error: unknown): void;
}

/** The method of a stream that takes a `StepConsumer` for its next step (the `next()` of a consumer without promises). */
export const PULL = Symbol('pull');

export interface Pullable<T> {
  /**
   * Asks for the next step, as `next()` does: the consumer gets exactly one `step` or `fail` call,
   * possibly before this returns. One pull at a time.
   */
  [PULL](consumer: StepConsumer<T>): void;
}

export function isPullable<T>(value: object): value is Pullable<T> {
  return typeof (value as Partial<Pullable<T>>)[PULL] === 'function';
}

/**
 * Asks `stream` for its next step on behalf of `consumer`: through `PULL` when the stream offers it
 * (no promise), else through `next()`, whose result or failure (thrown or rejected) goes to the
 * consumer's methods.
 */
export function pullStep<T>(stream: AsyncIterator<T>, consumer: StepConsumer<T>) {
  if (isPullable<T>(stream)) return stream[PULL](consumer);
  let next: Promise<IteratorResult<T>>;
  try {
    next = stream.next();
  } catch (error) {
    return consumer.fail(error);
  }
  next.then(
    (step) => consumer.step(step),
    (error: unknown) => consumer.fail(error),
  );
}
