import type { Message as MessageRow, Session as SessionRow } from '../generated/prisma/client.js';
import { resolveArrayConnection } from '@pothos/plugin-relay';
import { builder } from './builder.js';
import { parseGlobalId } from './ids.js';
import { Message, Session } from './refs.js';

builder.prismaObjectField(Message, 'forks', (t) =>
  t.connection(
    {
      type: Session,
      description: 'Sessions forked at this message: it was left out of them ("branches from here"). Oldest first.',
      resolve: async (message, args, ctx) => {
        const forks = await ctx.loaders.forksByMessage.load(message.id);
        return { ...resolveArrayConnection({ args }, forks), totalCount: forks.length };
      },
    },
    {
      name: 'MessageForksConnection',
      description: 'A page of forks.',
      fields: (c) => ({
        totalCount: c.int({
          description: 'Number of forks cut at this message.',
          resolve: (connection) => (connection as unknown as { totalCount: number }).totalCount,
        }),
      }),
    },
    { name: 'MessageForksConnectionEdge', description: 'A fork and its cursor.' },
  ),
);

const ForkSessionInput = builder.inputType('ForkSessionInput', {
  description: 'Where to fork. Give exactly one of messageIndex, messageId and timelineIndex; the message there must be a USER message.',
  fields: (t) => ({
    sessionId: t.id({ required: true, description: 'The session to fork.' }),
    messageIndex: t.int({
      required: false,
      description: 'The fork holds messages [0, messageIndex) and leaves this one out (returned as excludedMessage).',
    }),
    messageId: t.id({ required: false, description: 'The same, by message ID.' }),
    timelineIndex: t.int({
      required: false,
      description:
        "The same, by position in the session's timeline: a position of one of its own messages forks as its messageIndex would; a position inside a sub-agent session is refused (FORK_POINT_IN_SUB_SESSION: fork that sub-session instead).",
    }),
    title: t.string({
      required: false,
      description: 'Title of the fork. Default "<base> (fork N)" with N unique in the session\'s tree.',
    }),
  }),
});

type ForkSessionPayloadShape = { session: SessionRow; excludedMessage: MessageRow };
const ForkSessionPayload = builder.objectRef<ForkSessionPayloadShape>('ForkSessionPayload').implement({
  description: 'The new fork and the message left out at the cut.',
  fields: (t) => ({
    session: t.field({ type: Session, description: 'The fork.', resolve: (p) => p.session }),
    excludedMessage: t.field({
      type: Message,
      description: 'The USER message at the cut, not part of the fork: put it in the input box to edit and resend.',
      resolve: (p) => p.excludedMessage,
    }),
  }),
});

builder.mutationField('forkSession', (t) =>
  t.field({
    type: ForkSessionPayload,
    description:
      "Forks a session before one of its USER messages. Nothing is copied: the fork shares the parent's earlier messages, and from then on each side changes independently.",
    args: { input: t.arg({ type: ForkSessionInput, required: true }) },
    resolve: (_, { input }, ctx) =>
      ctx.sessions.forkSession(
        ctx.workspaceId,
        {
          sessionId: parseGlobalId(String(input.sessionId), 'Session', 'sessionId'),
          messageIndex: input.messageIndex,
          messageId: input.messageId ? parseGlobalId(String(input.messageId), 'Message', 'messageId') : null,
          timelineIndex: input.timelineIndex,
          title: input.title,
        },
        String(input.sessionId),
      ),
  }),
);
