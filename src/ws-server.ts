import type { IncomingMessage } from 'node:http';
import { CloseCode, handleProtocols, makeServer, type ServerOptions } from 'graphql-ws';
import type { WebSocket, WebSocketServer } from 'ws';

/** What a graphql-ws context keeps of a WebSocket connection: see `useWebSocketServer`. */
export interface SocketExtra {
  socket: WebSocket;
  /** The upgrade request's `Authorization` header, if any. */
  authorization: string | null;
  /** The client's address, for rate limiting. */
  remoteAddress: string | undefined;
}

/** How often every socket is pinged; one that has not answered a ping this long is terminated. */
const KEEP_ALIVE_MS = 12_000;

/**
 * When each socket's unanswered ping was sent (`performance.now()` in whole ms, a small integer
 * for the process's first 12 days); a socket absent has answered its last ping, or was never pinged.
 */
const pingedAt = new WeakMap<WebSocket, number>();
const connections = new WeakMap<WebSocket, Connection>();

/**
 * One socket as graphql-ws sees it (its `WebSocket` and the context's `extra` both). A class with
 * its methods on the prototype, and the listeners below shared by every socket: use/ws made
 * closures for each.
 */
class Connection implements SocketExtra {
  readonly authorization: string | null;
  readonly remoteAddress: string | undefined;
  /** graphql-ws's message handler. */
  handle: ((data: string) => Promise<void>) | null = null;
  /** graphql-ws's close handler. */
  closed: ((code?: number, reason?: string) => Promise<void>) | null = null;
  /** `connection_init` arrived (graphql-ws called `onConnect`). */
  initialised = false;

  constructor(
    readonly socket: WebSocket,
    request: IncomingMessage,
  ) {
    this.authorization = request.headers.authorization ?? null;
    this.remoteAddress = request.socket.remoteAddress;
  }

  get protocol() {
    return this.socket.protocol;
  }

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

  onMessage(handle: (data: string) => Promise<void>) {
    this.handle = handle;
  }
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
  const handle = connections.get(this)?.handle;
  if (!handle) return;
  // Not awaited in this listener: for a subscription the handler runs as long as the subscription.
  handle(String(data)).catch((error: unknown) => {
    console.error('Internal error occurred during message handling. Please check your implementation.', error);
    internalError(this, error);
  });
}

function onSocketError(this: WebSocket, error: Error) {
  console.error('Internal error emitted on a WebSocket socket. Please check your implementation.', error);
  internalError(this, error);
}

function onSocketClose(this: WebSocket, code: number, reason: Buffer) {
  pingedAt.delete(this);
  const connection = connections.get(this);
  connections.delete(this);
  void connection?.closed?.(code, String(reason));
}

function internalError(socket: WebSocket, error: unknown) {
  socket.close(
    CloseCode.InternalServerError,
    process.env.NODE_ENV === 'production' ? 'Internal server error' : limitReason(error instanceof Error ? error.message : String(error)),
  );
}

/**
 * graphql-ws on a `ws` server, as `graphql-ws/use/ws` does it (same protocol, close codes and 12 s
 * keep-alive), but with what each open socket holds cut down: it is held for as long as the
 * client stays subscribed, so everything here is multiplied by the number of subscribers.
 *
 * - The upgrade request is not kept (use/ws puts it in `ctx.extra`, which every operation's
 *   context holds: the request with its headers and streams state, about 1.5 KB per socket); only
 *   the header and address the server reads are.
 * - A received frame is handed to graphql-ws without an async listener around it: use/ws awaits
 *   the handler, which for a subscription runs as long as the subscription, so the frame's Buffer
 *   and the listener's suspended frame stayed as long too.
 * - One heartbeat pings every socket, a share at a time (`Heartbeat`), instead of an interval, a
 *   timeout and a `pong` listener per socket. `keepAliveMs` is its interval (tests shorten it).
 * - The wait for `connection_init` (`connectionInitWaitTimeout`, 3 s by default) is a timer that
 *   nothing holds once it has fired; graphql-ws's own stayed referenced for the socket's life.
 */
export function useWebSocketServer(
  options: ServerOptions<Record<string, unknown>, Connection>,
  wss: WebSocketServer,
  keepAliveMs = KEEP_ALIVE_MS,
) {
  const initWaitMs = options.connectionInitWaitTimeout ?? 3_000;
  const server = makeServer({
    ...options,
    connectionInitWaitTimeout: 0,
    // graphql-ws notes connection_init just before it calls onConnect.
    onConnect: (ctx) => {
      ctx.extra.initialised = true;
      return options.onConnect?.(ctx);
    },
  });
  wss.options.handleProtocols = handleProtocols;
  wss.once('error', (error) => {
    console.error('Internal error emitted on the WebSocket server. Please check your implementation.', error);
    for (const client of wss.clients) internalError(client, error);
  });

  const heartbeat = new Heartbeat(wss, keepAliveMs);
  wss.once('close', () => heartbeat.stop());

  wss.on('connection', (socket: WebSocket, request: IncomingMessage) => {
    const connection = new Connection(socket, request);
    connections.set(socket, connection);
    socket.on('error', onSocketError);
    socket.on('pong', markAlive);
    socket.on('message', onSocketMessage);
    socket.on('close', onSocketClose);
    connection.closed = server.opened(connection, connection);
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

/** Query texts longer than this are not shared (`sharedQueryTexts`). */
const MAX_SHARED_QUERY_CHARS = 4 * 1024;

/**
 * Hands every query text seen before back as the same string: graphql-ws keeps each operation's
 * message (and so its query) for as long as the operation runs, and clients of one application
 * subscribe with the same few documents, so thousands of subscribed sockets kept thousands of
 * copies of one text. Called from `onSubscribe` on the message's payload, not as a
 * `jsonMessageReviver`: a reviver runs for every key of every message, which made the parse of a
 * frame at the size cap three times slower (4 MiB: 45 to 157 ms). At most `max` texts
 * (SUBSCRIPTION_SHAPES_MAX) of up to 4 KB are kept; the table starts over when full.
 */
export function sharedQueryTexts(max: number): (text: string) => string {
  const texts = new Map<string, string>();
  return (text) => {
    if (text.length > MAX_SHARED_QUERY_CHARS) return text;
    const known = texts.get(text);
    if (known !== undefined) return known;
    if (texts.size >= max) texts.clear();
    texts.set(text, text);
    return text;
  };
}

/** A close reason fits in 123 bytes (RFC 6455). */
function limitReason(reason: string): string {
  return Buffer.byteLength(reason) < 124 ? reason : 'Internal server error';
}
