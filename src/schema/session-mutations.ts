import type { Message as MessageRow, Session as SessionRow } from '../generated/prisma/client.js';
import type { MessageInputData } from '../domain/parts.js';
import { LIMITS } from '../domain/limits.js';
import { builder } from './builder.js';
import { parseGlobalId, toGlobalId } from './ids.js';
import { MessageInput } from './message.js';
import { Message, Session } from './refs.js';

const CreateSessionInput = builder.inputType('CreateSessionInput', {
  description: 'A new root session, or with parentTurnId a sub-agent session.',
  fields: (t) => ({
    title: t.string({ required: false, description: 'Title (default "Untitled session").' }),
    settings: t.field({ type: 'JSON', required: false, description: 'Model and connector settings, a JSON object (default {}).' }),
    metadata: t.field({ type: 'JSON', required: false, description: 'Client metadata, a JSON object (default {}).' }),
    messages: t.field({ type: [MessageInput], required: false, description: 'Messages to start with.' }),
    parentTurnId: t.id({
      required: false,
      description:
        "Make a sub-agent session nested in this turn (an ACTIVE turn of a session of your workspace; TURN_NOT_ACTIVE otherwise). Its usage rolls up into the turn, its events appear on the turn's session stream, its messages in that session's timeline.",
    }),
    agentId: t.string({
      required: false,
      description: 'The agent that runs the sub-agent session: required with parentTurnId, refused without.',
    }),
  }),
});

builder.mutationField('createSession', (t) =>
  t.field({
    type: Session,
    description:
      'Creates a root session, optionally with its first messages; with parentTurnId and agentId, a sub-agent session nested in that turn (kind SUB_AGENT).',
    args: { input: t.arg({ type: CreateSessionInput, required: true }) },
    resolve: (_, { input }, ctx) =>
      ctx.sessions.createSession(
        ctx.workspaceId,
        {
          ...input,
          messages: input.messages as MessageInputData[] | null,
          parentTurnId: input.parentTurnId ? parseGlobalId(String(input.parentTurnId), 'Turn', 'parentTurnId') : null,
        },
        input.parentTurnId ? String(input.parentTurnId) : undefined,
      ),
  }),
);

const AppendMessagesInput = builder.inputType('AppendMessagesInput', {
  description: 'Messages to append to the end of a session.',
  fields: (t) => ({
    sessionId: t.id({ required: true, description: 'The session.' }),
    messages: t.field({ type: [MessageInput], required: true, description: `The messages, in order (1 to ${LIMITS.messagesPerCall}).` }),
    turnId: t.id({ required: false, description: 'The turn they belong to (a turn of this session).' }),
    agentId: t.string({ required: false, description: 'The agent writing them, for messages that do not name one.' }),
  }),
});

type AppendMessagesPayloadShape = { session: SessionRow; messages: MessageRow[] };
export const AppendMessagesPayload = builder.objectRef<AppendMessagesPayloadShape>('AppendMessagesPayload').implement({
  description: 'The session after the append and the messages added.',
  fields: (t) => ({
    session: t.field({ type: Session, description: 'The session.', resolve: (p) => p.session }),
    messages: t.field({ type: [Message], description: 'The appended messages, in order.', resolve: (p) => p.messages }),
  }),
});

builder.mutationField('appendMessages', (t) =>
  t.field({
    type: AppendMessagesPayload,
    description: 'Appends messages at the end of a session, atomically: all of them or none.',
    args: { input: t.arg({ type: AppendMessagesInput, required: true }) },
    resolve: async (_, { input }, ctx) => {
      const sessionId = parseGlobalId(String(input.sessionId), 'Session', 'sessionId');
      const turnId = input.turnId ? parseGlobalId(String(input.turnId), 'Turn', 'turnId') : null;
      return ctx.sessions.appendMessages(
        ctx.workspaceId,
        sessionId,
        input.messages as MessageInputData[],
        { turnId, agentId: input.agentId ?? null, turnLabel: input.turnId ? String(input.turnId) : undefined },
        String(input.sessionId),
      );
    },
  }),
);

const UpdateSessionInput = builder.inputType('UpdateSessionInput', {
  description: 'Changes to a session; fields left out stay as they are. settings and metadata are replaced whole.',
  fields: (t) => ({
    sessionId: t.id({ required: true, description: 'The session.' }),
    title: t.string({ required: false, description: 'New title.' }),
    settings: t.field({ type: 'JSON', required: false, description: 'New settings (a JSON object).' }),
    metadata: t.field({ type: 'JSON', required: false, description: 'New metadata (a JSON object).' }),
  }),
});

builder.mutationField('updateSession', (t) =>
  t.field({
    type: Session,
    description: "Changes a session's title, settings or metadata. Its forks keep theirs.",
    args: { input: t.arg({ type: UpdateSessionInput, required: true }) },
    resolve: (_, { input }, ctx) =>
      ctx.sessions.updateSession(
        ctx.workspaceId,
        parseGlobalId(String(input.sessionId), 'Session', 'sessionId'),
        input,
        String(input.sessionId),
      ),
  }),
);

const DeleteSessionInput = builder.inputType('DeleteSessionInput', {
  description: 'A session to delete.',
  fields: (t) => ({
    sessionId: t.id({ required: true, description: 'The session.' }),
    cascade: t.boolean({
      required: false,
      description:
        'Also delete every fork below it. Without it (default false), a session with forks is refused (SESSION_HAS_FORKS). Sub-agent sessions nested in its turns (and their forks) are always deleted with it.',
    }),
  }),
});

type DeleteSessionPayloadShape = { deletedSessionIds: string[] };
const DeleteSessionPayload = builder.objectRef<DeleteSessionPayloadShape>('DeleteSessionPayload').implement({
  description: 'What was deleted.',
  fields: (t) => ({
    deletedSessionIds: t.idList({ description: 'IDs of every deleted session, deepest forks first.', resolve: (p) => p.deletedSessionIds }),
  }),
});

builder.mutationField('deleteSession', (t) =>
  t.field({
    type: DeleteSessionPayload,
    description:
      'Deletes a session with its messages, turns, events and the sub-agent sessions nested in its turns; with cascade, its forks too.',
    args: { input: t.arg({ type: DeleteSessionInput, required: true }) },
    resolve: async (_, { input }, ctx) => {
      const ids = await ctx.sessions.deleteSession(
        ctx.workspaceId,
        parseGlobalId(String(input.sessionId), 'Session', 'sessionId'),
        input.cascade ?? false,
        String(input.sessionId),
      );
      return { deletedSessionIds: ids.map((id) => toGlobalId('Session', id)) };
    },
  }),
);

const CompactSessionInput = builder.inputType('CompactSessionInput', {
  description: 'A summary that replaces the first messages of a session in assembled contexts.',
  fields: (t) => ({
    sessionId: t.id({ required: true, description: 'The session.' }),
    uptoIndex: t.int({ required: true, description: 'Messages [0, uptoIndex) are replaced (1 to messageCount).' }),
    summary: t.string({ required: true, description: 'The summary text.' }),
    extractedContext: t.field({
      type: 'JSON',
      required: false,
      description:
        'Structured context extracted beside the summary (a JSON object, bounded like every JSON argument): stored with the compaction (Session.compaction), inherited by forks with it, and assembled after the summary text as one compact JSON section, escaped like the turn context and counted.',
    }),
  }),
});

builder.mutationField('compactSession', (t) =>
  t.field({
    type: Session,
    description:
      'Records a compaction: from now on assembleContext replaces messages [0, uptoIndex) by the summary (and its extractedContext). Messages are kept. Forks made later inherit it when it ends at or before their cut; forks made earlier never see it.',
    args: { input: t.arg({ type: CompactSessionInput, required: true }) },
    resolve: (_, { input }, ctx) =>
      ctx.sessions.compactSession(
        ctx.workspaceId,
        {
          sessionId: parseGlobalId(String(input.sessionId), 'Session', 'sessionId'),
          uptoIndex: input.uptoIndex,
          summary: input.summary,
          extractedContext: input.extractedContext,
        },
        String(input.sessionId),
      ),
  }),
);
