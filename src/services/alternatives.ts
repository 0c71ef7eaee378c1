import { contentBytesOf, cutPages } from '../domain/content-budget.js';
import { badInput } from '../domain/errors.js';
import { PAGE_CONTENT_BYTES } from '../domain/limits.js';
import { indexPage, MAX_CONNECTION_PAGE, type PageArgs } from '../domain/pagination.js';
import type { Message } from '../generated/prisma/client.js';
import type { RequestLoaders } from './loaders.js';

/** A page of a message's alternatives: the rows, the index of the first in the whole list, and the Relay page flags. */
export interface AlternativesPage {
  rows: Message[];
  start: number;
  totalCount: number;
  /** Where the message itself stands in the whole list (0-based). */
  currentIndex: number;
  hasPreviousPage: boolean;
  hasNextPage: boolean;
}

/**
 * A page of `messageId`'s alternatives (Relay arguments over the list in creation order, index
 * cursors: a new alternative is always newer than every other, so it joins at the end and the
 * cursors of the others stand). The page is cut to its content bound from the end it is read from,
 * on the light rows, before any content is read; its share of the request's budget is reserved
 * and settled as `Session.messages` pages do.
 */
export async function alternativesPage(loaders: RequestLoaders, messageId: string, args: PageArgs): Promise<AlternativesPage> {
  for (const name of ['first', 'last'] as const) {
    const n = args[name];
    if (n !== null && n !== undefined && (n < 0 || n > MAX_CONNECTION_PAGE))
      throw badInput(`${name} must be from 0 to ${MAX_CONNECTION_PAGE}.`);
  }
  const members = await loaders.alternatives.load(messageId);
  const page = indexPage(args, members.length);
  const fromEnd = args.last !== null && args.last !== undefined;
  const slice = members.slice(page.lo, page.hi);
  const inReadOrder = fromEnd ? [...slice].reverse() : slice;
  // The light rows give the page's size before its content is read: reserve that (at most a page's
  // bound), not a whole page's bound, so that the pages of many messages read at once (a page of
  // messages, each with its alternatives) do not starve each other of an answer they fit in.
  const wanted = slice.reduce((sum, m) => sum + (m.contentBytes ?? PAGE_CONTENT_BYTES), 0);
  const reserved = slice.length === 0 ? 0 : loaders.contentBudget.reserve(Math.min(PAGE_CONTENT_BYTES, wanted));
  const {
    kept: [kept],
  } = cutPages([{ rows: inReadOrder }], (m) => m.contentBytes ?? 0, reserved);
  const keptInOrder = fromEnd ? inReadOrder.slice(0, kept).reverse() : inReadOrder.slice(0, kept);
  const loaded = await loaders.messageById.loadMany(keptInOrder.map((m) => m.id));
  const rows = loaded.filter((row): row is Message => row !== null && !(row instanceof Error));
  loaders.contentBudget.settle(
    reserved,
    rows.reduce((sum, row) => sum + contentBytesOf(row), 0),
  );
  const cut = kept < slice.length;
  return {
    rows,
    start: fromEnd ? page.hi - kept : page.lo,
    totalCount: members.length,
    currentIndex: Math.max(
      0,
      members.findIndex((m) => m.id === messageId),
    ),
    hasPreviousPage: page.hasPreviousPage || (fromEnd && cut),
    hasNextPage: page.hasNextPage || (!fromEnd && cut),
  };
}
