import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { LRUCache } from 'lru-cache';
import type { TokenCounts } from './types.js';

/**
 * Long texts counted off the request thread: counting a long text in both encodings on the request
 * thread would stall every other client for as long as it takes.
 * The schema boundary hands each long string argument to `precount` before the resolver runs; a
 * worker counts it; `countTokens` then finds the counts here instead of counting again.
 *
 * The cache: text -> its counts in both encodings. A count is a pure function of the text, so an
 * entry can never be stale (nothing needs `forget`); it holds recent long texts only (least recently
 * used out first, PRECOUNT_CHARACTERS in all),
 * so its memory is bounded, and a text evicted before it is used is simply counted again in place.
 */
export const LONG_TEXT = 64 * 1024;
const PRECOUNT_CHARACTERS = 64 * 1024 * 1024;

const counted = new LRUCache<string, TokenCounts>({ maxSize: PRECOUNT_CHARACTERS, sizeCalculation: (_, text) => text.length });

export function precounted(text: string): TokenCounts | undefined {
  return text.length >= LONG_TEXT ? counted.get(text) : undefined;
}

function remember(text: string, counts: TokenCounts) {
  if (!counted.has(text)) counted.set(text, counts);
}

let worker: Worker | null = null;
let nextId = 0;
const waiting = new Map<number, { resolve: (counts: TokenCounts) => void; reject: (error: Error) => void }>();

/** tsx's ESM API module: its `import` export, next to the `require` one this resolves to. */
function tsxEsmApi(): string {
  return pathToFileURL(
    createRequire(import.meta.url)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
}

function startWorker(): Worker {
  // Run from TypeScript sources (tsx, vitest), the worker registers tsx's loader first (Node 20
  // does not apply `--import tsx` to a worker's entry); built JavaScript is loaded as it is.
  const fromSource = import.meta.url.endsWith('.ts');
  const entry = new URL(fromSource ? './token-worker.ts' : './token-worker.js', import.meta.url).href;
  const started = fromSource
    ? new Worker(`import(${JSON.stringify(tsxEsmApi())}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); })`, {
        eval: true,
      })
    : new Worker(new URL(entry));
  started.unref();
  started.on('message', ({ id, counts }: { id: number; counts: TokenCounts }) => {
    waiting.get(id)?.resolve(counts);
    waiting.delete(id);
  });
  const fail = (error: Error) => {
    for (const pending of waiting.values()) pending.reject(error);
    waiting.clear();
    if (worker === started) worker = null;
  };
  started.on('error', fail);
  started.on('exit', (code) => fail(new Error(`token worker exited with code ${code}`)));
  return started;
}

function countInWorker(text: string): Promise<TokenCounts> {
  worker ??= startWorker();
  const id = nextId++;
  const promise = new Promise<TokenCounts>((resolve, reject) => waiting.set(id, { resolve, reject }));
  // Only while a count is pending does the worker keep the process alive.
  worker.ref();
  worker.postMessage({ id, text });
  return promise.finally(() => {
    if (waiting.size === 0) worker?.unref();
  });
}

/**
 * Counts the long texts among `texts` in the worker and keeps their counts for `countTokens`. A
 * failing worker is not an error for the request: the text is then counted in place.
 */
export async function precount(texts: readonly string[]): Promise<void> {
  const missing = [...new Set(texts.filter((t) => t.length >= LONG_TEXT && !counted.has(t)))];
  await Promise.all(
    missing.map(async (text) => {
      try {
        remember(text, await countInWorker(text));
      } catch {
        // `countTokens` counts it on the request thread when it needs it.
      }
    }),
  );
}

/** Stops the worker (tests; the worker never keeps the process alive while idle anyway). */
export async function stopTokenWorker() {
  const running = worker;
  worker = null;
  await running?.terminate();
}
