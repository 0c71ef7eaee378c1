import type { IncomingMessage } from 'node:http';
import type { ExecutionArgs, ExecutionResult } from 'graphql';
import type { SubscribePayload } from 'graphql-ws';
import type { WebSocket, WebSocketServer } from 'ws';
import { pullStep, type StepConsumer } from './pull.js';
import {
  CloseCode,
  GRAPHQL_TRANSPORT_WS_PROTOCOL,
  GraphQLError,
  MessageType,
  getOperationAST,
  handleProtocols,
  parseMessage,
  stringifyMessage,
} from '../packages/index.js';

/** What an operation's context keeps of a WebSocket connection: see `useWebSocketServer`. */
export interface SocketExtra {
  socket: WebSocket;
  /** The upgrade request's `Authorization` header, if any. */
  authorization: string | null;
  /** The client's address, for rate limiting. */
  remoteAddress: string | undefined;
}

/** A connection as the hooks see it (graphql-ws's `Context`, as far as this server reads it). */
export interface WsContext {
  /** `connection_init`'s payload, once it came (and was an object). */
  readonly connectionParams: Record<string, unknown> | undefined;
  readonly extra: SocketExtra;
}

type Awaitable<T> = T | Promise<T>;
type OperationResult = ExecutionResult | AsyncIterable<ExecutionResult>;

/** The graphql-transport-ws hooks this server calls, with graphql-ws's meanings. */
export interface WsServerOptions {
  /** How long a socket may wait before `connection_init`, in ms (graphql-ws's default: 3 s); 0: for ever. */
  connectionInitWaitTimeout?: number;
  /** On `connection_init`: false closes the socket with 4403 Forbidden. */
  onConnect(ctx: WsContext): Awaitable<boolean>;
  /** On `subscribe`: the operation to run, or errors to answer with an `error` message. */
  onSubscribe(ctx: WsContext, id: string, payload: SubscribePayload): Awaitable<ExecutionArgs | readonly GraphQLError[]>;
  execute(args: ExecutionArgs): Awaitable<OperationResult>;
  /** A subscription's stream (or its result, when it cannot start), for the operation `id` of this socket. */
  subscribe(args: ExecutionArgs, ctx: WsContext, id: string): Awaitable<OperationResult>;
}

/** How often every socket is pinged; one that has not answered a ping this long is terminated. */
const KEEP_ALIVE_MS = 12_000;

/**
 * When each socket's unanswered ping was sent (`performance.now()` in whole ms, a small integer
 * for the process's first 12 days); a socket absent has answered its last ping, or was never pinged.
 */
const pingedAt = new WeakMap<WebSocket, number>();
const connections = new WeakMap<WebSocket, Connection>();

const isAsyncIterable = (value: unknown): value is AsyncIterable<ExecutionResult> =>
  typeof Object(value)[Symbol.asyncIterator] === 'function';

const areGraphQLErrors = (value: unknown): value is readonly GraphQLError[] =>
  Array.isArray(value) && value.length > 0 && value.every((error) => error instanceof GraphQLError);

/**
 * One socket: graphql-ws's server state of a connection (`makeServer`'s `ctx`), its `extra` and
 * its message handling, in one object whose methods are on the prototype. graphql-ws's `opened`
 * made a dozen closures per socket, a dictionary of operations, and ran each subscription as its
 * `onMessage` call suspended in a `for await` for as long as the subscription lasted: that frame
 * kept the subscribe message's text, the parsed message, an emitter with three closures and the
 * execution arguments (about 2 KB per subscribed socket). Here a subscription is an `Operation`
 * that pulls its stream with a callback, and the message handler returns once it has started.
 */
class Connection implements WsContext, SocketExtra {
  readonly authorization: string | null;
  readonly remoteAddress: string | undefined;
  connectionParams: Record<string, unknown> | undefined = undefined;
  /** `connection_init` arrived. */
  initialised = false;
  /** `connection_ack` was sent (or is being sent): operations are accepted. */
  acknowledged = false;
  /**
   * Operations by id (null while one is being set up): the first in two fields, any others in a
   * Map made when a second one runs at once (a Map per socket was about 200 B; clients hold one
   * subscription per socket or a few).
   */
  private firstId: string | null = null;
  private first: Operation | null = null;
  private others: Map<string, Operation | null> | null = null;
  closed = false;

  constructor(
    readonly socket: WebSocket,
    request: IncomingMessage,
    readonly server: WsServerOptions,
  ) {
    this.authorization = request.headers.authorization ?? null;
    this.remoteAddress = request.socket.remoteAddress;
  }

  get extra(): SocketExtra {
    return this;
  }

  /** Resolves once the frame is written (at once if the socket is no longer open); rejects if the write failed. */
  send(data: string): Promise<void> {
    const { socket } = this;
    return new Promise((resolve, reject) => {
      if (socket.readyState !== socket.OPEN) return resolve();
      socket.send(data, (error) => (error ? reject(error) : resolve()));
    });
  }

  close(code?: number, reason?: string) {
    this.socket.close(code, reason);
  }

  has(id: string): boolean {
    return this.firstId === id || (this.others?.has(id) ?? false);
  }

  /** The operation running as `id`: null while it is being set up, undefined if there is none. */
  get(id: string): Operation | null | undefined {
    return this.firstId === id ? this.first : this.others?.get(id);
  }

  private set(id: string, operation: Operation | null) {
    if (this.closed) return;
    if (this.firstId === id || (this.firstId === null && !this.others?.has(id))) {
      this.firstId = id;
      this.first = operation;
    } else {
      (this.others ??= new Map()).set(id, operation);
    }
  }

  delete(id: string) {
    if (this.firstId === id) {
      this.firstId = null;
      this.first = null;
    } else {
      this.others?.delete(id);
    }
  }

  /** One message from the client, as graphql-ws's `onMessage` handles it. */
  async receive(data: string): Promise<void> {
    let message: ReturnType<typeof parseMessage>;
    try {
      message = parseMessage(data);
    } catch {
      return this.close(CloseCode.BadRequest, 'Invalid message received');
    }
    switch (message.type) {
      case MessageType.ConnectionInit: {
        if (this.initialised) return this.close(CloseCode.TooManyInitialisationRequests, 'Too many initialisation requests');
        this.initialised = true;
        if (isObject(message.payload)) this.connectionParams = message.payload;
        const permitted = await this.server.onConnect(this);
        if (permitted === false) return this.close(CloseCode.Forbidden, 'Forbidden');
        this.acknowledged = true;
        return this.send(stringifyMessage({ type: MessageType.ConnectionAck }));
      }
      case MessageType.Ping:
        return this.send(
          stringifyMessage(message.payload ? { type: MessageType.Pong, payload: message.payload } : { type: MessageType.Pong }),
        );
      case MessageType.Pong:
        return;
      case MessageType.Subscribe:
        return this.start(message.id, message.payload);
      case MessageType.Complete: {
        const operation = this.get(message.id);
        this.delete(message.id);
        if (operation) await operation.stop();
        return;
      }
      default:
        throw new Error(`Unexpected message of type ${(message as { type: string }).type} received`);
    }
  }

  /** A `subscribe` message: sets the operation up and, for a stream, starts pulling it. */
  private async start(id: string, payload: SubscribePayload): Promise<void> {
    if (!this.acknowledged) return this.close(CloseCode.Unauthorized, 'Unauthorized');
    if (this.has(id)) return this.close(CloseCode.SubscriberAlreadyExists, `Subscriber for ${id} already exists`);
    this.set(id, null);
    let started = false;
    try {
      const argsOrErrors = await this.server.onSubscribe(this, id, payload);
      if (areGraphQLErrors(argsOrErrors)) return this.has(id) ? await this.sendErrors(id, argsOrErrors) : undefined;
      if (Array.isArray(argsOrErrors))
        throw new Error('Invalid return value from onSubscribe hook, expected an array of GraphQLError objects');
      const args = argsOrErrors as ExecutionArgs;
      const operation = getOperationAST(args.document, args.operationName);
      if (!operation) return this.has(id) ? await this.sendErrors(id, [new GraphQLError('Unable to identify operation')]) : undefined;
      const result = await (operation.operation === 'subscription' ? this.server.subscribe(args, this, id) : this.server.execute(args));
      if (isAsyncIterable(result)) {
        const stream = result[Symbol.asyncIterator]();
        if (!this.has(id)) {
          // Completed (or the socket closed) while it was being set up.
          if (typeof stream.return === 'function') void stream.return(undefined);
          return;
        }
        const running = new Operation(this, id, stream);
        this.set(id, running);
        started = true;
        running.pull();
        return;
      }
      if (this.has(id)) await this.sendResult(id, result);
      if (this.has(id)) await this.send(stringifyMessage({ id, type: MessageType.Complete }));
    } finally {
      if (!started && this.get(id) === null) this.delete(id);
    }
  }

  sendResult(id: string, result: ExecutionResult): Promise<void> {
    const { errors, ...withoutErrors } = result;
    return this.send(
      stringifyMessage({
        id,
        type: MessageType.Next,
        payload: { ...withoutErrors, ...(errors ? { errors: errors.map((e) => e.toJSON()) } : {}) },
      }),
    );
  }

  sendErrors(id: string, errors: readonly GraphQLError[]): Promise<void> {
    return this.send(stringifyMessage({ id, type: MessageType.Error, payload: errors.map((e) => e.toJSON()) }));
  }

  /** The socket closed: every running operation's stream is released. */
  async onClosed(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const operations = [this.first, ...(this.others?.values() ?? [])];
    this.firstId = null;
    this.first = null;
    this.others = null;
    await Promise.all(operations.map((operation) => operation?.stop()));
  }
}

/**
 * A running stream operation: pulls one result at a time and sends it (graphql-ws's `for await`
 * with `emit.next`, `emit.error` and `emit.complete`), the next pull only once the frame is written.
 */
class Operation implements StepConsumer<ExecutionResult> {
  constructor(
    private readonly connection: Connection,
    private readonly id: string,
    private readonly stream: AsyncIterator<ExecutionResult>,
  ) {}

  pull() {
    // A stream that takes a consumer hands its step to this operation's methods, without a promise.
    pullStep(this.stream, this);
  }

  /** Releases the stream (its `return()`; a pending `next()` then ends it). */
  async stop(): Promise<void> {
    if (typeof this.stream.return === 'function') await this.stream.return(undefined);
  }

  /** The stream's next step (`StepConsumer`): a result is sent, then the next one pulled. */
  step(step: IteratorResult<ExecutionResult>) {
    const { connection, id } = this;
    if (step.done) {
      const listed = connection.get(id) === this;
      if (listed) connection.delete(id);
      if (listed) connection.send(stringifyMessage({ id, type: MessageType.Complete })).catch((error) => this.broken(error));
      return;
    }
    // Steps can arrive synchronously from a pulled stream: a result that fails to serialize is a
    // failed send, reported as one, never a throw into the stream that handed it over.
    let sent: Promise<void>;
    try {
      sent = connection.sendResult(id, step.value);
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.then(
      () => this.pull(),
      (error: unknown) => {
        // As `for await` does when its body throws: the stream is released.
        void Promise.resolve()
          .then(() => this.stop())
          .catch(() => {});
        this.broken(error);
      },
    );
  }

  /** The stream failed (`StepConsumer`): the client gets an `error` message and the operation ends. */
  fail(error: unknown) {
    const { connection, id } = this;
    if (connection.get(id) === this) connection.delete(id);
    const original = error instanceof Error ? error : new Error(String(error));
    connection.sendErrors(id, [new GraphQLError(original.message, { originalError: original })]).catch((e) => this.broken(e));
  }

  /** A write failed: reported as an error in the message handling was (the socket is closed with 4500). */
  private broken(error: unknown) {
    const { connection, id } = this;
    if (connection.get(id) === this) connection.delete(id);
    failed(connection.socket, error);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** graphql-ws's `connectionInitWaitTimeout`, here: see `useWebSocketServer`. */
function checkInitialised(connection: Connection) {
  if (!connection.initialised) connection.close(CloseCode.ConnectionInitialisationTimeout, 'Connection initialisation timeout');
}

/** Heartbeat ticks per round: each pings its share of the sockets, so a round spreads over the keep-alive interval. */
const TICKS_PER_ROUND = 120;
/** At most this many pings per tick (about 10 µs each); beyond 60,000 sockets a round takes longer. */
const MAX_PINGS_PER_TICK = 500;

/**
 * The `ws` heartbeat pattern (one timer for every socket, not a timer and a timeout per socket),
 * spread out: every socket is pinged once a round, a round takes the keep-alive interval, and each
 * tick pings only its share. A ping costs about 10 µs of the thread: a round over every socket at
 * once held it about 10 ms per 1,000 sockets every 12 s (in slices of 5 ms), and their pongs came
 * back together; a tick now pings 9 of 1,000 sockets (about 0.1 ms). A socket that has not
 * answered its ping within the interval is terminated (use/ws's rule) when the heartbeat next
 * comes to it.
 */
class Heartbeat {
  private round: WebSocket[] = [];
  private next = 0;
  private perTick = 1;
  private roundStartedAt = Number.NEGATIVE_INFINITY;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly wss: WebSocketServer,
    private readonly intervalMs: number,
  ) {
    this.timer = setInterval(() => this.tick(), Math.max(1, Math.floor(intervalMs / TICKS_PER_ROUND)));
    this.timer.unref();
  }

  private tick() {
    const now = Math.floor(performance.now());
    if (this.next >= this.round.length) {
      if (now - this.roundStartedAt < this.intervalMs) return;
      this.round = [...this.wss.clients];
      this.next = 0;
      this.roundStartedAt = now;
      this.perTick = Math.min(MAX_PINGS_PER_TICK, Math.ceil(this.round.length / TICKS_PER_ROUND));
    }
    const end = Math.min(this.round.length, this.next + this.perTick);
    for (; this.next < end; this.next++) {
      const socket = this.round[this.next];
      if (socket.readyState !== socket.OPEN) continue;
      const sent = pingedAt.get(socket);
      if (sent === undefined) {
        pingedAt.set(socket, now);
        socket.ping();
      } else if (now - sent >= this.intervalMs) {
        socket.terminate();
      }
      // Otherwise its ping is younger than the interval (sockets that left moved it up this round): next round decides.
    }
    // A finished round holds no socket until the next one starts.
    if (this.next >= this.round.length) this.round = [];
  }

  stop() {
    clearInterval(this.timer);
    this.round = [];
  }
}

function markAlive(this: WebSocket) {
  pingedAt.delete(this);
}

function onSocketMessage(this: WebSocket, data: WebSocket.RawData) {
  const connection = connections.get(this);
  if (!connection) return;
  connection.receive(String(data)).catch((error: unknown) => failed(this, error));
}

/** What graphql-ws's use/ws does with an error thrown while a message was handled. */
function failed(socket: WebSocket, error: unknown) {
  console.error('Internal error occurred during message handling. Please check your implementation.', error);
  internalError(socket, error);
}

function onSocketError(this: WebSocket, error: Error) {
  // A frame the client got wrong (too large, bad opcode, invalid UTF-8): ws has already closed the
  // socket with its code (1009, 1002, 1007); it is not the server's error.
  if (String((error as { code?: unknown }).code).startsWith('WS_ERR_')) return;
  console.error('Internal error emitted on a WebSocket socket. Please check your implementation.', error);
  internalError(this, error);
}

function onSocketClose(this: WebSocket) {
  pingedAt.delete(this);
  const connection = connections.get(this);
  connections.delete(this);
  void connection?.onClosed();
}

function internalError(socket: WebSocket, error: unknown) {
  socket.close(
    CloseCode.InternalServerError,
    process.env.NODE_ENV === 'production' ? 'Internal server error' : limitReason(error instanceof Error ? error.message : String(error)),
  );
}

/**
 * The graphql-transport-ws protocol on a `ws` server, as graphql-ws's `makeServer` and
 * `graphql-ws/use/ws` do it (same messages, close codes and 12 s keep-alive), with what each open
 * socket holds cut down: it is held for as long as the client stays subscribed, so everything
 * here is multiplied by the number of subscribers.
 *
 * - The connection state is one `Connection` and each running stream one `Operation` (see there),
 *   not graphql-ws's closures and suspended `for await` per subscription.
 * - The upgrade request is not kept (use/ws puts it in `ctx.extra`, which every operation's
 *   context holds: the request with its headers and streams state, about 1.5 KB per socket); only
 *   the header and address the server reads are.
 * - One heartbeat pings every socket, a share at a time (`Heartbeat`), instead of an interval, a
 *   timeout and a `pong` listener per socket. `keepAliveMs` is its interval (tests shorten it).
 * - The wait for `connection_init` (`connectionInitWaitTimeout`, 3 s by default) is a timer that
 *   nothing holds once it has fired; graphql-ws's own stayed referenced for the socket's life.
 */
export function useWebSocketServer(options: WsServerOptions, wss: WebSocketServer, keepAliveMs = KEEP_ALIVE_MS) {
  const initWaitMs = options.connectionInitWaitTimeout ?? 3_000;
  wss.options.handleProtocols = handleProtocols;
  wss.once('error', (error) => {
    console.error('Internal error emitted on the WebSocket server. Please check your implementation.', error);
    for (const client of wss.clients) internalError(client, error);
  });

  const heartbeat = new Heartbeat(wss, keepAliveMs);
  wss.once('close', () => heartbeat.stop());

  wss.on('connection', (socket: WebSocket, request: IncomingMessage) => {
    socket.on('error', onSocketError);
    socket.on('pong', markAlive);
    if (socket.protocol !== GRAPHQL_TRANSPORT_WS_PROTOCOL) {
      socket.close(CloseCode.SubprotocolNotAcceptable, 'Subprotocol not acceptable');
      return;
    }
    const connection = new Connection(socket, request, options);
    connections.set(socket, connection);
    socket.on('message', onSocketMessage);
    socket.on('close', onSocketClose);
    if (initWaitMs > 0 && Number.isFinite(initWaitMs)) setTimeout(checkInitialised, initWaitMs, connection);
  });

  return {
    async dispose() {
      heartbeat.stop();
      for (const client of wss.clients) client.close(1001, 'Going away');
      wss.removeAllListeners();
      await new Promise<void>((resolve, reject) => wss.close((error) => (error ? reject(error) : resolve())));
    },
  };
}

/** A close reason fits in 123 bytes (RFC 6455). */
function limitReason(reason: string): string {
  return Buffer.byteLength(reason) < 124 ? reason : 'Internal server error';
}
