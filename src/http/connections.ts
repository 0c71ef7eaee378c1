import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import { OUTAGE_RETRY_AFTER_SECONDS } from '../graphql/mask.js';

/** Per socket: its requests without a finished response, and when it last made progress. */
interface Tracked {
  open: Set<ServerResponse>;
  /** Bytes read plus bytes the kernel took (`bytesWritten` counts queued bytes; `writableLength` is what is still queued). */
  progress: number;
  progressAt: number;
}

/**
 * While draining, a connection with no request open is closed once it has carried nothing for
 * this long since the stop: long enough for a request already sent (in the kernel's buffer, not
 * yet read because the loop was busy) to be read, and for a keep-alive client to finish a request
 * it had begun.
 */
const DRAIN_QUIET_MS = 500;
const DRAIN_CHECK_MS = 25;
const ACCEPT_QUIET_MS = 100;
const ACCEPT_MAX_MS = 1_000;
/**
 * A drain check closes something (the listener, a quiet connection) only when the poll phase
 * before it, with the callbacks it ran, took less than this: bytes that reach the kernel while a
 * poll phase is busy are read only by the next one, so after a slow one a connection can look
 * quiet with a request waiting in the kernel, and closing it would reset that request.
 */
const QUICK_POLL_MS = 10;

/**
 * Resolves in the check phase after a timer of DRAIN_CHECK_MS, right after a poll phase (accepts,
 * reads), with whether that phase was quick (QUICK_POLL_MS): then whatever reached the kernel
 * before it began has been read, and each request in it begun.
 */
const afterPoll = async () => {
  await new Promise((resolve) => setTimeout(resolve, DRAIN_CHECK_MS));
  const polling = performance.now();
  await new Promise((resolve) => setImmediate(resolve));
  return performance.now() - polling < QUICK_POLL_MS;
};

/** The answer to a request still unanswered when the shutdown grace ends. */
const STOPPING_BODY = JSON.stringify({
  errors: [
    {
      message: 'The server is shutting down and could not finish this request in time; retry it.',
      extensions: { code: 'SERVICE_UNAVAILABLE', retryable: true },
    },
  ],
});

const working = (tracked: Tracked) => {
  for (const res of tracked.open) if (!res.headersSent) return true;
  return false;
};

const progressOf = (socket: Socket) => socket.bytesRead + (socket.bytesWritten ?? 0) - socket.writableLength;

/**
 * Every HTTP connection of `server`, tracked with public socket counters (WebSockets leave it at
 * their upgrade), for two rules Node's own timers do not keep:
 *
 * - **Idle means idle**: a socket that makes no progress either way for `idleMs` (nothing read,
 *   nothing taken by the kernel: a client that stopped reading a response stuck in the write
 *   buffer included) is reset then, checked every tenth of `idleMs`: `resetAndDestroy`, as
 *   nginx's `reset_timedout_connection`, so the kernel sends RST and drops what it still held
 *   for the client (a plain close would keep those bytes, and the connection, until the client
 *   reads them). A request the server is still working on (its response not begun) is not
 *   idling: its time is bounded elsewhere. Node's socket timeout restarts whenever a write is
 *   queued, so it cannot see a stuck response. Progress is seen per completed write: one write of
 *   a response is taken by the kernel whole or not at all.
 * - **A drain that loses nothing** (`drain`): Node's `server.close()` closes every connection
 *   with no parsed request at once (`closeIdleConnections`), resetting requests whose bytes were
 *   sent but not yet read. Here the listener stops once no connection has come for
 *   ACCEPT_QUIET_MS since the stop, every request on an open connection is read and answered,
 *   every response written from the stop on closes its connection, and a connection with no
 *   request open is closed once it has carried nothing for DRAIN_QUIET_MS since the stop. Both
 *   closes wait for a quick poll phase (QUICK_POLL_MS), so a request that reached the server
 *   before them is read first, however busy the loop was.
 */
export function trackConnections(server: Server, idleMs: number) {
  const sockets = new Map<Socket, Tracked>();
  let draining = false;
  let lastAcceptAt = 0;

  server.on('connection', (socket: Socket) => {
    lastAcceptAt = Date.now();
    sockets.set(socket, { open: new Set(), progress: progressOf(socket), progressAt: Date.now() });
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('upgrade', (_req: IncomingMessage, socket: Socket) => sockets.delete(socket));
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const tracked = sockets.get(req.socket);
    if (!tracked) return;
    tracked.open.add(res);
    res.once('close', () => tracked.open.delete(res));
  });

  /** Records progress; returns how long the socket has made none. */
  const stillFor = (socket: Socket, tracked: Tracked, now: number) => {
    const progress = progressOf(socket);
    if (progress !== tracked.progress) {
      tracked.progress = progress;
      tracked.progressAt = now;
    }
    return now - tracked.progressAt;
  };

  const watchdog =
    idleMs > 0
      ? setInterval(
          () => {
            const now = Date.now();
            for (const [socket, tracked] of sockets) {
              // A request the server is still working on (no response begun) is not the client idling.
              if (working(tracked)) tracked.progressAt = now;
              else if (stillFor(socket, tracked, now) >= idleMs) socket.resetAndDestroy();
            }
          },
          Math.max(10, Math.floor(idleMs / 10)),
        ).unref()
      : undefined;

  return {
    /** Whether `drain` has begun (responses then close their connection). */
    draining: () => draining,
    /**
     * Stops accepting (once no connection has come for ACCEPT_QUIET_MS since the stop, so those
     * the kernel had queued are accepted and read), serves what arrives on open connections, and
     * resolves once every connection is closed. When `graceMs` ends, each request still open is
     * answered 503 with a SERVICE_UNAVAILABLE body (if its headers are not sent yet), and every
     * connection is destroyed.
     */
    async drain(graceMs: number): Promise<void> {
      draining = true;
      const started = Date.now();
      // Quiet counts from the stop; a response not begun yet closes its connection, as later ones do.
      for (const [socket, tracked] of sockets) {
        tracked.progress = progressOf(socket);
        tracked.progressAt = started;
        for (const res of tracked.open) if (!res.headersSent) res.setHeader('connection', 'close');
      }
      // The listener stays open until a quick poll phase finds no connection come for
      // ACCEPT_QUIET_MS since the stop (at most ACCEPT_MAX_MS): closing it resets every connection
      // the kernel has queued and the loop has not accepted yet, requests already sent on them.
      let quick = await afterPoll();
      while (!(quick && Date.now() - Math.max(started, lastAcceptAt) >= ACCEPT_QUIET_MS) && Date.now() - started < ACCEPT_MAX_MS) {
        quick = await afterPoll();
      }
      // net.Server's close stops the listener without http.Server's closeIdleConnections.
      if (server.listening) NetServer.prototype.close.call(server);
      while (sockets.size > 0) {
        const now = Date.now();
        if (now - started >= graceMs) {
          for (const [socket, tracked] of sockets) {
            for (const res of tracked.open) {
              if (res.headersSent) continue;
              res.writeHead(503, {
                'content-type': 'application/json; charset=utf-8',
                'retry-after': String(OUTAGE_RETRY_AFTER_SECONDS),
                connection: 'close',
              });
              res.end(STOPPING_BODY);
            }
            socket.end();
          }
          // A socket whose client reads nothing is cut after one more check.
          if (now - started >= graceMs + DRAIN_CHECK_MS * 4) for (const socket of sockets.keys()) socket.destroy();
        } else {
          for (const [socket, tracked] of sockets) {
            // After a slow poll phase a quiet-looking connection may hold an unread request.
            const quiet = tracked.open.size === 0 && stillFor(socket, tracked, now) >= DRAIN_QUIET_MS;
            if (quiet && quick) socket.destroy();
          }
        }
        quick = await afterPoll();
      }
      clearInterval(watchdog);
      // http.Server's own close: stops its timeout checks (there is nothing left for its idle sweep).
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
