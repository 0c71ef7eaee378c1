/**
 * The in-process caches, each an lru-cache bounded from configuration (CacheConfig), with its
 * invalidation rule written beside it (see each file). `AssemblyCaches.forget(sessionId)` is what
 * every path able to break a rule of the message-data caches calls (`deleteSession` does, for each
 * deleted session).
 */
import type { CacheConfig } from './sizes.js';
import { messageRowChars, type LightRow } from '../db/stores/messages.js';
import type { Message } from '../generated/prisma/client.js';
import { FinishedRowsCache } from './finished-rows.js';
import { FirstRowsCache } from './first-rows.js';
import { FinishedPartsCache } from './parts.js';
import { WindowHints } from './window-hints.js';

export { ApiKeyCache } from './api-keys.js';
export { FinishedRowsCache } from './finished-rows.js';
export { KeptReads } from './kept-reads.js';
export { FinishedPartsCache } from './parts.js';
export { SessionRowsCache } from './session-rows.js';
export { WindowHints, type WindowHint } from './window-hints.js';

/**
 * The caches of message data: what context assembly reads through (parsed parts, light rows and
 * window hints) and the whole finished rows that `Session.messages` pages are served from.
 */
export class AssemblyCaches {
  readonly parts: FinishedPartsCache;
  readonly rows: FinishedRowsCache<LightRow>;
  readonly hints: WindowHints;
  /** Whole finished message rows (the rule of FinishedRowsCache), weighed by their characters (`config.caches.pageMaxChars`). */
  readonly pages: FinishedRowsCache<Message>;
  /** Each session's leading row (position 0), for the leading SYSTEM message. */
  readonly firstRows: FirstRowsCache;

  constructor(
    config: Pick<CacheConfig, 'partsMaxChars' | 'rowsMax' | 'rowsMaxPerSession' | 'windowHintsMax' | 'firstRowsMax' | 'pageMaxChars'>,
  ) {
    this.parts = new FinishedPartsCache(config.partsMaxChars);
    this.rows = new FinishedRowsCache(config.rowsMax, config.rowsMaxPerSession);
    this.hints = new WindowHints(config.windowHintsMax);
    this.pages = new FinishedRowsCache<Message>(config.pageMaxChars, config.rowsMaxPerSession, messageRowChars);
    this.firstRows = new FirstRowsCache(config.firstRowsMax);
  }

  /** Forgets everything kept of `sessionId` (its own messages' parts, rows and page rows, its hint, its first row). */
  forget(sessionId: string): void {
    this.parts.forget(sessionId);
    this.rows.forget(sessionId);
    this.pages.forget(sessionId);
    this.hints.forget(sessionId);
    this.firstRows.forget(sessionId);
  }
}
