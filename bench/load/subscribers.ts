/**
 * The load's subscriber sockets: graphql-transport-ws subscriptions to the server, or plain sockets
 * of the raw relay (bench/servers/raw.mjs), each delivery recorded by its group and sequence.
 */
import WebSocket from 'ws';
import type { Group } from './args.js';
import { SESSION_EVENTS, type Subscription } from './operations.js';
import { pool } from './pool.js';

/** Receipts by key (`group:sequence`): receive times, one per socket; duplicates counted. */
export class Receipts {
  readonly seen = new Map<string, number[]>();
  duplicates = 0;
  /** The first few unexpected messages (errors, events without a sequence), for the failure message. */
  readonly errors: string[] = [];
  private waiters: (() => void)[] = [];

  /** A recorder for one socket: a key it already delivered counts as a duplicate, not a receipt. */
  socket(): (key: string) => void {
    const mine = new Set<string>();
    return (key) => {
      const at = performance.now();
      if (mine.has(key)) {
        this.duplicates++;
        return;
      }
      mine.add(key);
      let times = this.seen.get(key);
      if (!times) this.seen.set(key, (times = []));
      times.push(at);
      if (this.waiters.length) for (const wake of this.waiters.splice(0)) wake();
    };
  }

  count(key: string) {
    return this.seen.get(key)?.length ?? 0;
  }

  /** Waits until each key has `want(key)` receipts, or the deadline (`performance.now()` clock) passes. */
  async all(keys: string[], want: (key: string) => number, deadline: number) {
    while (keys.some((k) => this.count(k) < want(k)) && performance.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, Math.min(1_000, deadline - performance.now())));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}

/**
 * The load's sockets skip ws's UTF-8 check of each text message: they read only a sequence number
 * out of it, and the check is CPU the load would take from the processes it measures.
 */
const RECEIVER = { skipUTF8Validation: true } as const;

/** How every relay message starts (`{"sequence":N,…}`, bench/servers/raw.mjs). */
const RELAY_SEQUENCE = Buffer.from('{"sequence":');

/**
 * The integer right after `marker` in a raw message, or null when the marker is absent. The load
 * receives thousands of deliveries per event on the cores the processes it measures need: it finds
 * each one's sequence without decoding and parsing the whole message (`JSON.parse` stays for the
 * rest: acks, errors).
 */
function sequenceAfter(raw: Buffer, marker: Buffer): number | null {
  const at = raw.indexOf(marker);
  if (at < 0) return null;
  let value = 0;
  let i = at + marker.length;
  const start = i;
  for (; i < raw.length; i++) {
    const digit = raw[i] - 48;
    if (digit < 0 || digit > 9) break;
    value = value * 10 + digit;
  }
  return i > start ? value : null;
}

/**
 * Opens `groups[g].subscribers` sockets per group, round robin over `urls`, at most `concurrency`
 * handshakes at a time: graphql-transport-ws subscriptions to `subscription` from the group's `after`
 * (server; each socket counts as open once the server acknowledged it and its subscribe is sent), or
 * relay sockets of the group's channel (relay). Each delivery is recorded in `receipts` as `g:sequence`.
 */
export async function openSockets(options: {
  target: 'server' | 'relay';
  urls: string[];
  groups: Group[];
  receipts: Receipts;
  subscription?: Subscription;
  concurrency?: number;
}): Promise<WebSocket[]> {
  const { target, urls, groups, receipts, subscription = SESSION_EVENTS, concurrency = 50 } = options;
  const plan: number[] = [];
  groups.forEach((g, gi) => {
    for (let i = 0; i < g.subscribers; i++) plan.push(gi);
  });
  const sockets: WebSocket[] = [];
  /** How a `next` message of the subscription's field starts its data (its first field is `sequence`). */
  const marker = Buffer.from(`"${subscription.field}":{"sequence":`);
  await pool(plan.length, concurrency, async (i) => {
    const gi = plan[i];
    const group = groups[gi];
    const onKey = receipts.socket();
    const base = urls[i % urls.length].replace(/^http/, 'ws');
    if (target === 'relay') {
      const socket = new WebSocket(`${base}?channel=${encodeURIComponent(group.channel ?? group.sessionId)}`, RECEIVER);
      sockets.push(socket);
      socket.on('message', (raw: Buffer) => {
        const sequence = sequenceAfter(raw, RELAY_SEQUENCE) ?? (JSON.parse(String(raw)) as { sequence: number }).sequence;
        onKey(`${gi}:${sequence}`);
      });
      await new Promise((resolve, reject) => {
        socket.once('open', resolve);
        socket.once('error', reject);
      });
      return;
    }
    const socket = new WebSocket(base, 'graphql-transport-ws', RECEIVER);
    sockets.push(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: {} })));
      socket.on('message', (raw: Buffer) => {
        const known = sequenceAfter(raw, marker);
        if (known !== null) return onKey(`${gi}:${known}`);
        const message = JSON.parse(String(raw)) as {
          type: string;
          payload?: { data?: Record<string, { sequence: number } | undefined>; errors?: unknown };
        };
        if (message.type === 'connection_ack') {
          socket.send(
            JSON.stringify({
              id: '1',
              type: 'subscribe',
              payload: { query: subscription.query, variables: { id: group.sessionId, after: group.after } },
            }),
          );
          resolve();
        } else if (message.type === 'next') {
          const sequence = message.payload?.data?.[subscription.field]?.sequence;
          if (typeof sequence === 'number') onKey(`${gi}:${sequence}`);
          else if (receipts.errors.length < 5) receipts.errors.push(JSON.stringify(message.payload).slice(0, 300));
        } else if (message.type === 'error') {
          if (receipts.errors.length < 5) receipts.errors.push(JSON.stringify(message.payload).slice(0, 300));
          reject(new Error(JSON.stringify(message.payload)));
        }
      });
    });
  });
  return sockets;
}

/** Closes sockets without a closing handshake: the load is done with them. */
export function terminateAll(sockets: WebSocket[]): void {
  for (const socket of sockets) socket.terminate();
}
