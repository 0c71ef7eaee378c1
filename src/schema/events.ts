import type { EventsRequestContext } from '../graphql/context.js';
import { notFound } from '../graphql/errors.js';
import type { SessionEventMessage } from '../pubsub/bus.js';
import { filterEvents } from '../services/event-filter.js';
import { SESSION_DELETED } from '../services/event-stream.js';
import { carriedMessage } from '../services/reads.js';
import { builder } from './builder.js';
import { parseGlobalId, toGlobalId } from './ids.js';
import { Message, Session } from './refs.js';
import { Turn } from './turn.js';

export const SessionEvent = builder.interfaceRef<SessionEventMessage>('SessionEvent').implement({
  description: "An entry of a session's event log.",
  fields: (t) => ({
    sequence: t.exposeInt('sequence', { description: "Position in the session's log: 1, 2, 3 … without gaps." }),
    at: t.field({ type: 'DateTime', description: 'When it happened.', resolve: (e) => e.createdAt }),
    session: t.field({
      type: Session,
      nullable: true,
      description: 'The session (null once deleted).',
      resolve: (e, _, ctx) => ctx.reads.eventSession(e, 'session', e.sessionId, ctx.workspaceId, ctx.loaders),
    }),
  }),
});

export const payloadOf = (e: SessionEventMessage) => (e.payload ?? {}) as Record<string, unknown>;

type EventFieldBuilder = PothosSchemaTypes.ObjectFieldBuilder<
  typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never,
  SessionEventMessage
>;

/** An event type of the log, told apart by the stored `type`. */
export function eventType(name: string, type: string, description: string, fields: (t: EventFieldBuilder) => Record<string, unknown>) {
  return builder.objectRef<SessionEventMessage>(name).implement({
    description,
    interfaces: [SessionEvent],
    isTypeOf: (e) => (e as SessionEventMessage).type === type,
    fields: fields as never,
  });
}

const messageField = (t: EventFieldBuilder, description: string) =>
  t.field({
    type: Message,
    nullable: true,
    description,
    resolve: (e, _, ctx) => (e.messageId ? (carriedMessage(e) ?? ctx.reads.eventMessage(e)) : null),
  });

/** A session an event's payload names by `key` (`what` keys it in the event memo); null once deleted. */
const sessionField = (t: EventFieldBuilder, what: string, key: string, description: string) =>
  t.field({
    type: Session,
    nullable: true,
    description,
    resolve: (e, _, ctx) => ctx.reads.eventSession(e, what, payloadOf(e)[key] as string, ctx.workspaceId, ctx.loaders),
  });

eventType('MessageAdded', 'MESSAGE_ADDED', 'A message was appended.', (t) => ({
  message: messageField(t, 'The message as it is now (null once deleted).'),
  index: t.int({ description: 'Its index.', resolve: (e) => payloadOf(e).index as number }),
}));

eventType('MessageUpdated', 'MESSAGE_UPDATED', 'A generating message changed or was finished.', (t) => ({
  message: messageField(t, 'The message as it is now (null once deleted).'),
  appendText: t.string({
    nullable: true,
    description: 'The text this update appended, for streaming clients.',
    resolve: (e) => (payloadOf(e).appendText as string | undefined) ?? null,
  }),
  finished: t.boolean({
    description: 'True when this update finished the message.',
    resolve: (e) => payloadOf(e).generating === false,
  }),
}));

eventType('SessionForked', 'SESSION_FORKED', 'A fork of this session was made.', (t) => ({
  fork: sessionField(t, 'fork', 'forkId', 'The new fork (null once deleted).'),
  messageIndex: t.int({ description: 'Where it was cut.', resolve: (e) => payloadOf(e).messageIndex as number }),
  excludedMessage: messageField(t, 'The USER message left out of the fork.'),
}));

eventType('SessionUpdated', 'SESSION_UPDATED', "The session's title, settings or metadata changed.", (t) => ({
  fields: t.stringList({
    description: 'Which of title, settings, metadata changed.',
    resolve: (e) => (payloadOf(e).fields as string[]) ?? [],
  }),
}));

eventType('SessionCompacted', 'SESSION_COMPACTED', "A summary now replaces the session's first messages in assembled contexts.", (t) => ({
  uptoIndex: t.int({ description: 'Messages [0, uptoIndex) are summarized.', resolve: (e) => payloadOf(e).uptoIndex as number }),
}));

eventType(
  'SessionDeleted',
  SESSION_DELETED,
  'The session was deleted: the last event of its stream, which then completes. Never replayed (the log went with the session).',
  (t) => ({
    deletedSessionId: t.id({ description: 'The ID of the deleted session.', resolve: (e) => toGlobalId('Session', e.sessionId) }),
  }),
);

eventType(
  'SubSessionCreated',
  'SUB_SESSION_CREATED',
  "A sub-agent session was made in one of this session's turns (createSession with parentTurnId). Its events follow as SubSessionEvent.",
  (t) => ({
    subSessionId: t.id({
      description: 'The ID of the new sub-agent session.',
      resolve: (e) => toGlobalId('Session', payloadOf(e).subSessionId as string),
    }),
    subSession: sessionField(t, 'sub', 'subSessionId', 'The new sub-agent session (null once deleted).'),
    agentId: t.string({ description: 'The agent that runs it.', resolve: (e) => payloadOf(e).agentId as string }),
    turn: t.field({
      type: Turn,
      nullable: true,
      description: 'The turn of this session it runs in.',
      resolve: (e, _, ctx) => (e.turnId ? ctx.reads.turnInWorkspace(e.turnId, ctx.workspaceId) : null),
    }),
  }),
);

eventType(
  'SubSessionEvent',
  'SUB_SESSION_EVENT',
  "An event of a sub-agent session nested in one of this session's turns (at any depth), copied into this session's log in the same transaction: one subscription follows the whole agent tree, with replay. The wrapper has this session's sequence; the inner event keeps the sub-session's.",
  (t) => ({
    subSessionId: t.id({
      description: 'The ID of the sub-agent session the event happened in (it stays readable after the sub-session is deleted).',
      resolve: (e) => toGlobalId('Session', payloadOf(e).subSessionId as string),
    }),
    subSession: sessionField(t, 'sub', 'subSessionId', 'The sub-agent session the event happened in (null once deleted).'),
    turn: t.field({
      type: Turn,
      nullable: true,
      description: 'The turn of this session the sub-agent session (or the sub-session above it) runs in.',
      resolve: (e, _, ctx) => (e.turnId ? ctx.reads.turnInWorkspace(e.turnId, ctx.workspaceId) : null),
    }),
    event: t.field({
      type: SessionEvent,
      description: "The event as the sub-agent session's own stream has it (its sequence is the sub-session's).",
      resolve: (e) => payloadOf(e).event as SessionEventMessage,
    }),
  }),
);

/**
 * Checks that the session is in the caller's workspace (NOT_FOUND otherwise, whether it exists
 * elsewhere or not at all) and returns its event stream, which ends after SessionDeleted.
 */
export async function workspaceSessionStream(
  ctx: EventsRequestContext,
  rawSessionId: string | number,
  afterSequence: number | null | undefined,
) {
  const sessionId = parseGlobalId(String(rawSessionId), 'Session', 'sessionId');
  // A share token follows its one session: any other is not found (schema/share-scope.ts).
  if (ctx.share && ctx.share.sessionId !== sessionId) throw notFound('Session', String(rawSessionId));
  // Each event runs with a fresh request context (src/live/sharing.ts), so no per-event reset here.
  const stream = await ctx.reads.sessionStream(ctx.workspaceId, sessionId, afterSequence ?? null, String(rawSessionId));
  if (!stream) throw notFound('Session', String(rawSessionId));
  if (!ctx.share) return stream;
  // Opened before a revocation or an expiry, a share token's stream delivers nothing after it.
  const watch = ctx.shareLinks.watch(ctx.share);
  return filterEvents(
    stream,
    () => watch.holds(),
    () => watch.stop(),
  );
}

builder.subscriptionField('sessionEvents', (t) =>
  t.field({
    type: SessionEvent,
    description:
      'Everything that happens to a session. With afterSequence, every stored event after it is replayed first, then live ones follow: reconnect with the last sequence you saw and you miss nothing and see nothing twice.',
    args: {
      sessionId: t.arg.id({ required: true, description: 'The session.' }),
      afterSequence: t.arg.int({
        required: false,
        description:
          'Replay stored events with a greater sequence first (0 for all). Older than the oldest event kept (EVENT_RETENTION_MS): EVENTS_EXPIRED at once.',
      }),
    },
    subscribe: (_, args, ctx) => workspaceSessionStream(ctx, args.sessionId, args.afterSequence),
    resolve: (event) => event,
  }),
);
