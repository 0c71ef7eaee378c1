/** Mode `paced`: `{ hello }` requests one at a time at the fan-out writer's pace: what one HTTP request costs then. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { PacedArgs } from '../args.js';
import { gql } from '../http-client.js';
import { quantile } from '../stats.js';

export async function runPaced({ url, count, intervalMs }: PacedArgs) {
  const latencies: number[] = [];
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const wait = started + i * intervalMs - performance.now();
    if (wait > 0) await sleep(wait);
    const t = performance.now();
    await gql(url, '{ hello }');
    latencies.push(performance.now() - t);
  }
  return { median: quantile(latencies, 0.5), p99: quantile(latencies, 0.99) };
}
