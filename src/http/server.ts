import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AppConfig } from '../config.js';
import { trackConnections } from './connections.js';

/**
 * The one `http.Server` of the app, with Node's timeouts from the config and its connections
 * tracked (`trackConnections`: the idle rule, and `drain` for shutdown). While draining, every
 * response closes its connection (`Connection: close`).
 */
export function createHttpServer(
  timeouts: AppConfig['timeouts'],
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): { server: Server; connections: ReturnType<typeof trackConnections> } {
  // connectionsCheckingInterval is how often Node enforces headersTimeout and requestTimeout.
  const server = createServer({ connectionsCheckingInterval: Math.min(1_000, timeouts.headersMs) }, (req, res) => {
    if (connections.draining()) res.setHeader('connection', 'close');
    handle(req, res);
  });
  server.headersTimeout = timeouts.headersMs;
  server.requestTimeout = timeouts.requestMs;
  server.keepAliveTimeout = timeouts.keepAliveMs;
  // Idle sockets are the tracker's (Node's socket timeout restarts on every queued write, so a
  // response stuck in the write buffer never tripped it). SSE streams ping every 12 s.
  server.timeout = 0;
  const connections = trackConnections(server, timeouts.idleMs);
  return { server, connections };
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
