/**
 * The fan-out writer's POSTs, sent and timed on a thread of their own: the main thread parses every
 * delivery to the load's sockets (thousands per event), and a response that arrives while it does
 * would wait behind them, time that belongs to the load, not to the server's answer to the writer.
 * The thread also runs at a raised priority (nice -10, that thread alone; kept at 0 where the OS
 * refuses): on two cores, the load's own socket reads otherwise hold the CPU the writer's thread
 * needs to send a request and read its answer.
 */
import { Worker } from 'node:worker_threads';

export class WriterThread {
  private readonly worker = new Worker(
    `const { parentPort } = require('node:worker_threads');
    try { require('node:os').setPriority(-10); } catch {}
    const http = require('node:http');
    const agent = new http.Agent({ keepAlive: true });
    parentPort.on('message', ({ id, url, body }) => {
      const target = new URL(url);
      const started = performance.now();
      const done = (status, text) =>
        parentPort.postMessage({ id, status, text, ms: performance.now() - started, sentAt: performance.timeOrigin + started });
      const request = http.request(
        { host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (response) => {
          const chunks = [];
          response.on('data', (chunk) => chunks.push(chunk));
          response.on('end', () => done(response.statusCode, Buffer.concat(chunks).toString('utf8')));
          response.on('error', (error) => done(0, String(error)));
        },
      );
      request.on('error', (error) => done(0, String(error)));
      request.end(body);
    });`,
    { eval: true },
  );
  private readonly pending = new Map<number, (answer: WriterAnswer) => void>();
  private nextId = 0;
  /** Each call's time from its send to its response's end, on the writer's thread. */
  readonly latencies: number[] = [];

  constructor() {
    this.worker.on('message', (answer: WriterAnswer) => {
      this.pending.get(answer.id)?.(answer);
      this.pending.delete(answer.id);
    });
  }

  /**
   * A GraphQL call; throws on an HTTP or GraphQL error. Answers when the writer's thread sent it, on
   * this thread's clock (`performance.now()`): after the hand-over to that thread, not before it.
   */
  async gql(url: string, query: string, variables: Record<string, unknown>): Promise<number> {
    const id = this.nextId++;
    const answer = await new Promise<WriterAnswer>((resolve) => {
      this.pending.set(id, resolve);
      this.worker.postMessage({ id, url, body: JSON.stringify({ query, variables }) });
    });
    if (answer.status !== 200 || answer.text.includes('"errors"')) {
      throw new Error(`writer: HTTP ${answer.status}: ${answer.text.slice(0, 300)}`);
    }
    this.latencies.push(answer.ms);
    return answer.sentAt - performance.timeOrigin;
  }

  close() {
    void this.worker.terminate();
  }
}

/** A writer thread's answer: the HTTP status and body, the call's time, and when it was sent (ms since the epoch). */
interface WriterAnswer {
  id: number;
  status: number;
  text: string;
  ms: number;
  sentAt: number;
}
