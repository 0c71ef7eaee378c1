/**
 * Mode `stream`: `watchers` sockets on one generating message per target (the server, the raw
 * baseline, or both); one writer sends appendText updates back to back (the server's updateMessage,
 * or the raw baseline's update + publish) in blocks, the targets taking turns block by block.
 * Updates/s over the blocks, each block timed until every watcher has its last update; beside it,
 * the CPU per update of the process under test (read from /proc, the one thing this process learns
 * other than over sockets) and of this process.
 */
import type WebSocket from 'ws';
import { cpuMsOf } from '../../proc.js';
import type { StreamArgs, StreamTarget } from '../args.js';
import { gql, post } from '../http-client.js';
import { quantile } from '../stats.js';
import { openSockets, Receipts, terminateAll } from '../subscribers.js';

const UPDATE_MESSAGE = `mutation ($input: UpdateMessageInput!) { updateMessage(input: $input) { id } }`;

/** One target's sockets and what its blocks measured so far. */
interface Run {
  t: StreamTarget;
  receipts: Receipts;
  sockets: WebSocket[];
  /** The sequence of the last update sent. */
  sequence: number;
  sentAt: Map<string, number>;
  roundTrips: number[];
  /** Summed over the blocks: time from each block's first update to its last delivery, CPU of the target and of this process. */
  elapsedMs: number;
  targetCpuMs: number;
  loadCpuMs: number;
}

/** Sends the run's next update; answers its key. */
async function update(run: Run): Promise<string> {
  const { t } = run;
  run.sequence++;
  if (t.target === 'raw') {
    const response = await post(t.url, JSON.stringify({ id: t.rawMessageId, text: ' token', channel: t.channel, sequence: run.sequence }));
    if (response.status !== 200) throw new Error(`raw update: HTTP ${response.status} ${response.text}`);
  } else {
    await gql(t.url, UPDATE_MESSAGE, { input: { messageId: t.messageId, appendText: ' token' } });
  }
  return `0:${run.sequence}`;
}

export async function runStream({ targets, watchers, blocks, block }: StreamArgs) {
  const runs: Run[] = [];
  for (const t of targets) {
    const receipts = new Receipts();
    const sockets = await openSockets({
      target: t.target === 'raw' ? 'relay' : 'server',
      urls: [t.wsUrl],
      groups: [{ sessionId: t.sessionId, channel: t.target === 'raw' ? t.channel : undefined, after: t.after, subscribers: watchers }],
      receipts,
    });
    runs.push({ t, receipts, sockets, sequence: t.after, sentAt: new Map(), roundTrips: [], elapsedMs: 0, targetCpuMs: 0, loadCpuMs: 0 });
  }
  const want = () => watchers;
  // One block: `block` updates back to back, then until every watcher has the last one. The
  // targets take turns block by block (in alternating order), so that a change in the machine's
  // speed, which on this shared machine comes and goes within seconds, weighs on both alike.
  const runBlock = async (run: Run) => {
    const keys: string[] = [];
    const cpu = process.cpuUsage();
    const targetCpu = cpuMsOf(run.t.pid);
    const started = performance.now();
    for (let i = 0; i < block; i++) {
      const t = performance.now();
      const key = `0:${run.sequence + 1}`;
      run.sentAt.set(key, t);
      keys.push(key);
      await update(run);
      run.roundTrips.push(performance.now() - t);
    }
    await run.receipts.all(keys, want, performance.now() + 60_000);
    const last = run.receipts.seen.get(keys[keys.length - 1]);
    run.elapsedMs += (last?.length ? Math.max(...last) : performance.now()) - started;
    run.targetCpuMs += cpuMsOf(run.t.pid) - targetCpu;
    const used = process.cpuUsage(cpu);
    run.loadCpuMs += (used.user + used.system) / 1000;
  };
  try {
    for (const run of runs) {
      const warm = await update(run);
      await run.receipts.all([warm], want, performance.now() + 30_000);
      if (run.receipts.count(warm) < watchers)
        throw new Error(`only ${run.receipts.count(warm)} of ${watchers} watchers got the first update; ${run.receipts.errors.join('; ')}`);
    }
    for (let b = 0; b < blocks; b++) for (const run of b % 2 ? [...runs].reverse() : runs) await runBlock(run);
    const updates = blocks * block;
    return runs.map((run) => {
      const latencies: number[] = [];
      for (const [key, at] of run.sentAt) for (const received of run.receipts.seen.get(key) ?? []) latencies.push(received - at);
      return {
        target: run.t.target,
        rps: updates / (run.elapsedMs / 1000),
        p50: quantile(latencies, 0.5),
        p99: quantile(latencies, 0.99),
        lost: updates * watchers - latencies.length,
        duplicates: run.receipts.duplicates,
        failed: 0,
        // Diagnostics: the writer's round trip per update, the process under test's CPU per update,
        // and this process's (it parses every watcher's deliveries, on the same machine).
        write: { p50: quantile(run.roundTrips, 0.5), p99: quantile(run.roundTrips, 0.99) },
        cpuMs: run.targetCpuMs / updates,
        loadCpuMs: run.loadCpuMs / updates,
      };
    });
  } finally {
    for (const run of runs) terminateAll(run.sockets);
  }
}
