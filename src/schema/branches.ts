import type { Message as MessageRow, Session as SessionRow } from '../generated/prisma/client.js';
import type { PartInput } from '../domain/parts.js';
import { DEFAULT_PAGE, encodeIndexCursor, MAX_CONNECTION_PAGE, pageCursors } from '../domain/pagination.js';
import { PAGE_CONTENT_BYTES } from '../domain/limits.js';
import { alternativesPage } from '../services/alternatives.js';
import { builder } from './builder.js';
import { parseGlobalId } from './ids.js';
import { MessagePartInput } from './message.js';
import { Message, Session } from './refs.js';

builder.prismaObjectField(Message, 'alternatives', (t) =>
  t.connection(
    {
      type: Message,
      description: `The versions of this message a switcher ("‹ 2 / 3 ›") steps through: the messages at the same index, in the sessions of its fork tree, that follow exactly the same earlier messages (an edited question, a regenerated answer, and theirs in turn), this one included, each with its session. In creation order, the original first; a branch with no message at that index yet (a regenerate not yet answered) has none. Pages with first/after or last/before (default first ${DEFAULT_PAGE}, at most ${MAX_CONNECTION_PAGE}); a page carries at most ${PAGE_CONTENT_BYTES / 1024 / 1024} MiB of message content and always its first message, and shares the request's answer budget with the other message pages.`,
      resolve: async (message, args, ctx) => {
        const page = await alternativesPage(ctx.loaders, message.id, args);
        const cursors = page.rows.map((_, i) => encodeIndexCursor(page.start + i));
        return {
          edges: page.rows.map((node, i) => ({ cursor: cursors[i], node })),
          pageInfo: {
            hasPreviousPage: page.hasPreviousPage,
            hasNextPage: page.hasNextPage,
            ...pageCursors(cursors[0], cursors[cursors.length - 1], args),
          },
          totalCount: page.totalCount,
          currentIndex: page.currentIndex,
        };
      },
    },
    {
      name: 'MessageAlternativesConnection',
      description: 'A page of alternatives of a message.',
      fields: (c) => ({
        totalCount: c.int({
          description: 'Number of alternatives, this message included (the "3" of "2 / 3").',
          resolve: (connection) => (connection as unknown as { totalCount: number }).totalCount,
        }),
        currentIndex: c.int({
          description: 'Where this message stands among them, 0-based, whatever the page (the "2" of "2 / 3" is currentIndex + 1).',
          resolve: (connection) => (connection as unknown as { currentIndex: number }).currentIndex,
        }),
      }),
    },
    { name: 'MessageAlternativesConnectionEdge', description: 'An alternative and its cursor.' },
  ),
);

const VIEW_SESSION =
  'The session the message is seen through (default: the session that wrote it). A fork sees the messages before its cut: giving it makes the new branch its fork, with its settings and metadata. The branch holds the same messages either way.';

const RegenerateMessageInput = builder.inputType('RegenerateMessageInput', {
  description: 'The ASSISTANT message to answer again.',
  fields: (t) => ({
    messageId: t.id({ required: true, description: 'An ASSISTANT message, finished.' }),
    sessionId: t.id({ required: false, description: VIEW_SESSION }),
    title: t.string({ required: false, description: 'Title of the new branch. Default "<base> (fork N)", as forkSession names forks.' }),
  }),
});

type RegeneratePayloadShape = { session: SessionRow; excludedMessage: MessageRow };
const RegenerateMessagePayload = builder.objectRef<RegeneratePayloadShape>('RegenerateMessagePayload').implement({
  description: 'The branch made to hold a new answer.',
  fields: (t) => ({
    session: t.field({
      type: Session,
      description: 'A fork holding every message before the answer, so it ends on the question it answered: append the new answer there.',
      resolve: (p) => p.session,
    }),
    excludedMessage: t.field({
      type: Message,
      description: 'The answer left out; the new one becomes one of its alternatives.',
      resolve: (p) => p.excludedMessage,
    }),
  }),
});

builder.mutationField('regenerateMessage', (t) =>
  t.field({
    type: RegenerateMessagePayload,
    description:
      '"Try another answer": forks before an ASSISTANT message (forkSession\'s titles, locks and cost; nothing is copied). Refused for another role (REGENERATE_NOT_ASSISTANT_MESSAGE), for a message still generating (BAD_USER_INPUT), and where the cut would leave a tool call without its result (FORK_POINT_IN_TOOL_ROUND).',
    args: { input: t.arg({ type: RegenerateMessageInput, required: true }) },
    resolve: (_, { input }, ctx) =>
      ctx.sessions.regenerateMessage(ctx.workspaceId, {
        messageId: parseGlobalId(String(input.messageId), 'Message', 'messageId'),
        sessionId: input.sessionId ? parseGlobalId(String(input.sessionId), 'Session', 'sessionId') : null,
        title: input.title,
        labels: { message: String(input.messageId), session: input.sessionId ? String(input.sessionId) : undefined },
      }),
  }),
);

const EditMessageInput = builder.inputType('EditMessageInput', {
  description:
    'The USER message to change, and its new version: exactly one of `text` and `parts`, checked as appendMessages checks a message.',
  fields: (t) => ({
    messageId: t.id({ required: true, description: 'A USER message.' }),
    sessionId: t.id({ required: false, description: VIEW_SESSION }),
    text: t.string({ required: false, description: 'The new version as one text part.' }),
    parts: t.field({ type: [MessagePartInput], required: false, description: 'The new version as parts (attachments included).' }),
    title: t.string({ required: false, description: 'Title of the new branch. Default "<base> (fork N)", as forkSession names forks.' }),
  }),
});

type EditPayloadShape = { session: SessionRow; message: MessageRow; excludedMessage: MessageRow };
const EditMessagePayload = builder.objectRef<EditPayloadShape>('EditMessagePayload').implement({
  description: 'The branch holding the new version of the question.',
  fields: (t) => ({
    session: t.field({
      type: Session,
      description: 'A fork of every message before the old version, ending on the new one.',
      resolve: (p) => p.session,
    }),
    message: t.field({ type: Message, description: 'The new version, the last message of the fork.', resolve: (p) => p.message }),
    excludedMessage: t.field({ type: Message, description: 'The old version, left out of the fork.', resolve: (p) => p.excludedMessage }),
  }),
});

builder.mutationField('editMessage', (t) =>
  t.field({
    type: EditMessagePayload,
    description:
      '"Change my question": forks before a USER message and appends the new version there, in one transaction (both or neither). Keeps forkSession\'s rules (a USER message: FORK_POINT_NOT_USER_MESSAGE), titles and cost; events as a fork and an append make them (SessionForked on the parent, MessageAdded on the fork).',
    args: { input: t.arg({ type: EditMessageInput, required: true }) },
    resolve: (_, { input }, ctx) =>
      ctx.sessions.editMessage(
        ctx.workspaceId,
        {
          messageId: parseGlobalId(String(input.messageId), 'Message', 'messageId'),
          sessionId: input.sessionId ? parseGlobalId(String(input.sessionId), 'Session', 'sessionId') : null,
          title: input.title,
          labels: { message: String(input.messageId), session: input.sessionId ? String(input.sessionId) : undefined },
        },
        { text: input.text, parts: input.parts as PartInput[] | null | undefined },
      ),
  }),
);
