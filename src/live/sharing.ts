import type { ExecutionArgs, ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { EventMemo } from '../caches/event-memo.js';
import type { EventExecution } from '../graphql/query-jit.js';
import { type Executions, PumpStream, type StreamMask } from './pump-stream.js';
import { selectionKeys } from './selection-key.js';
import { Slicer } from '../pubsub/slicer.js';
import type { LiveSink } from './ws-sink.js';
import { createSourceEventStream, execute } from 'graphql';

/** Counts for tests and diagnostics. */
export interface SharingStats {
  /** Events executed (once per distinct selection and event). */
  executions: number;
  /** Events answered from an execution another subscriber's event already ran. */
  shared: number;
}

export interface SubscriptionSharingOptions<Context> {
  /**
   * Who is asking, as far as results can differ: subscribers with different scopes never share
   * (the workspace today). Return null to opt a request context out of sharing.
   */
  scopeOf(context: Context): string | null;
  /** A fresh request context for one event's execution (Pothos's per-context caches are per event, hayes/pothos#1421). */
  requestContextForEvent(context: Context): Context;
  /**
   * Arguments of root subscription fields that only choose where the source stream starts and
   * never change an event's payload (`sessionEvents.afterSequence`): subscribers that differ only
   * in them share executions. An argument whose variable is used anywhere else still counts.
   */
  streamOnlyArguments?: Record<string, readonly string[]>;
  /** How many results to keep (distinct selection × event). */
  maxEntries?: number;
  /** How many distinct selection texts get a short id (`config.caches.subscriptionShapesMax`; see `selectionKeys`). */
  maxShapes?: number;
  /** How long a result may be reused, in ms: long enough for one event's fan-out, short enough that a later replay reads fresh data. */
  ttlMs?: number;
  /** A compiled execution of an event for the subscription `args` (`useQueryJit`'s `eventExecutor`); null: graphql-js executes it. */
  compiled?(args: ExecutionArgs): EventExecution | null;
}

/**
 * Socket writes per event-loop tick (`PumpStream`'s `sends`): one event for 1,000 sockets
 * is written in slices of this many, and a request that comes in meanwhile waits for one slice,
 * not for the whole fan-out.
 */
export const SENDS_PER_TICK = 64;

export interface SubscriptionSharing extends Plugin {
  stats: SharingStats;
  /**
   * A graphql-transport-ws subscription's stream, with the same sharing as the plugin's, outside
   * envelop: each result without errors is written to `sink` (serialized once for every subscriber
   * sharing it); the stream yields only what must go through the transport (a result with errors),
   * its end and its error, passed through `mask` first. A source stream that cannot start (a
   * result with errors, such as NOT_FOUND) is returned masked.
   *
   * Envelop's `subscribe` wraps each subscriber's stream in a layer per plugin hook (the masking
   * plugin's `onNext` and `onSubscribeError`, Yoga's abort rule), all for results that, but for
   * errors, never pass through them: the caller does their work here instead (the masking in `mask`, the shutdown tracking on
   * the returned stream). None of this app's other plugins hook `onSubscribe`.
   */
  subscribeToSocket(
    args: ExecutionArgs,
    sink: LiveSink,
    mask: StreamMask,
  ): Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult>;
}

/**
 * Executes a subscription event once per distinct selection per instance, not once per subscriber.
 * Each subscriber keeps its own source stream (its replay and live events, cheap plain objects);
 * what a payload costs (the GraphQL execution with its database reads) is shared by every
 * subscriber of the same event with the same document, operation, variables and scope, the way
 * Hasura multiplexes live queries (graphql/graphql-spec#304: the same root field and variables
 * map to the same event stream; apollographql/graphql-subscriptions#6: authorization is part of
 * what makes two subscriptions the same).
 *
 * The results are an `EventMemo` keyed by (event id, selection key); it can never serve a result
 * of another scope (the scope is in the key), and it forgets entries after `ttlMs` or when
 * `maxEntries` is exceeded, oldest first. Events without a string `id` are executed per subscriber.
 * Over SSE it is an envelop plugin (`onSubscribe`), so every other plugin (masking, limits) still
 * sees each subscriber's operation and results; graphql-transport-ws subscriptions take
 * `subscribeToSocket`, which writes their results to the socket itself.
 */
export function useSubscriptionSharing<Context>(options: SubscriptionSharingOptions<Context>): SubscriptionSharing {
  const stats: SharingStats = { executions: 0, shared: 0 };
  const results = new EventMemo<ExecutionResult>(options.maxEntries, options.ttlMs);
  const selectionKey = selectionKeys({ ...options, maxKeys: options.maxEntries });
  const sends = new Slicer(SENDS_PER_TICK);

  const executions: Executions = {
    run(args, event) {
      stats.executions++;
      const contextValue = options.requestContextForEvent(args.contextValue as Context);
      const compiled = options.compiled?.(args);
      return compiled
        ? compiled(event, contextValue)
        : (execute({ ...args, rootValue: event, contextValue }) as ExecutionResult | Promise<ExecutionResult>);
    },
    once(key, args, event) {
      const id = (event as { id?: unknown } | null)?.id;
      if (key === null || typeof id !== 'string') return this.run(args, event);
      // Looked up first: every subscriber after the first of an event takes this path, with no
      // closure made for it.
      const shared = results.find(id, key);
      if (shared !== undefined) {
        stats.shared++;
        return shared;
      }
      return results.get(id, key, () => this.run(args, event));
    },
  };

  const subscribe = async (args: ExecutionArgs) => {
    const source = await createSourceEventStream(args);
    if (!isAsyncIterable(source)) return source;
    const key = selectionKey(args);
    return mapStream(source, async (event) => executions.once(key, args, event));
  };

  return {
    stats,
    async subscribeToSocket(args, sink, mask) {
      const source = await createSourceEventStream(args);
      if (!isAsyncIterable(source)) return mask.result(source);
      return new PumpStream(source[Symbol.asyncIterator](), executions, selectionKey(args), args, sink, mask, sends);
    },
    onSubscribe({ setSubscribeFn }) {
      setSubscribeFn(subscribe as never);
    },
  };
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof (value as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] === 'function';
}

/**
 * `source` mapped through `map`, one value at a time. `return()` goes straight to the source (which
 * ends a pending `next()` at once), so a subscriber that leaves is released without waiting for
 * another event.
 */
function mapStream<T, R>(source: AsyncIterable<T>, map: (value: T) => Promise<R>): AsyncIterableIterator<R> {
  const iterator = source[Symbol.asyncIterator]();
  const stream: AsyncIterableIterator<R> = {
    [Symbol.asyncIterator]: () => stream,
    async next() {
      const step = await iterator.next();
      if (step.done) return { value: undefined, done: true };
      return { value: await map(step.value), done: false };
    },
    async return() {
      await iterator.return?.();
      return { value: undefined, done: true };
    },
    async throw(error: unknown) {
      if (iterator.throw) await iterator.throw(error);
      else await iterator.return?.();
      return { value: undefined, done: true };
    },
  };
  return stream;
}
