import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { textFrame, webSocketSink } from '../../src/live/sharing.js';

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

describe('whole text frames written to a subscriber socket (textFrame, webSocketSink)', () => {
  it.each([
    { deflate: false, direct: true },
    { deflate: true, direct: false },
  ])('reach the client as the same messages, in order with ws.send between them (compression: $deflate)', async ({ deflate, direct }) => {
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
      const raw = (server as unknown as { _socket: { write: (...args: unknown[]) => boolean } })._socket;
      const writes = vi.spyOn(raw, 'write');
      const sink = webSocketSink(server, '1');
      const frames = PAYLOADS.map(textFrame);
      frames.forEach((frame, i) => {
        void sink.write(frame);
        server.send(`between ${i}`);
      });
      await all;
      expect(received).toEqual(expected);
      // Without compression each frame went out whole, in one write; with it, through ws.send.
      const whole = writes.mock.calls.filter(([chunk]) => frames.includes(chunk as Buffer)).length;
      expect(whole).toBe(direct ? frames.length : 0);
    } finally {
      await close();
    }
  });
});
