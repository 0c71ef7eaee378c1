import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { nextMessage, webSocketSink } from '../../src/live/ws-sink.js';

/** A ws server and a client connected to it, with or without permessage-deflate. */
async function connected(deflate: boolean) {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: deflate });
  await once(wss, 'listening');
  const accepted = new Promise<WebSocket>((resolve) => wss.once('connection', resolve));
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, { perMessageDeflate: deflate });
  await once(client, 'open');
  const server = await accepted;
  const close = async () => {
    client.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  };
  return { server, client, close };
}

// Lengths around the 7-, 16- and 64-bit length forms, in bytes ('é' is two).
const PAYLOADS = [
  '',
  'x',
  'x'.repeat(125),
  'x'.repeat(126),
  'é'.repeat(63),
  'x'.repeat(65_535),
  'x'.repeat(65_536),
  `${'é'.repeat(40_000)}!`,
];

describe('messages written to a subscriber socket (webSocketSink)', () => {
  it.each([{ deflate: false }, { deflate: true }])(
    'reach the client as the same text messages, in order with ws.send between them (compression: $deflate)',
    async ({ deflate }) => {
      const { server, client, close } = await connected(deflate);
      try {
        expect(server.extensions).toBe(deflate ? 'permessage-deflate' : '');
        const expected = PAYLOADS.flatMap((payload, i) => [payload, `between ${i}`]);
        const received: string[] = [];
        const all = new Promise<void>((resolve) =>
          client.on('message', (data, isBinary) => {
            received.push(`${isBinary ? 'binary:' : ''}${data.toString()}`);
            if (received.length === expected.length) resolve();
          }),
        );
        const sink = webSocketSink(server, '1');
        const waits: (Promise<void> | undefined)[] = [];
        PAYLOADS.forEach((payload, i) => {
          waits.push(sink.write(Buffer.from(payload)));
          server.send(`between ${i}`);
        });
        await all;
        expect(received).toEqual(expected);
        // Beyond the socket's high-water mark a write hands back a promise, settled once it is written.
        expect(waits.some((wait) => wait instanceof Promise)).toBe(true);
        await Promise.all(waits);
      } finally {
        await close();
      }
    },
  );

  it('stops writing once the socket is no longer open', async () => {
    const { server, close } = await connected(false);
    const sink = webSocketSink(server, '1');
    expect(sink.open()).toBe(true);
    await close();
    expect(sink.open()).toBe(false);
  });
});

describe('nextMessage', () => {
  it('is the next message graphql-ws writes for a result without errors, serialized once per result', () => {
    const result = { data: { n: 'é' } };
    const message = nextMessage(result, '1');
    expect(JSON.parse(message.toString())).toEqual({ id: '1', type: 'next', payload: result });
    expect(nextMessage(result, '1')).toBe(message);
    expect(JSON.parse(nextMessage(result, 'x"y').toString())).toEqual({ id: 'x"y', type: 'next', payload: result });
  });
});
