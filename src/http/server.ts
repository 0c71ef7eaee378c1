import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AppConfig } from '../config.js';

/**
 * The one `http.Server` of the app, with Node's timeouts from the config. While `stopping()`, every
 * response closes its connection, and a keep-alive connection whose request was in flight at
 * shutdown is closed once it is idle, so it cannot hold the drain open.
 */
export function createHttpServer(
  timeouts: AppConfig['timeouts'],
  stopping: () => boolean,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Server {
  // connectionsCheckingInterval is how often Node enforces headersTimeout and requestTimeout.
  const server = createServer({ connectionsCheckingInterval: Math.min(1_000, timeouts.headersMs) }, (req, res) => {
    if (stopping()) res.setHeader('connection', 'close');
    res.on('finish', () => {
      if (stopping()) setImmediate(() => server.closeIdleConnections());
    });
    handle(req, res);
  });
  server.headersTimeout = timeouts.headersMs;
  server.requestTimeout = timeouts.requestMs;
  server.keepAliveTimeout = timeouts.keepAliveMs;
  // A client that stops reading a large response stalls its socket; SSE streams ping every 12 s
  // and WebSockets leave this timer once upgraded, so only dead or stalled sockets hit it.
  server.timeout = timeouts.idleMs;
  return server;
}

/**
 * CORS headers only for configured origins: a listed origin is echoed with credentials; `*`
 * allows any origin (echoed, `Vary: Origin`) without credentials; anything else gets no CORS
 * headers at all, so a browser refuses to show it the answer.
 */
export function corsFor(origin: string | null, allowed: string[]) {
  if (!origin) return false as const;
  const common = { methods: ['GET', 'POST', 'OPTIONS'], exposedHeaders: ['retry-after'], maxAge: 600 };
  if (allowed.includes(origin)) return { ...common, origin: [origin], credentials: true };
  if (allowed.includes('*')) return { ...common, origin: '*', credentials: false };
  return false as const;
}
