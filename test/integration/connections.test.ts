import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { backend, createTestApp, dropTestDatabases, type TestApp } from '../helpers/app.js';

const apps: TestApp[] = [];
afterAll(async () => {
  for (const app of apps) await app.close();
  await dropTestDatabases();
});

const CREATE = 'mutation { createSession(input: { title: "big" }) { id } }';
const TYPENAME = JSON.stringify({ query: '{ __typename }' });
const TYPENAME_REQUEST = `POST /graphql HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${TYPENAME.length}\r\n\r\n${TYPENAME}`;

type RawAnswer = { status: number; headers: string; body: string } | { error: string };

/**
 * A client's HTTP/1.1 connection over a raw socket, so a test decides when each byte is sent:
 * `next` resolves with the next whole response (by its Content-Length, else at the connection's
 * end), or with the error that ended the connection first (ECONNRESET for a reset).
 */
function rawConnection(port: number) {
  const socket = connect(port, '127.0.0.1');
  let received = Buffer.alloc(0);
  let ended: string | undefined;
  let waiting: ((answer: RawAnswer) => void) | undefined;
  const settle = () => {
    if (!waiting) return;
    const headEnd = received.indexOf('\r\n\r\n');
    const head = headEnd >= 0 ? received.subarray(0, headEnd).toString() : '';
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    const bodyStart = headEnd + 4;
    const whole = headEnd >= 0 && (length ? received.length >= bodyStart + Number(length[1]) : ended !== undefined);
    let answer: RawAnswer | undefined;
    if (whole) {
      const bodyEnd = length ? bodyStart + Number(length[1]) : received.length;
      answer = { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body: received.subarray(bodyStart, bodyEnd).toString() };
      received = received.subarray(bodyEnd);
    } else if (ended !== undefined) answer = { error: ended };
    if (answer) {
      const resolve = waiting;
      waiting = undefined;
      resolve(answer);
    }
  };
  socket.on('data', (chunk) => {
    received = Buffer.concat([received, chunk]);
    settle();
  });
  socket.on('error', (error: NodeJS.ErrnoException) => {
    ended ??= error.code ?? error.message;
    settle();
  });
  socket.on('close', () => {
    ended ??= 'closed';
    settle();
  });
  return {
    socket,
    next: () =>
      new Promise<RawAnswer>((resolve) => {
        waiting = resolve;
        settle();
      }),
  };
}

/** A connection that has carried one request and waits, idle, as a client's keep-alive pool holds it. */
async function idleKeepAlive(port: number) {
  const connection = rawConnection(port);
  connection.socket.write(TYPENAME_REQUEST);
  expect(await connection.next()).toMatchObject({ status: 200 });
  return connection;
}

/** Holds the event loop, as a request whose work takes that long does. */
const busyFor = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until) {}
};
const APPEND = 'mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { index } } }';

describe(`connections (${backend.label})`, () => {
  it('resets a connection whose client stopped reading a ~8 MiB response (the most a request carries): the client sees ECONNRESET within 1.6 × IDLE_TIMEOUT_MS of its last progress', async () => {
    const idleMs = 1_500;
    // A string cap of 1 Mi characters: the answer budget (8 times it) lets one request ask for ~8 MiB.
    const app = await createTestApp({
      config: { maxStringChars: 1024 * 1024, timeouts: { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 5_000, idleMs } },
    });
    apps.push(app);
    // Seeded through Yoga in process, not over a connection: on a loaded machine a 256 KiB request
    // can stall past this server's 1.5 s idle timeout and be reset, which is what the test checks
    // of the response below, not of the seeding.
    const seed = async <R>(query: string, variables?: unknown): Promise<R> => {
      const response = await app.yoga.fetch('http://localhost/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query, variables }),
      });
      const result = (await response.json()) as { data?: R; errors?: unknown[] };
      if (result.errors?.length || !result.data) throw new Error(`seeding failed: ${JSON.stringify(result)}`);
      return result.data;
    };
    const { createSession } = await seed<{ createSession: { id: string } }>(CREATE);
    const text = 'y'.repeat(Math.min(backend.caps.stringLength, 256 * 1024));
    const count = Math.ceil((10 * 1024 * 1024) / text.length);
    for (let i = 0; i < count; i++) {
      await seed(APPEND, { input: { sessionId: createSession.id, messages: [{ role: 'USER', text }] } });
    }

    // The server's side of the connection, watched with the tracker's own counters.
    let serverSocket: Socket | undefined;
    app.server.once('request', (req) => (serverSocket = req.socket));
    const { port } = new URL(app.url);
    const body = JSON.stringify({
      // The largest answer a request may carry: pages share its content budget, whatever their aliases.
      query: `query ($id: ID!) { session(id: $id) { ${Array.from(
        { length: 30 },
        (_, i) => `p${i}: messages(first: ${count}) { edges { node { text parts { ... on TextPart { text } } } } }`,
      ).join(' ')} } }`,
      variables: { id: createSession.id },
    });
    const client = connect(Number(port), '127.0.0.1');
    // Never read: the response fills the kernel's buffers and then the server's write buffer.
    client.pause();
    client.write(
      `POST /graphql HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    // The client looks at its connection without reading: a write of nothing sends nothing, and
    // fails once the connection is reset. A cut without a reset leaves it open.
    const clientCut = new Promise<{ at: number; code?: string }>((resolve) => {
      client.once('error', (error: NodeJS.ErrnoException) => resolve({ at: performance.now(), code: error.code }));
      client.once('close', () => resolve({ at: performance.now() }));
    });
    const look = setInterval(() => client.write(''), idleMs / 20);
    let lastProgress = { at: performance.now(), flushed: -1, queued: 0 };
    const watch = setInterval(() => {
      if (!serverSocket) return;
      const flushed = serverSocket.bytesWritten - serverSocket.writableLength;
      if (flushed !== lastProgress.flushed) lastProgress = { at: performance.now(), flushed, queued: serverSocket.writableLength };
      else lastProgress.queued = serverSocket.writableLength;
    }, 20);
    await new Promise<void>((resolve) => {
      const wait = () => (serverSocket ? serverSocket.once('close', () => resolve()) : setTimeout(wait, 10));
      wait();
    });
    clearInterval(watch);
    const stuckFor = performance.now() - lastProgress.at;
    const seen = await Promise.race([clientCut, new Promise<null>((resolve) => setTimeout(() => resolve(null), idleMs))]);
    clearInterval(look);
    client.destroy();
    // The response was stuck in the server's write buffer, far from finished.
    expect(lastProgress.queued).toBeGreaterThan(0);
    expect(lastProgress.flushed).toBeLessThan(8 * 1024 * 1024);
    expect(stuckFor).toBeGreaterThanOrEqual(idleMs * 0.8);
    expect(stuckFor).toBeLessThanOrEqual(idleMs * 1.6);
    expect(seen?.code).toBe('ECONNRESET');
    expect(seen!.at - lastProgress.at).toBeLessThanOrEqual(idleMs * 1.6);
  }, 240_000);

  it('while draining, answers requests that reach idle keep-alive connections while the server is busy past the quiet grace: none is reset', async () => {
    const app = await createTestApp();
    apps.push(app);
    const port = Number(new URL(app.url).port);
    const [first, second, ...others] = await Promise.all(Array.from({ length: 20 }, () => idleKeepAlive(port)));
    // Idle a while before the stop, as a pool's connections are between requests.
    await new Promise((resolve) => setTimeout(resolve, 200));
    let closed: Promise<void> | undefined;
    let stoppedAt = 0;
    // The stop begins while the server works on the first request; the second arrives meanwhile
    // and keeps it busy in turn. While it is, a request reaches every other connection, and the
    // half-second quiet grace of a connection idle since the stop passes.
    app.server.once('request', () => {
      closed = app.close();
      stoppedAt = performance.now();
      busyFor(100);
      second.socket.write(TYPENAME_REQUEST);
      app.server.once('request', () => {
        for (const other of others) other.socket.write(TYPENAME_REQUEST);
        busyFor(800 - (performance.now() - stoppedAt));
      });
    });
    first.socket.write(TYPENAME_REQUEST);
    const answers = await Promise.all([first, second, ...others].map((connection) => connection.next()));
    await closed;
    expect(answers.filter((answer) => 'error' in answer)).toEqual([]);
    for (const answer of answers as Exclude<RawAnswer, { error: string }>[]) {
      expect(answer.status).toBe(200);
      expect(answer.headers).toContain('connection: close');
      expect(JSON.parse(answer.body)).toEqual({ data: { __typename: 'Query' } });
    }
  }, 60_000);

  it('on stopping, accepts and answers the connections the kernel queued while the server was busy: none is reset', async () => {
    const app = await createTestApp();
    apps.push(app);
    const port = Number(new URL(app.url).port);
    const first = rawConnection(port);
    let queued: ReturnType<typeof rawConnection>[] = [];
    let closed: Promise<void> | undefined;
    // The first request finds the server busy long past its last accept; clients connect
    // meanwhile (the kernel queues them) and the stop begins before the server polls again.
    app.server.once('request', () => {
      busyFor(300);
      queued = Array.from({ length: 10 }, () => rawConnection(port));
      for (const connection of queued) connection.socket.write(TYPENAME_REQUEST);
      // After the connects, which net.connect makes on the next tick.
      process.nextTick(() => (closed = app.close()));
    });
    first.socket.write(TYPENAME_REQUEST);
    expect(await first.next()).toMatchObject({ status: 200 });
    const answers = await Promise.all(queued.map((connection) => connection.next()));
    await closed;
    expect(answers.filter((answer) => 'error' in answer)).toEqual([]);
    for (const answer of answers as Exclude<RawAnswer, { error: string }>[]) {
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toEqual({ data: { __typename: 'Query' } });
    }
  }, 60_000);

  it('answers 503 SERVICE_UNAVAILABLE to a request still unfinished when the shutdown grace ends, and closes', async () => {
    const app = await createTestApp({ config: { shutdownGraceMs: 500 } });
    const received = new Promise<void>((resolve) => app.server.once('request', () => resolve()));
    const body = JSON.stringify({ query: '{ __typename }' });
    const answer = new Promise<{ status: number; headers: Record<string, unknown>; text: string }>((resolve, reject) => {
      const req = httpRequest(
        app.url,
        { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
        },
      );
      req.on('error', reject);
      // Half the body: the request is open and cannot finish.
      req.write(body.slice(0, 5));
    });
    await received;
    await app.close();
    const { status, headers, text } = await answer;
    expect(status).toBe(503);
    expect(headers.connection).toBe('close');
    expect(headers['retry-after']).toBe('2');
    expect(JSON.parse(text).errors[0].extensions).toEqual({ code: 'SERVICE_UNAVAILABLE', retryable: true });
  }, 60_000);
});
