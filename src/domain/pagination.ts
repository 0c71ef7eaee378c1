import { badInput } from './errors.js';

export interface PageArgs {
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 500;
/** Largest page of the other connections (sessions, forks, turns). */
export const MAX_CONNECTION_PAGE = 200;

const PREFIX = 'idx:';

export const encodeIndexCursor = (index: number) => Buffer.from(`${PREFIX}${index}`).toString('base64url');

export function decodeIndexCursor(cursor: string, argument: string): number {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const index = Number(text.slice(PREFIX.length));
  if (!text.startsWith(PREFIX) || !Number.isInteger(index) || index < 0) {
    throw badInput(`${argument} is not a cursor returned by this connection.`);
  }
  return index;
}

/**
 * The positions [lo, hi) of a page over a dense, 0-based list of `count` items, following the
 * Relay connection rules for first/after/last/before.
 */
export function indexPage(args: PageArgs, count: number) {
  for (const name of ['first', 'last'] as const) {
    const n = args[name];
    if (n !== null && n !== undefined && (n < 0 || n > MAX_PAGE)) throw badInput(`${name} must be from 0 to ${MAX_PAGE}.`);
  }
  let lo = args.after ? decodeIndexCursor(args.after, 'after') + 1 : 0;
  let hi = args.before ? decodeIndexCursor(args.before, 'before') : count;
  lo = Math.min(lo, count);
  hi = Math.max(lo, Math.min(hi, count));
  const first = args.first ?? (args.last === null || args.last === undefined ? DEFAULT_PAGE : null);
  if (first !== null) hi = Math.min(hi, lo + first);
  if (args.last !== null && args.last !== undefined) lo = Math.max(lo, hi - args.last);
  return { lo, hi, hasPreviousPage: lo > 0, hasNextPage: hi < count };
}

/**
 * A page's `startCursor` and `endCursor`: its first and last edges' cursors. A page left empty by a
 * content budget while more follows answers the cursor it was asked from (`after`, or `before` with
 * `last`), so a client that pages on from `endCursor` (`startCursor`) continues where it stood
 * instead of starting over.
 */
export function pageCursors(
  first: string | undefined,
  last: string | undefined,
  args: { after?: string | null; before?: string | null },
): { startCursor: string | null; endCursor: string | null } {
  if (first !== undefined && last !== undefined) return { startCursor: first, endCursor: last };
  const asked = args.before ?? args.after ?? null;
  return { startCursor: asked, endCursor: asked };
}

/** `pageCursors` of a page of messages, whose cursors are their positions. */
export function positionCursors(rows: ReadonlyArray<{ position: number }>, args: { after?: string | null; before?: string | null }) {
  return pageCursors(
    rows.length ? encodeIndexCursor(rows[0].position) : undefined,
    rows.length ? encodeIndexCursor(rows[rows.length - 1].position) : undefined,
    args,
  );
}
