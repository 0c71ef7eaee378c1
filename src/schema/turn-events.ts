import { payloadOf, SessionEvent, workspaceSessionStream } from './events.js';
import type { SessionEventMessage } from '../pubsub/bus.js';
import { filterEvents } from '../services/event-filter.js';
import { builder } from './builder.js';
import { Turn, TurnStatusEnum, Usage, type UsageShape } from './turn.js';

const TurnEvent = builder.interfaceRef<SessionEventMessage>('TurnEvent').implement({
  description: "A change of a turn. Turn events are entries of the session's event log: they appear in sessionEvents too.",
  fields: (t) => ({
    sequence: t.exposeInt('sequence', { description: "Position in the session's log (turnEvents shows a subsequence of it)." }),
    at: t.field({ type: 'DateTime', description: 'When it happened.', resolve: (e) => e.createdAt }),
    turn: t.field({
      type: Turn,
      nullable: true,
      description: 'The turn as it is now (null once its session is deleted).',
      resolve: (e, _, ctx) => (e.turnId ? ctx.reads.turnInWorkspace(e.turnId, ctx.workspaceId) : null),
    }),
  }),
});

type FieldBuilder = PothosSchemaTypes.ObjectFieldBuilder<
  typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never,
  SessionEventMessage
>;

function turnEventType(name: string, type: string, description: string, fields: (t: FieldBuilder) => Record<string, unknown>) {
  return builder.objectRef<SessionEventMessage>(name).implement({
    description,
    interfaces: [SessionEvent, TurnEvent],
    isTypeOf: (e) => (e as SessionEventMessage).type === type,
    fields: fields as never,
  });
}

const usageIn = (e: SessionEventMessage, key: string) => payloadOf(e)[key] as UsageShape;
const stringIn = (e: SessionEventMessage, key: string) => (payloadOf(e)[key] as string | null | undefined) ?? null;

turnEventType('TurnStarted', 'TURN_STARTED', 'A turn started.', (t) => ({
  number: t.int({ description: 'Its number in the session.', resolve: (e) => payloadOf(e).number as number }),
  agentIds: t.stringList({ description: 'Its agents.', resolve: (e) => payloadOf(e).agentIds as string[] }),
}));

turnEventType('TurnUsageUpdated', 'TURN_USAGE_UPDATED', "Usage was reported: the report and the turn's total after it.", (t) => ({
  agentId: t.string({ description: 'The agent that reported.', resolve: (e) => stringIn(e, 'agentId')! }),
  model: t.string({ nullable: true, description: 'The model, when reported.', resolve: (e) => stringIn(e, 'model') }),
  callId: t.string({ nullable: true, description: 'The call id, when reported.', resolve: (e) => stringIn(e, 'callId') }),
  delta: t.field({ type: Usage, description: 'What this report added.', resolve: (e) => usageIn(e, 'delta') }),
  total: t.field({
    type: Usage,
    description: "The turn's own usage after it (Turn.ownUsage: what its sub-agent sessions spent is not in it).",
    resolve: (e) => usageIn(e, 'total'),
  }),
  agentTotal: t.field({ type: Usage, description: "The agent's usage after it.", resolve: (e) => usageIn(e, 'agentTotal') }),
}));

turnEventType('TurnAgentCompleted', 'TURN_AGENT_COMPLETED', 'One agent completed its work on the turn.', (t) => ({
  agentId: t.string({ description: 'The agent.', resolve: (e) => stringIn(e, 'agentId')! }),
  success: t.boolean({ description: 'False when it failed.', resolve: (e) => payloadOf(e).success === true }),
  error: t.string({ nullable: true, description: 'Why it failed.', resolve: (e) => stringIn(e, 'error') }),
}));

turnEventType('TurnCompleted', 'TURN_COMPLETED', 'Every agent completed successfully: the turn is COMPLETED.', (t) => ({
  status: t.field({ type: TurnStatusEnum, description: 'COMPLETED.', resolve: () => 'COMPLETED' as const }),
  usage: t.field({
    type: Usage,
    description: "The turn's own usage when it completed (its costSource is read from the turn's reports when asked).",
    resolve: (e) => ({ ...usageIn(e, 'usage'), ...(e.turnId ? { costOf: { turnId: e.turnId } } : {}) }),
  }),
}));

const TurnFailureReason = builder.enumType('TurnFailureReason', {
  description: 'Why a turn failed.',
  values: {
    AGENT_FAILED: { description: 'An agent completed with success false.' },
    TIMEOUT: { description: 'No usage report, message or heartbeat for TURN_TIMEOUT_MS: the server failed it.' },
  } as const,
});

turnEventType('TurnFailed', 'TURN_FAILED', 'The turn is FAILED: an agent failed, or it was stale.', (t) => ({
  cause: t.field({ type: TurnFailureReason, description: 'Why.', resolve: (e) => stringIn(e, 'reason') as 'AGENT_FAILED' | 'TIMEOUT' }),
  error: t.string({ nullable: true, description: "The turn's error.", resolve: (e) => stringIn(e, 'error') }),
}));

turnEventType('TurnCancelled', 'TURN_CANCELLED', 'The turn was cancelled.', (t) => ({
  reason: t.string({ nullable: true, description: 'The reason given.', resolve: (e) => stringIn(e, 'reason') }),
}));

builder.subscriptionField('turnEvents', (t) =>
  t.field({
    type: TurnEvent,
    description:
      "The turn events of a session: its sessionEvents stream filtered to its own turns, with the same sequence numbers and the same replay after afterSequence. Sub-agent sessions' turn events come on sessionEvents, wrapped as SubSessionEvent. Ends when the session is deleted.",
    args: {
      sessionId: t.arg.id({ required: true, description: 'The session.' }),
      afterSequence: t.arg.int({
        required: false,
        description:
          'Replay stored turn events with a greater sequence first (0 for all). Older than the oldest event kept (EVENT_RETENTION_MS): EVENTS_EXPIRED at once.',
      }),
    },
    subscribe: async (_, args, ctx) => {
      // The stream itself ends after SessionDeleted; filterEvents keeps its immediate release.
      const events = await workspaceSessionStream(ctx, args.sessionId, args.afterSequence);
      return filterEvents(events, (event) => event.type.startsWith('TURN_'));
    },
    resolve: (event) => event,
  }),
);
