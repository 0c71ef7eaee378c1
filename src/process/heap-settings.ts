import { setFlagsFromString } from 'node:v8';

/**
 * The process-wide V8 heap settings (see DEFAULT_HEAP_GROWING_PERCENT in config.ts for why and what
 * they cost), set once at start, before any load:
 *
 * - `--heap-growing-percent` (HEAP_GROWING_PERCENT; 0 leaves V8's own factor): how far the old
 *   generation may grow past the heap the last full GC kept. V8 reads it each time a full GC sets
 *   the next limit.
 * - `--no-allocation-site-pretenuring` (ALLOCATION_SITE_PRETENURING=false, the default): the same
 *   code makes an HTTP request's head (IncomingMessage, the Fetch Request, headers, URL, the GraphQL
 *   context) and a WebSocket subscription's, which lives as long as the subscription; V8 saw those
 *   allocation sites' objects survive and allocated every later one straight in the old generation,
 *   where each request's dead head then kept its young children alive through scavenges (they were
 *   promoted too). V8 reads it at each GC's pretenuring decisions.
 *
 * A command-line flag would do the same, but `npm start` imports dist/main.js in its own process and
 * NODE_OPTIONS refuses these flags. Returns the flags set.
 */
export function applyHeapSettings(
  settings: { heapGrowingPercent: number; allocationSitePretenuring: boolean },
  set: (flags: string) => void = setFlagsFromString,
): string[] {
  const flags: string[] = [];
  if (Number.isSafeInteger(settings.heapGrowingPercent) && settings.heapGrowingPercent > 0) {
    flags.push(`--heap-growing-percent=${settings.heapGrowingPercent}`);
  }
  if (!settings.allocationSitePretenuring) flags.push('--no-allocation-site-pretenuring');
  for (const flag of flags) set(flag);
  return flags;
}
