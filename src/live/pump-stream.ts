import type { ExecutionArgs, ExecutionResult } from 'graphql';
import { isPromiseLike } from '../caches/event-memo.js';
import type { SlicedWork, Slicer } from '../pubsub/slicer.js';
import { PULL, type Pullable, type StepConsumer } from '../services/pull-protocol.js';
import { pullStep } from './pull-step.js';
import { type Completable, type SelfTracking, TRACK_SELF } from './subscription-tracker.js';
import { type LiveSink, nextMessage } from './ws-sink.js';

/**
 * An event's execution for a selection key: run once per (key, event) and shared (`once`), or for
 * one subscriber (`run`). A result is returned as it is once known, a promise only while pending.
 */
export interface Executions {
  run(args: ExecutionArgs, event: unknown): ExecutionResult | PromiseLike<ExecutionResult>;
  once(key: string | null, args: ExecutionArgs, event: unknown): ExecutionResult | PromiseLike<ExecutionResult>;
}

/** Rewrites what a stream sends its subscriber through the transport: results with errors, and its error. */
export interface StreamMask {
  /** A result with errors (the same object for every subscriber that shares it). */
  result(result: ExecutionResult): ExecutionResult;
  /** The error the stream ends with. */
  error(error: unknown): unknown;
}

const DONE: IteratorReturnResult<undefined> = { value: undefined, done: true };

/** One handover from the pump to the transport: a result (or the end), or an error. */
type Handed = { result: IteratorResult<ExecutionResult> } | { error: unknown };

/**
 * A graphql-transport-ws subscriber's stream (`subscribeToSocket`): pulls its source, executes each
 * event (shared through `executions`) and writes each result without errors straight to the
 * socket, serialized once for every subscriber sharing it, instead of handing it one subscriber at
 * a time through the transport (graphql-ws's `next` serializes per socket and waits for each
 * write). The stream the transport holds yields only what must go its way (a result with errors,
 * masked; its end; its error, masked); the pump waits until the transport has sent such a result
 * (it asks for the next one) before it writes anything after it, so the subscriber gets every
 * result once and in order. `return()` stops the pump and releases the source at once.
 *
 * The writes go through `sends`, the instance's `Slicer` of socket writes: a result for 1,000
 * sockets is written a slice at a time, with I/O handled in between. Each stream has at most one
 * result waiting there (it pulls its next event only once that one is written), so a later event
 * never overtakes an earlier one on its socket; a result still waiting when the stream stops or the
 * socket closes is dropped, as graphql-ws drops what comes after `complete`.
 *
 * A class driven by callbacks, not an async loop over closures: every subscriber holds one for as
 * long as it stays, its methods live on the prototype, and it waits on its source (and the
 * transport on it) without a promise, through `PULL` when the other side offers it.
 */
export class PumpStream<T>
  implements AsyncIterableIterator<ExecutionResult>, Pullable<ExecutionResult>, StepConsumer<T>, SelfTracking, Completable, SlicedWork
{
  private started = false;
  /** The shutdown tracker's set, while this stream is in it (`return()` already ends a pending `next()` at once). */
  private tracker: Set<Completable> | null = null;
  private stopped = false;
  /** The transport's pending pull. */
  private consumer: StepConsumer<ExecutionResult> | null = null;
  /** What the pump handed over before the transport asked for it. */
  private handed: Handed | null = null;
  /** The pump handed a result over and waits until the transport asks again (it has sent it). */
  private paused = false;
  /** A result without errors waiting for its slice in `sends`. */
  private unsent: ExecutionResult | null = null;

  constructor(
    private readonly iterator: AsyncIterator<T>,
    private readonly executions: Executions,
    private readonly key: string | null,
    private readonly args: ExecutionArgs,
    private readonly sink: LiveSink,
    private readonly mask: StreamMask,
    private readonly sends: Slicer,
  ) {}

  [TRACK_SELF](streams: Set<Completable>) {
    if (this.stopped) return;
    this.tracker = streams;
    streams.add(this);
  }

  /** Shutdown: the transport's pending `next()` ends now, and the source is released. */
  complete() {
    void this.return().catch(() => {});
  }

  private hand(item: Handed) {
    const waiting = this.consumer;
    if (!waiting) {
      this.handed = item;
      return;
    }
    this.consumer = null;
    if ('error' in item) waiting.fail(item.error);
    else waiting.step(item.result);
  }

  private untrack() {
    this.tracker?.delete(this);
    this.tracker = null;
  }

  private stop() {
    if (this.stopped) return;
    this.stopped = true;
    this.untrack();
    this.hand({ result: DONE });
  }

  /** Asks the source for its next event. */
  private pullSource() {
    if (this.stopped) return;
    pullStep(this.iterator, this);
  }

  /**
   * The source's next step (`StepConsumer`): an event is executed, then delivered; at once when its
   * result is known (the subscribers after the first of an event whose execution is synchronous),
   * else when it settles.
   */
  step(step: IteratorResult<T>) {
    if (this.stopped) return;
    if (step.done) return this.stop();
    let result: ExecutionResult | PromiseLike<ExecutionResult>;
    try {
      result = this.executions.once(this.key, this.args, step.value);
    } catch (error) {
      return this.fail(error);
    }
    if (!isPromiseLike(result)) return this.deliver(result);
    result.then(
      (value) => this.deliver(value),
      (error: unknown) => this.fail(error),
    );
  }

  /** The source or an execution failed: the source is released and the transport gets the error. */
  fail(error: unknown) {
    // A failed execution leaves the source open: release it (the transport reports the error and never calls return()).
    void Promise.resolve()
      .then(() => this.iterator.return?.())
      .catch(() => {});
    if (this.stopped) return;
    this.stopped = true;
    this.untrack();
    this.hand({ error: this.mask.error(error) });
  }

  private deliver(result: ExecutionResult) {
    if (this.stopped) return;
    if (!this.sink.open()) return this.pullSource();
    if (result.errors?.length) {
      this.paused = true;
      return this.hand({ result: { value: this.mask.result(result), done: false } });
    }
    this.unsent = result;
    this.sends.run(this);
  }

  /** Its slice in `sends` (`SlicedWork`): writes the waiting result, then pulls the next event. */
  runSlice(): number {
    const result = this.unsent;
    if (!result) return 0;
    this.unsent = null;
    if (this.stopped) return 0;
    const { sink } = this;
    if (!sink.open()) {
      this.pullSource();
      return 0;
    }
    this.write(sink, result);
    return 1;
  }

  private write(sink: LiveSink, result: ExecutionResult) {
    let drained: Promise<void> | undefined;
    try {
      drained = sink.write(nextMessage(result, sink.id));
    } catch (error) {
      // A result that cannot be serialized fails the stream, as the transport would fail it; thrown
      // from here it would be an unhandled rejection of the execution's callback.
      return this.fail(error);
    }
    if (!drained) return this.pullSource();
    drained.then(() => this.pullSource());
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  [PULL](consumer: StepConsumer<ExecutionResult>) {
    const item = this.handed;
    this.handed = null;
    if (item) {
      if ('error' in item) consumer.fail(item.error);
      else consumer.step(item.result);
    } else if (this.stopped) {
      consumer.step(DONE);
    } else {
      this.consumer = consumer;
    }
    // Asking again means what was handed over has been sent: the pump goes on.
    if (this.paused) {
      this.paused = false;
      this.pullSource();
    }
    if (!this.started) {
      this.started = true;
      this.pullSource();
    }
  }

  next(): Promise<IteratorResult<ExecutionResult>> {
    return new Promise((resolve, reject) => this[PULL]({ step: resolve, fail: reject }));
  }

  async return(): Promise<IteratorResult<ExecutionResult>> {
    this.stop();
    await this.iterator.return?.();
    return DONE;
  }

  throw(): Promise<IteratorResult<ExecutionResult>> {
    return this.return();
  }
}
