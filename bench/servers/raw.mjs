// The raw baselines for live delivery: no GraphQL, no ORM, just the parts.
//
// - A relay: every WebSocket client connects with `?channel=NAME` and gets, as is, every message
//   published to that channel. With REDIS_URL the relay subscribes to `${RELAY_PREFIX}*` on Redis
//   (the raw Redis relay of the fan-out baseline); without, POST /publish delivers in process.
// - POST /stream `{ "id": rawMessageId, "text": "…", "channel": NAME }`: one
//   `UPDATE "Message" SET text = text || $1 … RETURNING` on the database (DATABASE_URL through `pg`, or
//   DATA_DIR with PGlite), then publishes the new row (Redis, or in process): "raw update + publish",
//   the token-streaming baseline.
// - POST /event `{ "id": rawMessageId, "text": "…", "channel": NAME, "sequence": N }`: one
//   `UPDATE "Message" SET text = $1 … RETURNING` (a durable write of constant size), then publishes
//   the row with its sequence: "HTTP in, one commit, publish", the durable relay of the fan-out.
//
// Prints "listening on URL" when ready; SIGTERM closes everything.
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';

const prefix = process.env.RELAY_PREFIX ?? 'sgbench:relay:';
const channels = new Map(); // channel → Set<WebSocket>

function deliver(channel, message) {
  const sockets = channels.get(channel);
  if (sockets) for (const socket of sockets) socket.send(message);
}

let publisher = null;
let subscriber = null;
if (process.env.REDIS_URL) {
  const { Redis } = await import('ioredis');
  publisher = new Redis(process.env.REDIS_URL);
  subscriber = new Redis(process.env.REDIS_URL);
  await subscriber.psubscribe(`${prefix}*`);
  subscriber.on('pmessage', (_pattern, channel, message) => deliver(channel.slice(prefix.length), message));
}
const publish = async (channel, message) => {
  if (publisher) await publisher.publish(`${prefix}${channel}`, message);
  else deliver(channel, message);
};

let first = null; // (sql, params) → the first row
let closeDb = async () => {};
const RETURNING = `RETURNING id, "sessionId", position, role, text, generating, "updatedAt"`;
const APPEND_TEXT = `UPDATE "Message" SET text = text || $1, "updatedAt" = now() WHERE id = $2 ${RETURNING}`;
const SET_TEXT = `UPDATE "Message" SET text = $1, "updatedAt" = now() WHERE id = $2 ${RETURNING}`;
if (process.env.DATABASE_URL) {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  first = async (sql, params) => (await pool.query(sql, params)).rows[0];
  closeDb = () => pool.end();
} else if (process.env.DATA_DIR) {
  const { PGlite } = await import('@electric-sql/pglite');
  const db = new PGlite(process.env.DATA_DIR);
  await db.waitReady;
  first = async (sql, params) => (await db.query(sql, params)).rows[0];
  closeDb = () => db.close();
}
const WRITES = { '/stream': [APPEND_TEXT, 'MESSAGE_UPDATED'], '/event': [SET_TEXT, 'MESSAGE_ADDED'] };

const readBody = (req) =>
  new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

const server = createServer(async (req, res) => {
  try {
    const write = req.method === 'POST' && first ? WRITES[req.url] : undefined;
    if (write) {
      const { id, text, channel, sequence } = JSON.parse(await readBody(req));
      const row = await first(write[0], [text, id]);
      await publish(channel, JSON.stringify({ sequence, type: write[1], appendText: text, message: row }));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    } else if (req.method === 'POST' && req.url === '/publish') {
      const { channel, message } = JSON.parse(await readBody(req));
      await publish(channel, message);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    } else {
      res.writeHead(404).end();
    }
  } catch (error) {
    res.writeHead(500, { 'content-type': 'text/plain' }).end(String(error?.stack ?? error));
  }
});
const wss = new WebSocketServer({ server });
wss.on('connection', (socket, req) => {
  const channel = new URL(req.url ?? '/', 'http://x').searchParams.get('channel') ?? '';
  let sockets = channels.get(channel);
  if (!sockets) channels.set(channel, (sockets = new Set()));
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}/`);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, async () => {
    for (const client of wss.clients) client.terminate();
    server.close();
    publisher?.disconnect();
    subscriber?.disconnect();
    await closeDb().catch(() => {});
    process.exit(0);
  });
}
