import type { Plugin } from 'graphql-yoga';

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

const isAsyncIterable = (value: unknown): value is AsyncIterable<unknown> =>
  typeof value === 'object' && value !== null && Symbol.asyncIterator in value;

/** What the tracker ends at shutdown: `complete()` ends a pending `next()` at once and releases the source. */
export interface Completable {
  complete(): void;
}

/**
 * The method of a stream that the tracker can hold as it is, without a wrapper: its `return()`
 * already ends a pending `next()` at once. Given the tracker's set, the stream adds itself and
 * deletes itself when it ends, whichever way.
 */
export const TRACK_SELF = Symbol('trackSelf');
export interface SelfTracking {
  [TRACK_SELF](streams: Set<Completable>): void;
}

const tracksSelf = (value: object): value is SelfTracking & Completable =>
  typeof (value as Partial<SelfTracking>)[TRACK_SELF] === 'function';

/**
 * Lets shutdown complete every open subscription, over SSE (the client gets `complete`) and
 * graphql-ws alike. Each subscription's result stream is wrapped so that `completeAll()` ends it
 * at once, even while it waits for its next event (an async generator's own `return()` would wait
 * for that event); the inner stream is then released in the background.
 */
export class SubscriptionTracker {
  private readonly stops = new Set<Completable>();
  private stopped = false;

  get size() {
    return this.stops.size;
  }

  plugin(): Plugin {
    // One hooks object for every subscription: envelop keeps what onSubscribe returns for as long
    // as the subscription's stream lives.
    const hooks = {
      onSubscribeResult: ({ result, setResult }: { result: unknown; setResult(result: never): void }) => {
        if (isAsyncIterable(result)) setResult(this.track(result) as never);
      },
    };
    return { onSubscribe: () => hooks };
  }

  /** Ends every open subscription and any started from now on. */
  completeAll() {
    this.stopped = true;
    for (const stream of [...this.stops]) stream.complete();
  }

  /** `source`, ended by `completeAll()` (the plugin does this to every subscription's stream envelop runs). */
  track<T>(source: AsyncIterable<T>): AsyncIterable<T> {
    if (tracksSelf(source)) {
      // Every subscribed socket holds its stream for as long as it stays: one layer fewer.
      source[TRACK_SELF](this.stops);
      if (this.stopped) source.complete();
      return source;
    }
    const tracked = new TrackedStream(source[Symbol.asyncIterator](), this.stops);
    if (this.stopped) tracked.complete();
    return tracked;
  }
}

/**
 * A tracked subscription's stream. A class, not closures over local variables: every subscriber
 * holds one for as long as it stays, and its methods live on the prototype; the tracker's set
 * holds the stream itself, and `completeAll` calls its `complete()`.
 */
class TrackedStream<T> implements AsyncIterableIterator<T>, Completable {
  private finished = false;
  /** Ends the `next()` waiting now, if any. */
  private ending: ((done: IteratorReturnResult<undefined>) => void) | null = null;

  constructor(
    private readonly inner: AsyncIterator<T>,
    private readonly stops: Set<Completable>,
  ) {
    stops.add(this);
  }

  // Not `Promise.race([inner.next(), stopping])` with one promise kept for the whole subscription:
  // each race adds a reaction to that promise that stays until it settles, so a subscriber held
  // one more per event for as long as it stayed (the soak's RSS grew with the events delivered).
  complete() {
    this.finish();
    this.ending?.(DONE);
    this.ending = null;
  }

  private finish() {
    if (this.finished) return;
    this.finished = true;
    this.stops.delete(this);
    void Promise.resolve(this.inner.return?.()).catch(() => {});
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  async next(): Promise<IteratorResult<T>> {
    if (this.finished) return DONE;
    const result = await new Promise<IteratorResult<T>>((resolve, reject) => {
      this.ending = resolve;
      this.inner.next().then(resolve, reject);
    });
    this.ending = null;
    if (result.done) this.finish();
    return this.finished && !result.done ? DONE : result;
  }

  async return(): Promise<IteratorResult<T>> {
    this.finish();
    return DONE;
  }

  async throw(error: unknown): Promise<IteratorResult<T>> {
    this.finish();
    throw error;
  }
}
