import type { Message as MessageRow, Session as SessionRow } from '../generated/prisma/client.js';
import { DEFAULT_PAGE, encodeIndexCursor, indexPage, MAX_PAGE, pageCursors, positionCursors } from '../domain/pagination.js';
import { badInput } from '../domain/errors.js';
import { contentBytesOf, joinCutReads } from '../domain/content-budget.js';
import { PAGE_CONTENT_BYTES } from '../domain/limits.js';
import { builder } from './builder.js';
import { parseGlobalId } from './ids.js';
import { Message, Session } from './refs.js';

export const SessionKindEnum = builder.enumType('SessionKind', {
  description: 'How a session came to be.',
  values: {
    ROOT: { description: 'A new conversation (createSession without parentTurnId).' },
    FORK: { description: 'A fork of another session (forkSession): parent and forkIndex say where it was cut.' },
    SUB_AGENT: {
      description:
        "A sub-agent's own conversation, nested in a turn of another session (createSession with parentTurnId): parentTurn says which. It is the root of its own fork tree.",
    },
  } as const,
});

builder.prismaNode('Session', {
  description:
    "A conversation. A fork is a session too: it sees its parent's messages before the cut (shared, not copied) followed by its own.",
  id: { field: 'id' },
  nullable: true,
  findUnique: (id, ctx) => ({ id, workspaceId: ctx.workspaceId }),
  fields: (t) => ({
    title: t.exposeString('title', { description: 'The title.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was created.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'When it, or its message list, last changed.' }),
    settings: t.field({
      type: 'JSON',
      description: "Model and connector settings (a JSON object); a fork starts with its parent's.",
      resolve: (s) => s.settings,
    }),
    metadata: t.field({
      type: 'JSON',
      description: "Free-form client metadata (a JSON object); a fork starts with its parent's.",
      resolve: (s) => s.metadata,
    }),
    kind: t.field({ type: SessionKindEnum, description: 'ROOT, FORK or SUB_AGENT.', resolve: (s) => s.kind }),
    parentTurn: t.relation('parentTurn', {
      nullable: true,
      description:
        "For a sub-agent session, the turn of another session it runs in: its usage rolls up into that turn's usage and its events appear on that session's stream as SubSessionEvent. Null otherwise.",
    }),
    agentId: t.exposeString('agentId', { nullable: true, description: 'For a sub-agent session, the agent that runs it. Null otherwise.' }),
    parentMessageCount: t.exposeInt('parentMessageCount', {
      nullable: true,
      description:
        "For a sub-agent session, how many messages the parent session had when it was made: its messages follow those in the parent's timeline. Null otherwise.",
    }),
    parent: t.relation('parent', {
      nullable: true,
      description: 'The session this one was forked from; null for a root or a sub-agent session.',
    }),
    forkIndex: t.exposeInt('forkIndex', {
      nullable: true,
      description: "The parent's messageIndex this session was forked at: it holds the parent's messages [0, forkIndex). Null for roots.",
    }),
    forkPointMessage: t.relation('forkPointMessage', {
      nullable: true,
      description:
        "The parent's message at forkIndex, left out of this fork: a USER message (forkSession, editMessage), or the ASSISTANT answer a regenerateMessage branch answers again. Null for roots.",
    }),
    root: t.relation('root', { description: 'The root of the fork tree (itself for a root and for a sub-agent session).' }),
    depth: t.exposeInt('depth', { description: 'Number of ancestors: 0 for a root.' }),
    forks: t.relatedConnection(
      'forks',
      {
        description: 'Sessions forked directly from this one, oldest first.',
        cursor: 'id',
        query: () => ({ orderBy: { id: 'asc' } }),
        totalCount: true,
      },
      { description: 'A page of forks.' },
      { description: 'A fork and its cursor.' },
    ),
    messageCount: t.exposeInt('messageCount', { description: 'Number of messages, the inherited prefix included.' }),
    eventSequence: t.exposeInt('eventSequence', {
      description:
        "The sequence of the latest event of the session's log (0 before any): subscribe with afterSequence set to it to follow from here, missing nothing (what to do after EVENTS_EXPIRED).",
    }),
    messages: t.connection(
      {
        type: Message,
        description: `The messages in index order, a fork's inherited prefix included. Pages with first/after or last/before (default first ${DEFAULT_PAGE}, at most ${MAX_PAGE}). ${CONTENT_BOUNDS}`,
        resolve: async (session, args, ctx) => {
          const asked = indexPage(args, session.messageCount);
          const fromEnd = args.last !== null && args.last !== undefined;
          const rows = await ctx.loaders.messageRange.load({ session, lo: asked.lo, hi: asked.hi, fromEnd });
          const page = cutPage(asked, rows.length, fromEnd);
          return {
            // Each message as seen in this session: its transform flags are this session's.
            edges: rows.map((node) => ({ cursor: encodeIndexCursor(node.position), node: { ...node, viewSessionId: session.id } })),
            pageInfo: {
              hasPreviousPage: page.hasPreviousPage,
              hasNextPage: page.hasNextPage,
              ...positionCursors(rows, args),
            },
          };
        },
      },
      { description: 'A page of messages.' },
      { description: 'A message and its cursor.' },
    ),
    turns: t.relatedConnection(
      'turns',
      {
        description: 'Turns of this session, in number order.',
        cursor: 'id',
        query: () => ({ orderBy: { number: 'asc' } }),
        totalCount: true,
      },
      { description: 'A page of turns.' },
      { description: 'A turn and its cursor.' },
    ),
    activeTurn: t.relation('activeTurn', { nullable: true, description: 'The turn in progress, if any.' }),
  }),
});

/**
 * How the content bounds (domain/content-budget.ts) show in a message connection's description.
 * The figures are those of PostgreSQL; the embedded backend's answer budget follows its string cap.
 */
const CONTENT_BOUNDS = `A page carries at most ${PAGE_CONTENT_BYTES / 1024 / 1024} MiB of message content (UTF-8 text and parts as JSON) and always its first message (a longer message comes alone): a page cut short has fewer items than asked and hasNextPage true (hasPreviousPage with last/before), so page on from its end cursor (start cursor). All pages of messages in one operation share an answer budget (8 times the longest string argument: 8 MiB on PostgreSQL, 2 MiB on the embedded database, by default); once it is spent, the following pages come back empty with hasNextPage (hasPreviousPage) true: ask for them in another request.`;

/** The page a cut read answers: fewer rows than asked leave items after it (before it, read from its end). */
function cutPage(asked: ReturnType<typeof indexPage>, count: number, fromEnd: boolean) {
  const short = count < asked.hi - asked.lo;
  return {
    hasPreviousPage: asked.hasPreviousPage || (fromEnd && short),
    hasNextPage: asked.hasNextPage || (!fromEnd && short),
  };
}

builder.prismaObjectField(Session, 'ancestors', (t) =>
  t.field({
    type: [Session],
    description: 'Every ancestor, parent first, root last.',
    resolve: async (s, _, ctx) => {
      const rows = await Promise.all([...s.ancestorIds].reverse().map((id) => ctx.loaders.sessionById.load(id)));
      return rows.filter((r): r is SessionRow => r !== null);
    },
  }),
);

builder.prismaObjectField(Session, 'subSessions', (t) =>
  t.prismaConnection(
    {
      type: 'Session',
      cursor: 'id',
      description: 'Sub-agent sessions made in any turn of this session (direct ones; each has its own subSessions), oldest first.',
      totalCount: (s, _, ctx) => ctx.prisma.session.count({ where: { parentTurn: { sessionId: s.id }, workspaceId: ctx.workspaceId } }),
      resolve: (query, s, _, ctx) =>
        ctx.prisma.session.findMany({
          ...query,
          where: { parentTurn: { sessionId: s.id }, workspaceId: ctx.workspaceId },
          orderBy: { id: 'asc' },
        }),
    },
    { name: 'SessionSubSessionsConnection', description: 'A page of sub-agent sessions.' },
    { name: 'SessionSubSessionsConnectionEdge', description: 'A sub-agent session and its cursor.' },
  ),
);

/** `sessionId`: the session whose item it is (a fork's inherited messages are the fork's items). */
type TimelineItemShape = { index: number; depth: number; sessionId: string; message: MessageRow };

const TimelineItem = builder.objectRef<TimelineItemShape>('TimelineItem').implement({
  description: "One message of a session's timeline: the session's own, or one of a sub-agent session nested in its turns.",
  fields: (t) => ({
    index: t.exposeInt('index', { description: 'Position in the timeline (0-based); forkSession takes it as timelineIndex.' }),
    depth: t.exposeInt('depth', {
      description: "How many sub-session levels below the timeline's session the message was written: 0 for its own messages.",
    }),
    session: t.field({
      type: Session,
      description: "The session whose message it is (the timeline's session, or a sub-agent session).",
      resolve: async (item, _, ctx) => (await ctx.loaders.sessionById.load(item.sessionId))!,
    }),
    message: t.field({ type: Message, description: 'The message.', resolve: (item) => item.message }),
  }),
});

builder.prismaObjectField(Session, 'timeline', (t) =>
  t.connection(
    {
      type: TimelineItem,
      description: `Every message of this session and of the sub-agent sessions nested in its turns (recursively), flattened: each sub-session's messages come right after the parent messages that existed when it was made (sub-sessions made at the same point in creation order), each with its session. The session's own messages list stays without them. Pages with first/after or last/before (default first ${DEFAULT_PAGE}, at most ${MAX_PAGE}). ${CONTENT_BOUNDS}`,
      resolve: async (session, args, ctx) => {
        const timeline = await ctx.sessions.timeline(session.id);
        const page = indexPage(args, timeline.length);
        const fromEnd = args.last !== null && args.last !== undefined;
        const ranges = timeline.slice(page.lo, page.hi);
        const reads = await Promise.all(
          ranges.map(async (range) => {
            const owner = range.sessionId === session.id ? session : await ctx.loaders.sessionById.load(range.sessionId);
            // A sub-session deleted since the tree was read: its items are left out of this page.
            if (!owner) return { items: [], short: false };
            const rows = await ctx.loaders.messageRange.load({ session: owner, lo: range.lo, hi: range.hi, fromEnd });
            // Read through the session it belongs to: a fork's inherited messages carry the fork's transforms.
            const items = rows.map((message) => ({
              index: range.start + (message.position - range.lo),
              depth: range.depth,
              sessionId: range.sessionId,
              message: { ...message, viewSessionId: range.sessionId },
            }));
            return { items, short: rows.length < range.hi - range.lo };
          }),
        );
        const { items, short } = joinCutReads(reads, fromEnd, (item) => contentBytesOf(item.message));
        return {
          edges: items.map((node) => ({ cursor: encodeIndexCursor(node.index), node })),
          pageInfo: {
            hasPreviousPage: page.hasPreviousPage || (fromEnd && short),
            hasNextPage: page.hasNextPage || (!fromEnd && short),
            ...pageCursors(
              items.length ? encodeIndexCursor(items[0].index) : undefined,
              items.length ? encodeIndexCursor(items[items.length - 1].index) : undefined,
              args,
            ),
          },
          totalCount: timeline.length,
        };
      },
    },
    {
      name: 'SessionTimelineConnection',
      description: 'A page of timeline items.',
      fields: (c) => ({
        totalCount: c.int({
          description: 'Number of items in the whole timeline.',
          resolve: (connection) => (connection as unknown as { totalCount: number }).totalCount,
        }),
      }),
    },
    { name: 'SessionTimelineConnectionEdge', description: 'A timeline item and its cursor.' },
  ),
);

builder.queryFields((t) => ({
  session: t.prismaField({
    type: 'Session',
    nullable: true,
    description: 'A session of your workspace by ID; null when there is none.',
    args: { id: t.arg.id({ required: true, description: 'The session ID.' }) },
    resolve: (query, _, { id }, ctx) => {
      const sessionId = parseGlobalId(String(id), 'Session', 'id');
      // No relation to preload (the common read): the row in plain SQL, through the request's loader.
      if (Object.keys(query).length === 0) return ctx.loaders.sessionById.load(sessionId);
      return ctx.prisma.session.findFirst({ ...query, where: { id: sessionId, workspaceId: ctx.workspaceId } });
    },
  }),
  sessions: t.prismaConnection(
    {
      type: 'Session',
      cursor: 'id',
      description: 'Sessions of your workspace, newest first.',
      args: {
        rootsOnly: t.arg.boolean({ required: false, description: 'Only sessions that are not forks.' }),
        parentId: t.arg.id({ required: false, description: 'Only direct forks of this session.' }),
        kind: t.arg({ type: SessionKindEnum, required: false, description: 'Only sessions of this kind.' }),
        titleContains: t.arg.string({
          required: false,
          description: `Only sessions whose title contains this text, ignoring case (at most ${TITLE_FILTER_MAX} characters).`,
        }),
      },
      totalCount: (_, args, ctx) => ctx.prisma.session.count({ where: sessionsWhere(args, ctx.workspaceId) }),
      resolve: (query, _, args, ctx) =>
        ctx.prisma.session.findMany({ ...query, where: sessionsWhere(args, ctx.workspaceId), orderBy: { id: 'desc' } }),
    },
    { description: 'A page of sessions.' },
    { description: 'A session and its cursor.' },
  ),
}));

const TITLE_FILTER_MAX = 200;
// Prisma sends `contains` to ILIKE as it is: its wildcards and escape character are escaped here.

function sessionsWhere(
  args: {
    rootsOnly?: boolean | null;
    parentId?: string | number | null;
    kind?: 'ROOT' | 'FORK' | 'SUB_AGENT' | null;
    titleContains?: string | null;
  },
  workspaceId: string,
) {
  if ((args.titleContains?.length ?? 0) > TITLE_FILTER_MAX) throw badInput(`titleContains must be at most ${TITLE_FILTER_MAX} characters.`);
  return {
    workspaceId,
    ...(args.titleContains ? { title: { contains: args.titleContains.replace(/[\\%_]/g, '\\$&'), mode: 'insensitive' as const } } : {}),
    ...(args.kind ? { kind: args.kind } : {}),
    ...(args.rootsOnly ? { parentId: null } : {}),
    ...(args.parentId !== null && args.parentId !== undefined
      ? { parentId: parseGlobalId(String(args.parentId), 'Session', 'parentId') }
      : {}),
  };
}
