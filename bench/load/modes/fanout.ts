/**
 * Mode `fanout`: paced events to groups of subscribers (per session, or per relay channel), each
 * timed from the moment it is sent to each socket's receipt; lost and duplicate deliveries counted.
 * With several `sides` (the server's, the relay's, the durable relay's), their events take turns at
 * even offsets within each interval, each side at the full pace: all are measured over the same
 * seconds of the machine. Answers each side's figures, in order.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { FanoutArgs, FanoutSide } from '../args.js';
import { post } from '../http-client.js';
import { APPEND, FILLER } from '../operations.js';
import { log } from '../output.js';
import { pool } from '../pool.js';
import { quantile } from '../stats.js';
import { openSockets, Receipts, terminateAll } from '../subscribers.js';
import { WriterThread } from '../writer-thread.js';

/** An open side: its `send` writes the next event of a group and answers the event's key. */
type OpenSide = Awaited<ReturnType<typeof openSide>>;

async function openSide(side: FanoutSide) {
  const { urls, groups } = side;
  const target = side.kind === 'server' ? 'server' : 'relay';
  const receipts = new Receipts();
  const total = groups.reduce((n, g) => n + g.subscribers, 0);
  const opened = performance.now();
  const sockets = await openSockets({ target, urls, groups, receipts });
  log(`${total} ${target} sockets open in ${((performance.now() - opened) / 1000).toFixed(1)} s`);
  const publisher = side.kind === 'relay' ? new Redis(side.redisUrl) : null;
  const writerThread = side.kind === 'server' ? new WriterThread() : null;
  const nextSequence = groups.map((g) => g.after + 1);
  /** Sends a group's next event; answers its key and, for the server's writer, when its thread sent it. */
  const send = async (gi: number): Promise<{ key: string; sentAt?: number }> => {
    const group = groups[gi];
    const sequence = nextSequence[gi]++;
    const key = `${gi}:${sequence}`;
    const channel = group.channel ?? group.sessionId;
    if (side.kind === 'durable-relay') {
      const body = JSON.stringify({ id: side.writer.messageId, text: `event ${sequence} ${FILLER}`, channel, sequence });
      const { status, text } = await post(side.writer.url, body);
      if (status !== 200) throw new Error(`durable relay writer answered ${status}: ${text.slice(0, 300)}`);
    } else if (side.kind === 'relay') {
      const message = JSON.stringify({
        sequence,
        type: 'MESSAGE_ADDED',
        at: new Date().toISOString(),
        text: 'x'.repeat(side.payloadBytes),
      });
      await publisher?.publish(`${side.relayPrefix}${channel}`, message);
    } else {
      const sentAt = await writerThread?.gql(urls[0], APPEND, {
        input: { sessionId: group.sessionId, messages: [{ role: 'ASSISTANT', text: `event ${sequence} ${FILLER}` }] },
      });
      return { key, sentAt };
    }
    return { key };
  };
  return {
    groups,
    receipts,
    total,
    send,
    want: (key: string) => groups[Number(key.split(':')[0])].subscribers,
    sentAt: new Map<string, number>(),
    writerLatencies: writerThread?.latencies,
    close() {
      terminateAll(sockets);
      publisher?.disconnect();
      writerThread?.close();
    },
  };
}

/** A warm-up event per group that every socket must see: from then on each subscription is live. */
async function warmUp(side: OpenSide, deadline: number) {
  const warm: string[] = [];
  await pool(side.groups.length, 10, async (gi) => void warm.push((await side.send(gi)).key));
  await side.receipts.all(warm, side.want, deadline);
  const warmed = warm.reduce((n, k) => n + side.receipts.count(k), 0);
  if (warmed < side.total)
    throw new Error(`only ${warmed} of ${side.total} sockets got the warm-up event; ${side.receipts.errors.join('; ')}`);
}

/** A side's figures over its paced events, once every delivery arrived or the deadline passed. */
async function figures(side: OpenSide, deadline: number) {
  const { receipts, sentAt, want } = side;
  await receipts.all([...sentAt.keys()], want, deadline);
  const latencies: number[] = [];
  let expected = 0;
  for (const [key, at] of sentAt) {
    expected += want(key);
    for (const received of receipts.seen.get(key) ?? []) latencies.push(received - at);
  }
  return {
    median: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    delivered: latencies.length,
    expected,
    lost: expected - latencies.length,
    duplicates: receipts.duplicates,
    errors: receipts.errors,
    writer: side.writerLatencies ? { median: quantile(side.writerLatencies, 0.5), p99: quantile(side.writerLatencies, 0.99) } : undefined,
    perEvent: process.env.BENCH_PER_EVENT
      ? [...sentAt].map(([key, at]) => Math.max(...(receipts.seen.get(key) ?? [Number.NaN])) - at)
      : undefined,
  };
}

export async function runFanout({ sides: given, events, intervalMs, deadlineMs }: FanoutArgs) {
  const sides: OpenSide[] = [];
  const deadline = () => performance.now() + deadlineMs;
  try {
    for (const side of given) sides.push(await openSide(side));
    for (const side of sides) await warmUp(side, deadline());
    // The writer's figures cover the paced events only.
    for (const side of sides) side.writerLatencies?.splice(0);
    const started = performance.now();
    for (let i = 0; i < events; i++) {
      for (let k = 0; k < sides.length; k++) {
        const side = sides[k];
        const wait = started + (i + k / sides.length) * intervalMs - performance.now();
        if (wait > 0) await sleep(wait);
        const gi = i % side.groups.length;
        const at = performance.now();
        // The server's event counts from when the writer's thread sent it: the hand-over to that
        // thread (its wake-up) is the load's time, which the relays' sends never pay.
        const { key, sentAt } = await side.send(gi);
        side.sentAt.set(key, sentAt ?? at);
      }
    }
    const results = [];
    for (const side of sides) results.push(await figures(side, deadline()));
    return results;
  } finally {
    for (const side of sides) side.close();
  }
}
