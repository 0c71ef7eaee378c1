import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { LRUCache } from 'lru-cache';
import type { KnownTokenCounts } from '../domain/tokens.js';
import type { TokenCounts } from '../domain/types.js';

/** Texts this long and longer are counted in the worker; shorter ones cost less to count in place than to send. */
export const LONG_TEXT = 64 * 1024;

/** tsx's ESM API module: its `import` export, next to the `require` one this resolves to. */
function tsxEsmApi(): string {
  return pathToFileURL(
    createRequire(import.meta.url)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
}

/**
 * Long texts counted off the request thread: counting a long text in both encodings on the request
 * thread would stall every other client for as long as it takes.
 * The schema boundary hands each long string argument to `count` before the resolver runs (and
 * services the long texts of finished messages); a worker counts it; `countTokens`, given this as
 * its `known` counts, then finds the counts here instead of counting again.
 *
 * The cache: text -> its counts in both encodings. A count is a pure function of the text, so an
 * entry can never be stale (nothing needs `forget`). It holds recent long texts only, least
 * recently used out first, bounded by their characters (`config.caches.precountMaxChars`, a share
 * of CACHE_MEMORY_MB); a text evicted before it is used, or longer than the whole share, is simply
 * counted again in place.
 *
 * One per app (`buildApp`), with its own worker, started at the first long text and stopped by
 * `close`; while no count is pending, the worker does not keep the process alive.
 */
export class TokenPrecount implements KnownTokenCounts {
  private readonly counted: LRUCache<string, TokenCounts>;
  private worker: Worker | null = null;
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (counts: TokenCounts) => void; reject: (error: Error) => void }>();
  private closed = false;

  constructor(maxChars: number) {
    this.counted = new LRUCache<string, TokenCounts>({ maxSize: maxChars, sizeCalculation: (_, text) => text.length });
  }

  /** The counts of `text` if it is long and was counted ahead. */
  get(text: string): TokenCounts | undefined {
    return text.length >= LONG_TEXT ? this.counted.get(text) : undefined;
  }

  /**
   * Counts the long texts among `texts` in the worker and keeps their counts for `countTokens`. A
   * failing worker is not an error for the request: the text is then counted in place. Once
   * closed, counts nothing.
   */
  async count(texts: readonly string[]): Promise<void> {
    if (this.closed) return;
    const { maxSize } = this.counted;
    const missing = [...new Set(texts.filter((t) => t.length >= LONG_TEXT && t.length <= maxSize && !this.counted.has(t)))];
    await Promise.all(
      missing.map(async (text) => {
        try {
          const counts = await this.countInWorker(text);
          if (!this.counted.has(text)) this.counted.set(text, counts);
        } catch {
          // `countTokens` counts it on the request thread when it needs it.
        }
      }),
    );
  }

  /** Stops the worker; counts still pending fail, and are then counted in place. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const running = this.worker;
    this.worker = null;
    await running?.terminate();
  }

  private countInWorker(text: string): Promise<TokenCounts> {
    const worker = (this.worker ??= this.startWorker());
    const id = this.nextId++;
    const promise = new Promise<TokenCounts>((resolve, reject) => this.waiting.set(id, { resolve, reject }));
    // Only while a count is pending does the worker keep the process alive.
    worker.ref();
    worker.postMessage({ id, text });
    return promise.finally(() => {
      if (this.waiting.size === 0) this.worker?.unref();
    });
  }

  private startWorker(): Worker {
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
      this.waiting.get(id)?.resolve(counts);
      this.waiting.delete(id);
    });
    const fail = (error: Error) => {
      for (const pending of this.waiting.values()) pending.reject(error);
      this.waiting.clear();
      if (this.worker === started) this.worker = null;
    };
    started.on('error', fail);
    started.on('exit', (code) => fail(new Error(`token worker exited with code ${code}`)));
    return started;
  }
}
