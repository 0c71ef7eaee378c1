/**
 * The bounds on how much message content one answer carries: a page holds at most
 * PAGE_CONTENT_BYTES (and always its first message), and the pages of one operation share
 * `TextCaps.responseContentBytes` (`ResponseBudget`). Sizes are `Message.contentBytes`: UTF-8 bytes
 * of the text and of the parts as JSON.
 */
import { PAGE_CONTENT_BYTES } from './limits.js';

/**
 * A message's size against the bounds: its `contentBytes` column, or (a row never read back from
 * the table has none) the same measure made here, up to jsonb's text form of the parts (which adds
 * a space after each separator): close enough for a bound.
 */
export function contentBytesOf(row: { contentBytes: number | null; text: string; parts: unknown }): number {
  return row.contentBytes ?? Buffer.byteLength(row.text) + Buffer.byteLength(JSON.stringify(row.parts));
}

/**
 * What is left of one operation's content budget (one request, or one event of a subscription).
 * A batch of page reads reserves what it may use before its statement (`reserve`), so that reads
 * in flight at once cannot each spend the whole of it, and settles afterwards (`settle`).
 */
export class ResponseBudget {
  constructor(private left: number) {}

  /** Content bytes not yet spent or reserved (0 or less: the answer is full). */
  get remaining(): number {
    return this.left;
  }

  /** Reserves up to `wanted` bytes (what is left, if less); returns what was reserved. */
  reserve(wanted: number): number {
    const taken = Math.max(0, Math.min(wanted, this.left));
    this.left -= taken;
    return taken;
  }

  /** Gives back a reservation, less what was spent of it (`spent` may exceed it: the one message a page always keeps). */
  settle(reserved: number, spent: number): void {
    this.left += reserved - spent;
  }
}

/** One page's messages in page order (index order, or newest first for last/before), each with its size. */
export interface SizedPage<R> {
  rows: readonly R[];
}

/**
 * Cuts pages, in the order given, to the page bound and to `available` bytes shared by all of
 * them: a page keeps its messages while they fit its bound (its first one always), and while the
 * running total of every kept page fits `available`; a page's first message is kept when the total
 * before it is under `available` (a message larger than what is left comes alone). Once the total
 * is reached, the following pages keep nothing. Returns the kept count of each page and the bytes
 * kept. The statement that reads pages applies the same rule (`readPagesWithin`).
 */
export function cutPages<R>(
  pages: readonly SizedPage<R>[],
  sizeOf: (row: R) => number,
  available: number,
  pageBytes = PAGE_CONTENT_BYTES,
): { kept: number[]; spent: number } {
  let spent = 0;
  let full = available <= 0;
  const kept = pages.map(({ rows }) => {
    let inPage = 0;
    let count = 0;
    for (const row of rows) {
      if (full) break;
      const size = sizeOf(row);
      if (count > 0 && (inPage + size > pageBytes || spent + size > available)) {
        // Past its own bound, the page ends; past the shared one, every page after it is empty too.
        if (spent + size > available) full = true;
        break;
      }
      inPage += size;
      spent += size;
      count++;
      if (spent >= available) full = true;
    }
    return count;
  });
  return { kept, spent };
}

/**
 * One page made of several reads (a timeline page: a range per session), each already cut by
 * the loader (`short` when it came back with fewer items than asked), joined in page order and cut
 * to the page bound as one page. The page ends at the first read cut short, so it never skips
 * items; `short` says the joined page holds fewer items than asked. Items come back in index order.
 */
export function joinCutReads<T>(
  reads: readonly { items: readonly T[]; short: boolean }[],
  fromEnd: boolean,
  sizeOf: (item: T) => number,
  pageBytes = PAGE_CONTENT_BYTES,
): { items: T[]; short: boolean } {
  const joined: T[] = [];
  let short = false;
  for (const read of fromEnd ? [...reads].reverse() : reads) {
    joined.push(...(fromEnd ? [...read.items].reverse() : read.items));
    if (read.short) {
      short = true;
      break;
    }
  }
  const [kept] = cutPages([{ rows: joined }], sizeOf, Number.POSITIVE_INFINITY, pageBytes).kept;
  const page = joined.slice(0, kept);
  return { items: fromEnd ? page.reverse() : page, short: short || kept < joined.length };
}
