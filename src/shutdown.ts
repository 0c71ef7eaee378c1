import type { Plugin } from 'graphql-yoga';

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

const isAsyncIterable = (value: unknown): value is AsyncIterable<unknown> =>
  typeof value === 'object' && value !== null && Symbol.asyncIterator in value;

/**
 * Lets shutdown complete every open subscription, over SSE (the client gets `complete`) and
 * graphql-ws alike. Each subscription's result stream is wrapped so that `completeAll()` ends it
 * at once, even while it waits for its next event (an async generator's own `return()` would wait
 * for that event); the inner stream is then released in the background.
 */
export class SubscriptionTracker {
  private readonly stops = new Set<() => void>();
  private stopped = false;

  get size() {
    return this.stops.size;
  }

  plugin(): Plugin {
    return {
      onSubscribe: () => ({
        onSubscribeResult: ({ result, setResult }) => {
          if (isAsyncIterable(result)) setResult(this.track(result) as never);
        },
      }),
    };
  }

  /** Ends every open subscription and any started from now on. */
  completeAll() {
    this.stopped = true;
    for (const stop of [...this.stops]) stop();
  }

  private track<T>(source: AsyncIterable<T>): AsyncIterableIterator<T> {
    const inner = source[Symbol.asyncIterator]();
    let finished = false;
    /** Ends the `next()` waiting now, if any. */
    let ending: ((done: IteratorReturnResult<undefined>) => void) | null = null;
    // Not `Promise.race([inner.next(), stopping])` with one promise kept for the whole subscription:
    // each race adds a reaction to that promise that stays until it settles, so a subscriber held
    // one more per event for as long as it stayed (the soak's RSS grew with the events delivered).
    const stop = () => {
      finish();
      ending?.(DONE);
      ending = null;
    };
    const finish = () => {
      if (finished) return;
      finished = true;
      this.stops.delete(stop);
      void Promise.resolve(inner.return?.()).catch(() => {});
    };
    this.stops.add(stop);
    if (this.stopped) stop();
    return {
      [Symbol.asyncIterator]() {
        return this;
      },
      async next() {
        if (finished) return DONE;
        const result = await new Promise<IteratorResult<T>>((resolve, reject) => {
          ending = resolve;
          inner.next().then(resolve, reject);
        });
        ending = null;
        if (result.done) finish();
        return finished && !result.done ? DONE : result;
      },
      async return() {
        finish();
        return DONE;
      },
      async throw(error) {
        finish();
        throw error;
      },
    };
  }
}
