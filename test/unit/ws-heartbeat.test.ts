import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { useWebSocketServer } from '../../src/live/ws-server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A short keep-alive interval for the test (the server's is 12 s); each tick is 1/120 of it. */
const INTERVAL_MS = 600;

describe('WebSocket heartbeat', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function start() {
    const http = createServer();
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const wss = new WebSocketServer({ server: http });
    const unused = () => {
      throw new Error('no operation runs in this test');
    };
    const hooks = {
      hideInternalErrors: false,
      connectionInitWaitTimeout: 0,
      onConnect: () => true,
      onSubscribe: unused,
      execute: unused,
      subscribe: unused,
    };
    const server = useWebSocketServer(hooks, wss, INTERVAL_MS);
    cleanups.push(
      () => new Promise<void>((resolve) => http.close(() => resolve())),
      () => server.dispose(),
    );
    return `ws://127.0.0.1:${(http.address() as AddressInfo).port}`;
  }

  /** A client socket with the times it was pinged; `autoPong: false` never answers. */
  function open(url: string, autoPong: boolean) {
    return new Promise<{ socket: WebSocket; pings: number[] }>((resolve, reject) => {
      const socket = new WebSocket(url, 'graphql-transport-ws', { autoPong });
      const pings: number[] = [];
      socket.on('ping', () => pings.push(performance.now()));
      socket.once('open', () => resolve({ socket, pings }));
      socket.once('error', reject);
      cleanups.push(() => socket.terminate());
    });
  }

  it('pings each socket once a round, a share per tick rather than all at once, and terminates one that leaves a ping unanswered for the interval', async () => {
    const url = await start();
    const answering = await Promise.all(Array.from({ length: 30 }, () => open(url, true)));
    const silent = await open(url, false);
    const silentClosed = new Promise<number>((resolve) => silent.socket.once('close', (code) => resolve(code)));

    await sleep(INTERVAL_MS * 3 + 200);

    // Every answering socket was pinged in each round since it connected (at least twice), never
    // twice within a round, and is still open.
    for (const { socket, pings } of answering) {
      expect(pings.length).toBeGreaterThanOrEqual(2);
      for (let i = 1; i < pings.length; i++) expect(pings[i] - pings[i - 1]).toBeGreaterThan(INTERVAL_MS * 0.7);
      expect(socket.readyState).toBe(WebSocket.OPEN);
    }
    // One tick pings ceil(31 / 120) = 1 socket: a round's pings come one tick (5 ms) apart, not in one burst.
    const firstRound = answering.map(({ pings }) => pings[0]);
    expect(Math.max(...firstRound) - Math.min(...firstRound)).toBeGreaterThan(60);

    // The socket that never answers is terminated (no close frame: 1006) once its ping is an interval old.
    expect(silent.pings.length).toBeGreaterThanOrEqual(1);
    expect(await Promise.race([silentClosed, sleep(INTERVAL_MS * 2).then(() => 'still open')])).toBe(1006);
  });
});
