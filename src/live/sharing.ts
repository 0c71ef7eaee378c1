import type { Duplex } from 'node:stream';
import type { DocumentNode, ExecutionArgs, ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { WebSocket } from 'ws';
import { stringInterner } from '../caches/interner.js';
import type { EventExecution } from '../graphql/query-jit.js';
import { PULL, type Pullable, pullStep, type StepConsumer } from './pull.js';
import { type Completable, type SelfTracking, TRACK_SELF } from './subscription-tracker.js';
import { Kind, createSourceEventStream, execute, print, visit } from '../packages/index.js';

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
   * (the workspace today). Return null to opt a context out of sharing.
   */
  scopeOf(context: Context): string | null;
  /** A fresh context for one event's execution (Pothos's per-context caches are per event, hayes/pothos#1421). */
  contextForEvent(context: Context): Context;
  /**
   * Arguments of root subscription fields that only choose where the source stream starts and
   * never change an event's payload (`sessionEvents.afterSequence`): subscribers that differ only
   * in them share executions. An argument whose variable is used anywhere else still counts.
   */
  streamOnlyArguments?: Record<string, readonly string[]>;
  /** How many results to keep (distinct selection × event). */
  maxEntries?: number;
  /** How many distinct selection texts get a short id (SUBSCRIPTION_SHAPES_MAX); beyond it the table starts over. */
  maxShapes?: number;
  /** How long a result may be reused, in ms: long enough for one event's fan-out, short enough that a later replay reads fresh data. */
  ttlMs?: number;
  /** A compiled execution of an event for the subscription `args` (`useQueryJit`'s `eventExecutor`); null: graphql-js executes it. */
  compiled?(args: ExecutionArgs): EventExecution | null;
}

/** Rewrites what a stream sends its subscriber through the transport: results with errors, and its error. */
export interface StreamMask {
  /** A result with errors (the same object for every subscriber that shares it). */
  result(result: ExecutionResult): ExecutionResult;
  /** The error the stream ends with. */
  error(error: unknown): unknown;
}

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
   * plugin's `onNext` and `onSubscribeError`, Yoga's abort rule, the hooks' arrays and closures:
   * about 2 KB per subscribed socket), all for results that, but for errors, never pass through
   * them: the caller does their work here instead (the masking in `mask`, the shutdown tracking on
   * the returned stream). None of this app's other plugins hook `onSubscribe`.
   */
  subscribeToSocket(
    args: ExecutionArgs,
    sink: LiveSink,
    mask: StreamMask,
  ): Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult>;
}

/**
 * An event's execution for a selection key: run once per (key, event) and shared (`once`), or for
 * one subscriber (`run`). A result is returned as it is once known, a promise only while pending.
 */
interface Executions {
  run(args: ExecutionArgs, event: unknown): ExecutionResult | PromiseLike<ExecutionResult>;
  once(key: string | null, args: ExecutionArgs, event: unknown): ExecutionResult | PromiseLike<ExecutionResult>;
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
 * The cache holds promises of results keyed by (selection, event id); it can never serve a
 * result of another scope (the scope is in the key), and it forgets entries after `ttlMs` or when
 * `maxEntries` is exceeded, oldest first. Events without a string `id` are executed per subscriber.
 * Over SSE it is an envelop plugin (`onSubscribe`), so every other plugin (masking, limits) still
 * sees each subscriber's operation and results; graphql-transport-ws subscriptions take
 * `subscribeToSocket`, which writes their results to the socket itself.
 */
export function useSubscriptionSharing<Context>(options: SubscriptionSharingOptions<Context>): SubscriptionSharing {
  const stats: SharingStats = { executions: 0, shared: 0 };
  const results = new EventMemo<ExecutionResult>(options.maxEntries, options.ttlMs);
  const shapes = new WeakMap<DocumentNode, DocumentShape>();
  const streamOnly = options.streamOnlyArguments ?? {};
  // A selection's text stands in the keys as a short id: each subscriber keeps its key for as long
  // as it stays, and the text in it (a JSON-escaped copy of the whole document) was about 1.5 KB
  // per subscribed socket. The same text gets the same id, so documents that differ only in what
  // the shape strips still share; the table starts over when full (ids are never reused, so that
  // only costs sharing between subscribers on either side of the reset, never a wrong result).
  const maxShapes = options.maxShapes ?? 1_000;
  const shapeIds = new Map<string, string>();
  let lastShapeId = 0;
  const shapeOf = (document: DocumentNode): DocumentShape => {
    let shape = shapes.get(document);
    if (shape) return shape;
    const { text, keyedVariables } = documentShape(document, streamOnly);
    let id = shapeIds.get(text);
    if (id === undefined) {
      if (shapeIds.size >= maxShapes) shapeIds.clear();
      shapeIds.set(text, (id = `${++lastShapeId}`));
    }
    shapes.set(document, (shape = { id, keyedVariables }));
    return shape;
  };

  // Every subscriber keeps its key for as long as it stays, and subscribers of one selection have
  // equal keys: each gets the first one's string (a fresh one was a flat or concatenated string
  // of about 400 B per subscribed socket). A key longer than 4 KB (large variables) is its
  // subscriber's own.
  const internKey = stringInterner(options.maxEntries ?? 5_000);
  const selectionKey = (args: ExecutionArgs): string | null => {
    const scope = options.scopeOf(args.contextValue as Context);
    if (scope === null) return null;
    const shape = shapeOf(args.document);
    // Only the variables the document declares (coercion has checked them against the schema's
    // types): anything else a client sends is ignored by the execution, so it must neither split
    // sharing nor reach the key (10,000 nested arrays overflowed the stack of \`canonical\`).
    const given = args.variableValues ?? {};
    const variables: Record<string, unknown> = {};
    for (const name of shape.keyedVariables) if (given[name] !== undefined) variables[name] = given[name];
    return internKey(JSON.stringify([shape.id, args.operationName ?? null, canonical(variables), scope]));
  };

  const executions: Executions = {
    run(args, event) {
      stats.executions++;
      const contextValue = options.contextForEvent(args.contextValue as Context);
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
      return new PumpStream(source[Symbol.asyncIterator](), executions, selectionKey(args), args, sink, mask);
    },
    onSubscribe({ setSubscribeFn }) {
      setSubscribeFn(subscribe as never);
    },
  };
}

/** A document as far as sharing is concerned: the id of its text without stream-only arguments, and their variables. */
interface DocumentShape {
  id: string;
  /** The variables it declares, but for those of stream-only arguments. */
  keyedVariables: string[];
}

function documentShape(document: DocumentNode, streamOnly: Record<string, readonly string[]>): { text: string; keyedVariables: string[] } {
  const uses = new Map<string, number>();
  const declared: string[] = [];
  visit(document, {
    Variable(node) {
      uses.set(node.name.value, (uses.get(node.name.value) ?? 0) + 1);
    },
    VariableDefinition(node) {
      declared.push(node.variable.name.value);
      return false;
    },
  });
  const dropped: string[] = [];
  let depth = 0;
  const stripped = visit(document, {
    OperationDefinition: {
      enter: () => void (depth = 0),
    },
    SelectionSet: {
      enter: () => void depth++,
      leave: () => void depth--,
    },
    Field(field) {
      if (depth !== 1) return;
      const names = streamOnly[field.name.value];
      if (!names?.length) return;
      const kept = (field.arguments ?? []).filter((arg) => {
        if (!names.includes(arg.name.value)) return true;
        if (arg.value.kind !== Kind.VARIABLE) return false;
        const variable = arg.value.name.value;
        if ((uses.get(variable) ?? 0) > 1) return true;
        dropped.push(variable);
        return false;
      });
      return { ...field, arguments: kept };
    },
  });
  // The stripped variables' definitions go too, so `$after: Int` and `$after: Int = 0` share.
  const text = print(
    visit(stripped, {
      VariableDefinition: (definition) => (dropped.includes(definition.variable.name.value) ? null : undefined),
    }),
  );
  return { text, keyedVariables: declared.filter((name) => !dropped.includes(name)) };
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof (value as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] === 'function';
}

/** JSON with object keys sorted, so `{a, b}` and `{b, a}` give the same key. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
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

/** A subscriber's socket as far as a live result is concerned: see `webSocketSink`. */
export interface LiveSink {
  /** The operation's id (graphql-transport-ws `subscribe` id). */
  readonly id: string;
  /** False once the socket is closing or closed: results are then dropped, as graphql-ws drops them. */
  open(): boolean;
  /**
   * Writes one text frame, whole (`textFrame`: header and payload); returns a promise when the
   * socket's buffer is over its mark (it resolves once this frame is written).
   */
  write(frame: Buffer): Promise<void> | undefined;
}

/** A socket buffering more than this makes its stream wait (a slow consumer reads the log instead of growing memory). */
const SINK_HIGH_WATER = 64 * 1024;

const TEXT_FRAME = { binary: false } as const;

/**
 * A server's WebSocket text frame of `payload`, whole: FIN and opcode 1, no mask, the payload's
 * length in 7, 16 or 64 bits (RFC 6455, 5.2), then the payload. What `ws` writes for a text
 * message sent without compression, in one buffer.
 */
export function textFrame(payload: string): Buffer {
  const length = Buffer.byteLength(payload);
  const head = length < 126 ? 2 : length < 65_536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(head + length);
  frame[0] = 0x81;
  if (length < 126) frame[1] = length;
  else if (length < 65_536) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeBigUInt64BE(BigInt(length), 2);
  }
  frame.write(payload, head, 'utf8');
  return frame;
}

/** The payload of a `textFrame`, without copying it. */
const payloadOf = (frame: Buffer) => frame.subarray(frame[1] === 126 ? 4 : frame[1] === 127 ? 10 : 2);

/** The parts of a `ws` WebSocket its sender's state is read from (see `directSocket`). */
interface WsInternals {
  _socket?: Duplex | null;
  _sender?: { _state: number; _queue: unknown[] } | null;
}

/**
 * The TCP socket a whole frame can be written to directly, or null. `ws` sends a message as a
 * header and a payload written together (a `writev`, with its queue and write request per frame);
 * a frame made once for a result's every subscriber goes out in one plain write instead (in a
 * profile of the stream scenario, a quarter less of the fan-out's time outside the system calls).
 * Only while `ws` itself writes synchronously and has nothing queued (its sender idle, no Blob
 * being read), so that frames keep their order with everything else `ws` sends, and only on a
 * socket without compression (the caller checks); otherwise `ws.send` takes the payload.
 */
function directSocket(socket: WebSocket): Duplex | null {
  const { _socket: raw, _sender: sender } = socket as unknown as WsInternals;
  if (!raw || !sender || sender._state !== 0 || sender._queue.length > 0) return null;
  return raw;
}

/** A graphql-ws subscriber's socket as a `LiveSink`. */
export function webSocketSink(socket: WebSocket, id: string): LiveSink {
  return new WebSocketSink(socket, id);
}

/** A class so that each subscriber's sink is one small object, its methods on the prototype. */
class WebSocketSink implements LiveSink {
  /** No extension was negotiated (fixed at the handshake; `ws`'s getter builds the list on each read). */
  private readonly plain: boolean;

  constructor(
    private readonly socket: WebSocket,
    readonly id: string,
  ) {
    this.plain = socket.extensions === '';
  }

  open() {
    return this.socket.readyState === this.socket.OPEN;
  }

  write(frame: Buffer): Promise<void> | undefined {
    const { socket } = this;
    const within = socket.bufferedAmount + frame.length <= SINK_HIGH_WATER;
    const raw = this.plain ? directSocket(socket) : null;
    if (raw) {
      if (within) {
        raw.write(frame);
        return undefined;
      }
      return new Promise((resolve) => raw.write(frame, () => resolve()));
    }
    const payload = payloadOf(frame);
    if (within) {
      socket.send(payload, TEXT_FRAME);
      return undefined;
    }
    return new Promise((resolve) => socket.send(payload, TEXT_FRAME, () => resolve()));
  }
}

/** The graphql-transport-ws `next` frames of one result, serialized once, by operation id. */
const frames = new WeakMap<ExecutionResult, { payload: string; byId: Map<string, Buffer> }>();
const MAX_FRAME_IDS = 16;

/** `{"id":…,"type":"next","payload":result}`, exactly as graphql-ws writes a result without errors, as a whole `textFrame`. */
function nextFrame(result: ExecutionResult, id: string): Buffer {
  let entry = frames.get(result);
  if (!entry) frames.set(result, (entry = { payload: JSON.stringify(result), byId: new Map() }));
  let frame = entry.byId.get(id);
  if (!frame) {
    frame = textFrame(`{"id":${JSON.stringify(id)},"type":"next","payload":${entry.payload}}`);
    if (entry.byId.size < MAX_FRAME_IDS) entry.byId.set(id, frame);
  }
  return frame;
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
 * A class driven by callbacks, not an async loop over closures: every subscriber holds one for as
 * long as it stays, its methods live on the prototype, and it waits on its source (and the
 * transport on it) without a promise, through `PULL` when the other side offers it.
 */
class PumpStream<T>
  implements AsyncIterableIterator<ExecutionResult>, Pullable<ExecutionResult>, StepConsumer<T>, SelfTracking, Completable
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

  constructor(
    private readonly iterator: AsyncIterator<T>,
    private readonly executions: Executions,
    private readonly key: string | null,
    private readonly args: ExecutionArgs,
    private readonly sink: LiveSink,
    private readonly mask: StreamMask,
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
    const { sink } = this;
    if (!sink.open()) return this.pullSource();
    if (result.errors?.length) {
      this.paused = true;
      return this.hand({ result: { value: this.mask.result(result), done: false } });
    }
    let drained: Promise<void> | undefined;
    try {
      drained = sink.write(nextFrame(result, sink.id));
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

/**
 * Values computed for one event, keyed by (event id, what): the first caller computes, the others
 * of the same event share its result, as it is once known (a promise only while it is pending:
 * every subscriber of an event asks, and a `then` per subscriber was two closures and a promise
 * each). Bounded twice: entries older than `ttlMs` are recomputed (long enough for one event's
 * fan-out, short enough that a later replay reads the data as it is then), and beyond
 * `maxEntries` the oldest go first. A rejected computation is forgotten, so the next caller tries
 * again.
 *
 * Kept by event, then by what: every subscriber of an event asks with the same two strings (the
 * event's id, its interned selection key), whose hashes are computed once. One key joined from both
 * was a new string per subscriber per event, flattened and hashed on each lookup: the memo's own
 * time was the largest of ours in a 1,000-subscriber fan-out's profile (89 of 2,640 ms busy).
 */
export class EventMemo<V> {
  /** Entries by event id (in the order events were first seen), then by what. */
  private readonly events = new Map<string, Map<string, MemoEntry<V>>>();
  private count = 0;

  constructor(
    private readonly maxEntries = 5_000,
    private readonly ttlMs = 5_000,
  ) {}

  /** The value (or its pending promise) kept for (event, what) and still within its time to live; undefined if none. */
  find(eventId: string, what: string): V | PromiseLike<V> | undefined {
    const hit = this.events.get(eventId)?.get(what);
    return this.fresh(hit, Date.now()) ? hit.value : undefined;
  }

  get(eventId: string, what: string, compute: () => V | PromiseLike<V>): V | PromiseLike<V> {
    const now = Date.now();
    let ofEvent = this.events.get(eventId);
    const hit = ofEvent?.get(what);
    if (this.fresh(hit, now)) return hit.value;
    const value = compute();
    const entry: MemoEntry<V> = { at: now, value };
    // An expired entry goes first (its event goes too when that was its last entry, and comes back as the newest).
    if (ofEvent && hit) this.remove(eventId, ofEvent, what);
    ofEvent = this.events.get(eventId);
    if (!ofEvent) this.events.set(eventId, (ofEvent = new Map()));
    ofEvent.set(what, entry);
    this.count++;
    if (isPromiseLike(value)) {
      const kept = ofEvent;
      // A thenable's `then` (Prisma's queries run when first asked) starts it, as the caller's would.
      value.then(
        (settled) => {
          if (kept.get(what) === entry) entry.value = settled;
        },
        () => {
          if (kept.get(what) === entry) this.remove(eventId, kept, what);
        },
      );
    }
    this.evict(now);
    return value;
  }

  get size() {
    return this.count;
  }

  /** Whether an entry is there and within its time to live. */
  private fresh(entry: MemoEntry<V> | undefined, now: number): entry is MemoEntry<V> {
    return entry !== undefined && now - entry.at <= this.ttlMs;
  }

  private remove(eventId: string, ofEvent: Map<string, MemoEntry<V>>, what: string) {
    if (!ofEvent.delete(what)) return;
    this.count--;
    if (ofEvent.size === 0 && this.events.get(eventId) === ofEvent) this.events.delete(eventId);
  }

  /** Drops entries, oldest event first, until the oldest left is within its time to live and the bound. */
  private evict(now: number) {
    for (const [eventId, ofEvent] of this.events) {
      for (const [what, entry] of ofEvent) {
        if (this.count <= this.maxEntries && this.fresh(entry, now)) return;
        ofEvent.delete(what);
        this.count--;
      }
      this.events.delete(eventId);
    }
  }
}

function isPromiseLike<V>(value: V | PromiseLike<V>): value is PromiseLike<V> {
  return typeof (value as Partial<PromiseLike<V>> | null)?.then === 'function';
}

interface MemoEntry<V> {
  at: number;
  /** The value, or its promise until it settles. */
  value: V | PromiseLike<V>;
}
