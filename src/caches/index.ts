/**
 * The in-process caches, each a provider with its invalidation rule written beside it (see each
 * file). `AssemblyCaches.forget(sessionId)` is what every path able to break a rule calls.
 */
import type { CacheConfig } from '../config.js';
import type { LightRow } from '../db/stores/messages.js';
import { FinishedRowsCache } from './finished-rows.js';
import { FinishedPartsCache } from './parts.js';
import { WindowHints } from './window-hints.js';

export { ApiKeyCache } from './api-keys.js';
export { FinishedRowsCache } from './finished-rows.js';
export { FinishedPartsCache } from './parts.js';
export { WindowHints, type WindowHint } from './window-hints.js';

/** The caches context assembly reads through: parsed parts, light rows and window hints. */
export class AssemblyCaches {
  readonly parts: FinishedPartsCache;
  readonly rows: FinishedRowsCache<LightRow>;
  readonly hints: WindowHints;

  constructor(config: Pick<CacheConfig, 'partsMaxChars' | 'rowsMax' | 'rowsMaxPerSession' | 'windowHintsMax'>) {
    this.parts = new FinishedPartsCache(config.partsMaxChars);
    this.rows = new FinishedRowsCache(config.rowsMax, config.rowsMaxPerSession);
    this.hints = new WindowHints(config.windowHintsMax);
  }

  /** Forgets everything kept of `sessionId` (its own messages' parts and rows, its hint). */
  forget(sessionId: string): void {
    this.parts.forget(sessionId);
    this.rows.forget(sessionId);
    this.hints.forget(sessionId);
  }
}
