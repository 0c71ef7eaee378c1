import { PULL, type Pullable, type StepConsumer } from '../services/pull-protocol.js';

/** Whether `value` offers the pull protocol (services/pull-protocol.ts) for its next step. */
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
