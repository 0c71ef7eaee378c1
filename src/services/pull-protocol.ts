/**
 * The pull protocol of the streams services hand out (a session's events): a stream's next step
 * handed to an object's methods instead of a promise. Every subscribed socket waits on its stream
 * for as long as it stays, and a pending `next()` is a promise, its `resolve` and `reject`
 * closures, their context and the awaiting frame per layer and subscriber: the layers of a
 * WebSocket subscription (the session's event stream, the pump that executes and writes its
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
