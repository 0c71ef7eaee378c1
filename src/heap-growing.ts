import { setFlagsFromString } from 'node:v8';

/**
 * Sets how far V8 lets the old generation grow past the heap its last full GC kept
 * (HEAP_GROWING_PERCENT; see DEFAULT_HEAP_GROWING_PERCENT in config.ts for why and what it costs).
 * V8 reads the flag each time a full GC sets the next limit, so setting it once at start, before
 * the load, holds for the process's life (a command-line flag would too, but `npm start` imports
 * dist/main.js in its own process and NODE_OPTIONS refuses this flag). 0 leaves V8's own factor.
 * Returns the flag set, or null.
 */
export function applyHeapGrowing(percent: number, set: (flags: string) => void = setFlagsFromString): string | null {
  if (!Number.isSafeInteger(percent) || percent <= 0) return null;
  const flag = `--heap-growing-percent=${percent}`;
  set(flag);
  return flag;
}
