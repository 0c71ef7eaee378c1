import type { IncomingMessage } from 'node:http';
import type { ExecutionArgs, ExecutionResult } from 'graphql';
import type { SubscribePayload } from 'graphql-ws';
import type { WebSocket } from 'ws';
import type { StepConsumer } from '../services/pull-protocol.js';
import { pullStep } from './pull-step.js';
import { CloseCode, MessageType, parseMessage, stringifyMessage } from 'graphql-ws';
import { GraphQLError, getOperationAST } from 'graphql';

/** What an operation's request context keeps of a WebSocket connection: see `useWebSocketServer`. */
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
  /**
   * Whether a socket closed for an internal error (4500) says only "Internal server error"
   * (production) rather than the error's message.
   */
  hideInternalErrors: boolean;
}

const isAsyncIterable = (value: unknown): value is AsyncIterable<ExecutionResult> =>
  typeof Object(value)[Symbol.asyncIterator] === 'function';

const areGraphQLErrors = (value: unknown): value is readonly GraphQLError[] =>
  Array.isArray(value) && value.length > 0 && value.every((error) => error instanceof GraphQLError);

/**
 * One socket: graphql-ws's server state of a connection (`makeServer`'s `ctx`), its `extra` and
 * its message handling, in one object whose methods are on the prototype, instead of graphql-ws's
 * closures per socket and its `onMessage` call suspended in a `for await` for as long as each
 * subscription lasts. Here a subscription is an `Operation` that pulls its stream with a callback,
 * and the message handler returns once it has started.
 */
export class Connection implements WsContext, SocketExtra {
  readonly authorization: string | null;
  readonly remoteAddress: string | undefined;
  connectionParams: Record<string, unknown> | undefined = undefined;
  /** `connection_init` arrived. */
  initialised = false;
  /** `connection_ack` was sent (or is being sent): operations are accepted. */
  acknowledged = false;
  /**
   * Operations by id (null while one is being set up): the first in two fields, any others in a
   * Map made only when a second one runs at once (clients hold one subscription per socket or a
   * few).
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

  /** An error thrown while a message was handled: what graphql-ws's use/ws does with it. */
  failed(error: unknown) {
    console.error('Internal error occurred during message handling. Please check your implementation.', error);
    internalError(this.socket, error, this.server.hideInternalErrors);
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
    connection.failed(error);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Closes `socket` with 4500 Internal Server Error; its reason is the error's message unless `hide`. */
export function internalError(socket: WebSocket, error: unknown, hide: boolean) {
  socket.close(
    CloseCode.InternalServerError,
    hide ? 'Internal server error' : limitReason(error instanceof Error ? error.message : String(error)),
  );
}

/** A close reason fits in 123 bytes (RFC 6455). */
function limitReason(reason: string): string {
  return Buffer.byteLength(reason) < 124 ? reason : 'Internal server error';
}
