import type { SearchHit } from '../services/search.js';
import {
  HIGHLIGHT_SCAN_CHARS,
  HIGHLIGHT_WINDOW_CHARS,
  SEARCH_DEFAULT_PAGE,
  SEARCH_MAX_PAGE,
  SEARCH_QUERY_MAX_CHARS,
  SEARCH_QUERY_MAX_TERMS,
  SEARCH_RANK_WINDOW,
} from '../services/search.js';
import { pageCursors } from '../domain/pagination.js';
import { builder } from './builder.js';
import { Message, Session } from './refs.js';

const MessageSearchEdge = builder.objectRef<SearchHit>('MessageSearchEdge').implement({
  description: 'A message that matches a search, with the session that wrote it and the matching text.',
  fields: (t) => ({
    cursor: t.exposeString('cursor', { description: 'Pass as `after` for the hits that follow this one.' }),
    message: t.field({
      type: Message,
      description: "The message, as the session that wrote it shows it (`hidden`, `redacted` are that session's).",
      resolve: (hit) => hit.message,
    }),
    session: t.field({
      type: Session,
      description: "The session that wrote the message (a fork's inherited messages are found once, under their ancestor).",
      resolve: async (hit, _, ctx) => (await ctx.loaders.sessionById.load(hit.message.sessionId))!,
    }),
    highlight: t.exposeString('highlight', {
      description: `The matching text around its best match (up to 35 words; a short text whole), HTML-escaped, each match wrapped in <mark>…</mark>: safe to insert as HTML. Cut from ${HIGHLIGHT_WINDOW_CHARS.toLocaleString('en-US')} characters of the text (the replacement, for a redacted message) around the first place a query word shows in its first ${HIGHLIGHT_SCAN_CHARS.toLocaleString('en-US')} characters; from its start when there is none.`,
    }),
    rank: t.exposeFloat('rank', {
      description: `Relevance (PostgreSQL's ts_rank): higher is better. Hits come best first, then newest, among the newest ${SEARCH_RANK_WINDOW.toLocaleString('en-US')} matches.`,
    }),
    matchedRedaction: t.boolean({
      description:
        "True when the message is redacted and was found by its redaction's replacement (a redacted message is never found by its original text).",
      resolve: (hit) => hit.redacted,
    }),
  }),
});

type SearchConnectionShape = { hits: SearchHit[]; hasNextPage: boolean; after: string | null };
const MessageSearchConnection = builder.objectRef<SearchConnectionShape>('MessageSearchConnection').implement({
  description: 'A page of search hits, best first.',
  fields: (t) => ({
    edges: t.field({ type: [MessageSearchEdge], description: 'The hits of this page.', resolve: (c) => c.hits }),
    pageInfo: t.field({
      type: builder.pageInfoRef(),
      description: 'Whether hits follow; pages go forward only (first/after).',
      resolve: (c) => ({
        hasNextPage: c.hasNextPage,
        hasPreviousPage: false,
        ...pageCursors(c.hits[0]?.cursor, c.hits.at(-1)?.cursor, { after: c.after }),
      }),
    }),
  }),
});

builder.queryField('searchMessages', (t) =>
  t.field({
    type: MessageSearchConnection,
    description: `Full-text search over your workspace's messages (English stemming; websearch syntax: words, "a phrase", or, -word), best match first, then newest. Each message is found once, under the session that wrote it. What is searched is what a reader sees there: a redacted message only by its replacement; a hidden message like any other (hiding keeps it out of assembled context, not out of the session), marked by message.hidden. A message still generating is found once it is finished; only the first 16,384 characters of a text (or a replacement) are searched. Only the newest ${SEARCH_RANK_WINDOW.toLocaleString('en-US')} matching messages are ranked and returned, so a search costs the same in a workspace of any size: to reach older ones, narrow the query (more words, a "phrase", -word). A page carries at most 1 MiB of message content (text and parts) and always its first hit: a page cut short has hasNextPage true; pages share the request's answer budget as Session.messages pages do (once it is spent, a page is empty with hasNextPage true).`,
    args: {
      query: t.arg.string({
        required: true,
        description: `What to look for: not blank, at most ${SEARCH_QUERY_MAX_CHARS} characters and ${SEARCH_QUERY_MAX_TERMS} words (else BAD_USER_INPUT). Stop words alone match nothing.`,
      }),
      first: t.arg.int({ required: false, description: `Page size, 0 to ${SEARCH_MAX_PAGE} (default ${SEARCH_DEFAULT_PAGE}).` }),
      after: t.arg.string({
        required: false,
        description: 'Return hits after this cursor (an edge cursor or pageInfo.endCursor of the same query).',
      }),
    },
    resolve: async (_, args, ctx) => ({
      ...(await ctx.search.search(ctx.workspaceId, args.query, args.first, args.after, ctx.loaders.contentBudget)),
      after: args.after ?? null,
    }),
  }),
);
