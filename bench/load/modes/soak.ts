/**
 * Mode `soak`: mixed load for a duration: `readers` back-to-back readers POSTing `readBody`, a
 * writer appending at `writesPerSecond` round robin over the sessions, and `subscribers` sockets
 * spread evenly over the sessions, whose deliveries must match the writes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { SoakArgs } from '../args.js';
import { gql, post } from '../http-client.js';
import { APPEND, FILLER } from '../operations.js';
import { log } from '../output.js';
import { openSockets, Receipts, terminateAll } from '../subscribers.js';

export async function runSoak({ url, sessionIds, readBody, durationS, readers, subscribers, writesPerSecond }: SoakArgs) {
  const perSession = Math.ceil(subscribers / sessionIds.length);
  const receipts = new Receipts();
  const sockets = await openSockets({
    target: 'server',
    urls: [url],
    groups: sessionIds.map((sessionId) => ({ sessionId, after: 0, subscribers: perSession })),
    receipts,
  });
  const deadline = performance.now() + durationS * 1000;
  let reads = 0;
  let writes = 0;
  let failed = 0;
  const readerLoops = Array.from({ length: readers }, async () => {
    while (performance.now() < deadline) {
      const { status, text } = await post(url, readBody);
      if (status !== 200 || text.includes('"errors"')) failed++;
      reads++;
    }
  });
  const writer = (async () => {
    const started = performance.now();
    for (let i = 0; performance.now() < deadline; i++) {
      const wait = started + (i * 1000) / writesPerSecond - performance.now();
      if (wait > 0) await sleep(wait);
      try {
        await gql(url, APPEND, {
          input: { sessionId: sessionIds[i % sessionIds.length], messages: [{ role: 'USER', text: `soak ${i} ${FILLER}` }] },
        });
        writes++;
      } catch {
        failed++;
      }
    }
  })();
  let lastReport = performance.now();
  const progress = setInterval(() => {
    if (performance.now() - lastReport >= 30_000) {
      lastReport = performance.now();
      log(
        `soak: ${reads} reads, ${writes} writes, ${failed} failed, ${Math.max(0, Math.round((deadline - performance.now()) / 1000))} s left`,
      );
    }
  }, 5_000);
  await Promise.all([...readerLoops, writer]);
  clearInterval(progress);
  await sleep(2_000);
  let delivered = 0;
  for (const times of receipts.seen.values()) delivered += times.length;
  terminateAll(sockets);
  return { reads, writes, failed, delivered, expected: writes * perSession, lost: writes * perSession - delivered };
}
