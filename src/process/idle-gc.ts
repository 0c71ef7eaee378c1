import { performance } from 'node:perf_hooks';
import { type HeapSpaceInfo, getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Scavenges in the event loop's idle time, which V8 only gets from an embedder that asks for it
 * (Chrome does, between frames; Node never does): V8 scavenges when an allocation finds the young
 * generation full, that is in the middle of whatever request allocates next, and that request
 * waits.
 *
 * Live traffic here comes in bursts with gaps (an event, its fan-out, 50 ms of nothing; a client
 * thinking between turns). On the bench's fan-out of 100 sessions × 10 subscribers on PGlite (20
 * events/s, 1,000 sockets; a GC trace of the server), each event allocated about 200 KB, so every
 * 3 s a scavenge of 3 to 9 ms landed inside an event's handling, and each promoted 0.3 to 0.8 MB
 * (the event's objects still in flight). Scavenging in the gaps instead, once the young generation
 * is a quarter full, ran one every second of that load, of 1.4 to 2.2 ms, each promoting 0.1 to
 * 0.3 MB (between bursts little is alive). In alternating runs of that case (two runs of three
 * rounds each way, same machine), the server's delivery p99 was 7.5 to 9.4 ms (median 8.4) with
 * idle scavenges and 7.7 to 10.8 ms (median 9.8) without; its median 4.1 to 5.8 ms against 4.9 to
 * 5.9.
 *
 * Full GCs are left to V8. A forced one (`gc()`) marks and compacts the whole heap in one pause:
 * 52 and 60 ms on that server's 90 MB heap, where V8's own, marked concurrently, paused it for 15 to
 * 24 ms; an event arriving during the forced one would wait longer than for V8's.
 *
 * Every `tickMs` an unreferenced timer looks at the last tick: if the loop was busy for less than a
 * tenth of it, the process is idle, and it scavenges if `scavengeDue` says so (the scavenge's own
 * time makes the next tick busy). Under steady load the loop is never idle for a whole tick, and V8
 * scavenges as it always did.
 */
export interface IdleGc {
  /** Scavenges this module ran. */
  readonly stats: { scavenges: number };
  stop(): void;
}

/** The young generation's allocated bytes and capacity (one semi-space). */
export interface YoungGeneration {
  used: number;
  capacity: number;
}

/** A scavenge is due once the young generation is more than `share` full. */
export function scavengeDue(young: YoungGeneration, share: number): boolean {
  return young.capacity > 0 && young.used > young.capacity * share;
}

export function youngGeneration(spaces: HeapSpaceInfo[] = getHeapSpaceStatistics()): YoungGeneration {
  const space = spaces.find((s) => s.space_name === 'new_space');
  return space ? { used: space.space_used_size, capacity: space.space_used_size + space.space_available_size } : { used: 0, capacity: 0 };
}

/** V8's `gc()` as far as used here: `{ type: 'minor' }` scavenges. */
export type Scavenger = (options: { type: 'minor' }) => void;

let exposed: Scavenger | null = null;

/**
 * V8's `gc()`: the process's own when it was started with --expose-gc, else one from a new V8
 * context made after setting the flag (the main context's globals stay as they are).
 */
export function exposeGc(): Scavenger {
  if (exposed) return exposed;
  const own = (globalThis as { gc?: unknown }).gc;
  if (typeof own === 'function') return (exposed = own as Scavenger);
  setFlagsFromString('--expose-gc');
  exposed = runInNewContext('gc') as Scavenger;
  return exposed;
}

export interface IdleGcOptions {
  /** How often the loop is looked at, in ms (10). */
  tickMs?: number;
  /** How full the young generation may be before an idle tick scavenges (0.25). */
  youngShare?: number;
  /** For tests: the collector and the young generation as the policy sees them. */
  gc?: Scavenger;
  young?: () => YoungGeneration;
}

/** Starts scavenging in idle time (process-wide: `main.ts` calls it once). */
export function startIdleGc(options: IdleGcOptions = {}): IdleGc {
  const tickMs = options.tickMs ?? 10;
  const share = options.youngShare ?? 0.25;
  const gc = options.gc ?? exposeGc();
  const young = options.young ?? (() => youngGeneration());
  const stats = { scavenges: 0 };
  let last = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const busyMs = now.active - last.active;
    last = now;
    if (busyMs > tickMs / 10 || !scavengeDue(young(), share)) return;
    gc({ type: 'minor' });
    stats.scavenges++;
  }, tickMs);
  timer.unref();
  return {
    stats,
    stop: () => clearInterval(timer),
  };
}
