/**
 * Mode `hold`: opens `count` subscribers of one session, prints `{"ready":true,"opened":N}`, and
 * keeps them open until stdin ends (bench/proc.ts `holdLoad`); then closes them and answers.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { HoldArgs } from '../args.js';
import { printLine } from '../output.js';
import { openSockets, Receipts, terminateAll } from '../subscribers.js';

export async function runHold({ urls, sessionId, count }: HoldArgs) {
  const receipts = new Receipts();
  const sockets = await openSockets({ target: 'server', urls, groups: [{ sessionId, after: 0, subscribers: count }], receipts });
  // Let the server settle what the subscribe messages started.
  await sleep(1_000);
  printLine({ ready: true, opened: sockets.length });
  await new Promise<void>((resolve) => {
    process.stdin.on('data', () => {});
    process.stdin.on('end', resolve);
    process.stdin.on('close', resolve);
  });
  terminateAll(sockets);
  return { closed: sockets.length, errors: receipts.errors };
}
