import type { IncomingMessage } from 'node:http';
import type { WebSocket, WebSocketServer } from 'ws';
import { Heartbeat, KEEP_ALIVE_MS } from './heartbeat.js';
import { Connection, internalError, type WsServerOptions } from './ws-connection.js';
import { CloseCode, GRAPHQL_TRANSPORT_WS_PROTOCOL, handleProtocols } from 'graphql-ws';

/** graphql-ws's `connectionInitWaitTimeout`, here: see `useWebSocketServer`. */
function checkInitialised(connection: Connection) {
  if (!connection.initialised) connection.close(CloseCode.ConnectionInitialisationTimeout, 'Connection initialisation timeout');
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
 *   request context holds); only the header and address the server reads are.
 * - One heartbeat pings every socket, a share at a time (`Heartbeat`), instead of an interval, a
 *   timeout and a `pong` listener per socket. `keepAliveMs` is its interval (tests shorten it).
 * - The wait for `connection_init` (`connectionInitWaitTimeout`, 3 s by default) is a timer that
 *   nothing holds once it has fired.
 *
 * `deviations.ownWebSocketServer` off (`buildApp`) serves the same path with graphql-ws's own
 * `useServer` instead (`src/http/websocket.ts`).
 */
export function useWebSocketServer(options: WsServerOptions, wss: WebSocketServer, keepAliveMs = KEEP_ALIVE_MS) {
  const initWaitMs = options.connectionInitWaitTimeout ?? 3_000;
  const hide = options.hideInternalErrors;
  wss.options.handleProtocols = handleProtocols;
  wss.once('error', (error) => {
    console.error('Internal error emitted on the WebSocket server. Please check your implementation.', error);
    for (const client of wss.clients) internalError(client, error, hide);
  });

  function onSocketError(this: WebSocket, error: Error) {
    // A frame the client got wrong (too large, bad opcode, invalid UTF-8): ws has already closed the
    // socket with its code (1009, 1002, 1007); it is not the server's error.
    if (String((error as { code?: unknown }).code).startsWith('WS_ERR_')) return;
    console.error('Internal error emitted on a WebSocket socket. Please check your implementation.', error);
    internalError(this, error, hide);
  }

  const heartbeat = new Heartbeat(wss, keepAliveMs);
  wss.once('close', () => heartbeat.stop());
  const { markAlive } = heartbeat;

  // The socket listeners are made once per server and shared by its sockets (`this` is the socket),
  // so a socket costs no closure; its Connection is found in this server's map.
  const connections = new WeakMap<WebSocket, Connection>();

  function onSocketMessage(this: WebSocket, data: WebSocket.RawData) {
    const connection = connections.get(this);
    if (!connection) return;
    connection.receive(String(data)).catch((error: unknown) => connection.failed(error));
  }

  function onSocketClose(this: WebSocket) {
    markAlive.call(this);
    const connection = connections.get(this);
    connections.delete(this);
    void connection?.onClosed();
  }

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
