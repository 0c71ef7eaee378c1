import { builder } from './builder.js';

/** Token and cost totals; counts are whole numbers. */
export interface UsageShape {
  inputTokens: bigint | number;
  outputTokens: bigint | number;
  cacheReadTokens: bigint | number;
  cacheWriteTokens: bigint | number;
  cost: number;
}

export const Usage = builder.objectRef<UsageShape>('Usage').implement({
  description: 'Token usage and cost.',
  fields: (t) => ({
    inputTokens: t.int({ description: 'Prompt tokens.', resolve: (u) => Number(u.inputTokens) }),
    outputTokens: t.int({ description: 'Completion tokens.', resolve: (u) => Number(u.outputTokens) }),
    cacheReadTokens: t.int({ description: 'Prompt tokens read from the provider cache.', resolve: (u) => Number(u.cacheReadTokens) }),
    cacheWriteTokens: t.int({ description: 'Prompt tokens written to the provider cache.', resolve: (u) => Number(u.cacheWriteTokens) }),
    totalTokens: t.int({
      description: 'inputTokens + outputTokens + cacheReadTokens + cacheWriteTokens.',
      resolve: (u) => Number(u.inputTokens) + Number(u.outputTokens) + Number(u.cacheReadTokens) + Number(u.cacheWriteTokens),
    }),
    cost: t.float({ description: 'Cost as reported, in the reporter\'s currency unit.', resolve: (u) => u.cost }),
  }),
});

export const ZERO_USAGE: UsageShape = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, cost: 0 };

export const TurnStatusEnum = builder.enumType('TurnStatus', {
  description: 'Where a turn is in its life.',
  values: {
    ACTIVE: { description: 'Started; agents are working.' },
    COMPLETED: { description: 'Every agent completed successfully.' },
    FAILED: { description: 'Every agent completed and at least one failed.' },
    CANCELLED: { description: 'Cancelled before it completed.' },
  } as const,
});

const InitiatorKindEnum = builder.enumType('InitiatorKind', {
  description: 'What started a turn.',
  values: { USER: { description: 'A person.' }, EXTENSION: { description: 'An extension or plugin.' }, SYSTEM: { description: 'The system itself.' } } as const,
});

const Initiator = builder.objectRef<{ kind: 'USER' | 'EXTENSION' | 'SYSTEM'; id: string | null }>('TurnInitiator').implement({
  description: 'What started a turn.',
  fields: (t) => ({
    kind: t.field({ type: InitiatorKindEnum, description: 'The kind of initiator.', resolve: (i) => i.kind }),
    id: t.exposeString('id', { nullable: true, description: 'Its id, when it has one.' }),
  }),
});

const TurnAgentStatusEnum = builder.enumType('TurnAgentStatus', {
  description: "Where one agent's work on a turn stands.",
  values: { ACTIVE: {}, COMPLETED: {}, FAILED: {}, CANCELLED: {} } as const,
});

builder.prismaObject('TurnAgent', {
  description: 'One agent taking part in a turn.',
  fields: (t) => ({
    agentId: t.exposeString('agentId', { description: 'The agent.' }),
    status: t.field({ type: TurnAgentStatusEnum, description: 'Its status.', resolve: (a) => a.status }),
    usage: t.field({ type: Usage, description: 'Usage reported for this agent.', resolve: (a) => a }),
    error: t.exposeString('error', { nullable: true, description: 'Why it failed, when it did.' }),
  }),
});

export const Turn = builder.prismaNode('Turn', {
  description: 'One round of work on a session: started, worked on by one or more agents, then completed, failed or cancelled.',
  id: { field: 'id' },
  nullable: true,
  findUnique: (id, ctx) => ({ id, session: { workspaceId: ctx.workspaceId } }),
  fields: (t) => ({
    number: t.exposeInt('number', { description: '1, 2, 3 … per session.' }),
    session: t.relation('session', { description: 'The session.' }),
    status: t.field({ type: TurnStatusEnum, description: 'Its status.', resolve: (turn) => turn.status }),
    initiator: t.field({
      type: Initiator,
      description: 'What started it.',
      resolve: (turn) => ({ kind: turn.initiatorKind, id: turn.initiatorId }),
    }),
    agents: t.relation('agents', { description: 'The agents taking part.', query: { orderBy: { agentId: 'asc' } } }),
    usage: t.field({ type: Usage, description: 'Usage summed over its agents.', resolve: (turn) => turn }),
    startedAt: t.expose('startedAt', { type: 'DateTime', description: 'When it started.' }),
    completedAt: t.expose('completedAt', { type: 'DateTime', nullable: true, description: 'When it ended, if it has.' }),
    error: t.exposeString('error', { nullable: true, description: 'Why it failed or was cancelled.' }),
  }),
});

