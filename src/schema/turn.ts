import type { ModelUsageShape } from '../services/usage-loaders.js';
import { weakestCostSource, type CostSource } from '../domain/turns.js';
import type { AssembledContext as AssembledContextShape } from '../domain/assembly/index.js';
import { AssembledContext } from './assembly.js';
import { DEFAULT_PAGE, encodeIndexCursor, MAX_CONNECTION_PAGE, positionCursors } from '../domain/pagination.js';
import { PAGE_CONTENT_BYTES } from '../domain/limits.js';
import { builder } from './builder.js';
import { Message } from './refs.js';
import { parseGlobalId } from './ids.js';

/** Token and cost totals; counts are whole numbers. */
export interface UsageShape {
  inputTokens: bigint | number;
  outputTokens: bigint | number;
  cacheReadTokens: bigint | number;
  cacheWriteTokens: bigint | number;
  cost: number;
  /** The weakest source of the cost of the reports summed; null for none (REPORTED), absent when `costOf` says where to read it. */
  costSource?: CostSource | null;
  /** The turn (and agent) whose reports give costSource, read when asked. */
  costOf?: { turnId: string; agentId?: string };
}

export const CostSourceEnum = builder.enumType('CostSource', {
  description:
    'Where a cost comes from, strongest first. A sum (a turn, an agent, a session, a tree, a model) says the weakest source among the reports it sums: UNKNOWN when any report had no cost and no model the catalog knows, else CATALOG when any was priced from the catalog, else REPORTED (also for a sum of no report, whose 0 is exact).',
  values: {
    REPORTED: { description: 'Sent by the reporter (reportUsage with cost), in its own currency unit.' },
    CATALOG: {
      description:
        'Priced from the model catalog (reportUsage with a model and no cost; docs/models.md), in USD at the time of the report: input, output, cache read and cache write each at its rate.',
    },
    UNKNOWN: { description: 'Not known: reportUsage had no cost and no model the catalog knows, so it counts 0.' },
  } as const,
});

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
    cost: t.float({
      description:
        "Cost of the calls: as reported (in the reporter's currency unit), or priced from the model catalog in USD; costSource says which.",
      resolve: (u) => u.cost,
    }),
    costSource: t.field({
      type: CostSourceEnum,
      description: 'Where cost comes from: the weakest source among the reports summed (see CostSource).',
      resolve: async (u, _, ctx) => {
        if (u.costSource !== undefined || !u.costOf) return u.costSource ?? 'REPORTED';
        const agents = await ctx.loaders.usage.costSources.load(u.costOf.turnId);
        const { agentId } = u.costOf;
        return agentId === undefined ? weakestCostSource(agents.values()) : (agents.get(agentId) ?? 'REPORTED');
      },
    }),
  }),
});

export const TurnStatusEnum = builder.enumType('TurnStatus', {
  description: 'Where a turn is in its life.',
  values: {
    ACTIVE: { description: 'Started; agents are working.' },
    COMPLETED: { description: 'Every agent completed successfully.' },
    FAILED: { description: 'Every agent completed and at least one failed.' },
    CANCELLED: { description: 'Cancelled before it completed.' },
  } as const,
});

export const InitiatorKindEnum = builder.enumType('InitiatorKind', {
  description: 'What started a turn.',
  values: {
    USER: { description: 'A person.' },
    EXTENSION: { description: 'An extension or plugin.' },
    SYSTEM: { description: 'The system itself.' },
  } as const,
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
  values: {
    ACTIVE: { description: 'Still working.' },
    COMPLETED: { description: 'Completed successfully.' },
    FAILED: { description: 'Completed with a failure (see error), or failed with its stale turn.' },
    CANCELLED: { description: 'The turn was cancelled, or ended by the failure of another agent, before this agent completed.' },
  } as const,
});

builder.prismaObject('TurnAgent', {
  description: 'One agent taking part in a turn.',
  fields: (t) => ({
    agentId: t.exposeString('agentId', { description: 'The agent.' }),
    status: t.field({ type: TurnAgentStatusEnum, description: 'Its status.', resolve: (a) => a.status }),
    usage: t.field({
      type: Usage,
      description: 'Usage reported for this agent.',
      resolve: (a) => ({ ...a, costOf: { turnId: a.turnId, agentId: a.agentId } }),
    }),
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
    clientTurnId: t.exposeString('clientTurnId', {
      nullable: true,
      description:
        'The key given to startTurn(turnId:) when it was started with one (startTurn with it again returns this turn), else null.',
    }),
    session: t.relation('session', { description: 'The session.' }),
    status: t.field({ type: TurnStatusEnum, description: 'Its status.', resolve: (turn) => turn.status }),
    initiator: t.field({
      type: Initiator,
      description: 'What started it.',
      resolve: (turn) => ({ kind: turn.initiatorKind, id: turn.initiatorId }),
    }),
    agents: t.relation('agents', { description: 'The agents taking part.', query: { orderBy: { agentId: 'asc' } } }),
    usage: t.field({
      type: Usage,
      description:
        "Usage of the turn with everything its sub-agent sessions spent (their turns, and their sub-sessions' turns, recursively). Summed at read time, so it is exact whatever reports race.",
      resolve: (turn, _, ctx) => ctx.loaders.usage.turn.load(turn.id),
    }),
    ownUsage: t.field({
      type: Usage,
      description: "Usage reported for this turn's own agents only, without its sub-agent sessions.",
      resolve: (turn) => ({ ...turn, costOf: { turnId: turn.id } }),
    }),
    subSessions: t.relatedConnection(
      'subSessions',
      {
        description: 'Sub-agent sessions made in this turn (createSession with parentTurnId), oldest first.',
        cursor: 'id',
        query: () => ({ orderBy: { id: 'asc' } }),
        totalCount: true,
      },
      { description: 'A page of sub-agent sessions of a turn.' },
      { description: 'A sub-agent session and its cursor.' },
    ),
    startedAt: t.expose('startedAt', { type: 'DateTime', description: 'When it started.' }),
    completedAt: t.expose('completedAt', { type: 'DateTime', nullable: true, description: 'When it ended, if it has.' }),
    error: t.exposeString('error', { nullable: true, description: 'Why it failed or was cancelled.' }),
    context: t.field({
      type: AssembledContext,
      nullable: true,
      description: 'The context assembled for this turn, when it was recorded (assembleContext with turnId).',
      resolve: (turn) => (turn.context as AssembledContextShape | null) ?? null,
    }),
    usageByModel: t.field({
      type: [ModelUsage],
      description: 'Usage per model named in the reports (reports without a model under model null), models in name order.',
      resolve: (turn, _, ctx) => ctx.loaders.usage.turnByModel.load(turn.id),
    }),
    messages: t.connection(
      {
        type: Message,
        description: `Messages appended with this turn, in index order (default first ${DEFAULT_PAGE}, at most ${MAX_CONNECTION_PAGE}). A page carries at most ${PAGE_CONTENT_BYTES / 1024 / 1024} MiB of message content (text and parts) and always its first message: a page cut short has hasNextPage true (hasPreviousPage with last/before); pages share the request's answer budget as Session.messages pages do (once it is spent, a page is empty and says more follows).`,
        resolve: async (turn, args, ctx) => {
          const { rows, hasMore } = await ctx.reads.turnMessages(turn.id, args, ctx.loaders.contentBudget);
          const fromEnd = args.last !== null && args.last !== undefined;
          return {
            edges: rows.map((node) => ({ cursor: encodeIndexCursor(node.position), node })),
            pageInfo: {
              hasPreviousPage: fromEnd ? hasMore : Boolean(args.after),
              hasNextPage: fromEnd ? Boolean(args.before) : hasMore,
              ...positionCursors(rows, args),
            },
            turnId: turn.id,
          };
        },
      },
      {
        name: 'TurnMessagesConnection',
        description: 'A page of messages of a turn.',
        fields: (c) => ({
          totalCount: c.int({
            description: 'Number of messages of the turn.',
            resolve: (connection, _, ctx) => ctx.reads.turnMessageCount((connection as unknown as { turnId: string }).turnId),
          }),
        }),
      },
      { name: 'TurnMessagesConnectionEdge', description: 'A message and its cursor.' },
    ),
  }),
});

export const ModelUsage = builder.objectRef<ModelUsageShape>('ModelUsage').implement({
  description: 'Usage reported for one model.',
  fields: (t) => ({
    model: t.exposeString('model', { nullable: true, description: 'The model as reported; null for reports that named none.' }),
    usage: t.field({ type: Usage, description: 'Its usage.', resolve: (m) => m.usage }),
  }),
});

builder.prismaObjectFields('Session', (t) => ({
  usage: t.field({
    type: Usage,
    description:
      "Usage summed over this session's turns, each with its sub-agent sessions (Turn.usage): the sum of its turns' usage. A fork does not include its parent's.",
    resolve: (s, _, ctx) => ctx.loaders.usage.session.load(s.id),
  }),
  ownUsage: t.field({
    type: Usage,
    description: "Usage summed over this session's own turns (Turn.ownUsage), without its sub-agent sessions.",
    resolve: (s, _, ctx) => ctx.loaders.usage.sessionOwn.load(s.id),
  }),
  treeUsage: t.field({
    type: Usage,
    description:
      "Usage summed over every turn of this session's fork tree (its root and every fork below it), with the sub-agent sessions nested in them.",
    select: { rootId: true },
    resolve: (s, _, ctx) => ctx.loaders.usage.tree.load(s.rootId),
  }),
  inheritedUsage: t.field({
    type: Usage,
    description:
      "Usage of the sub-agent sessions this fork inherits: those made in its ancestors' turns before its cut, which its timeline shows (shared, not copied). Counted once in treeUsage (they run in an ancestor's turns) and never in usage or ownUsage. Zero for a session that is not a fork.",
    resolve: (s, _, ctx) => ctx.loaders.usage.inherited.load(s.id),
  }),
  usageByModel: t.field({
    type: [ModelUsage],
    description: "Usage of this session's own turns per model (reports without a model under model null), models in name order.",
    resolve: (s, _, ctx) => ctx.loaders.usage.sessionByModel.load(s.id),
  }),
}));

const InitiatorInput = builder.inputType('TurnInitiatorInput', {
  description: 'What starts a turn.',
  fields: (t) => ({
    kind: t.field({ type: InitiatorKindEnum, required: true, description: 'The kind of initiator.' }),
    id: t.string({ required: false, description: 'Its id (a user id, an extension name …).' }),
  }),
});

const StartTurnInput = builder.inputType('StartTurnInput', {
  description: 'A turn to start on a session.',
  fields: (t) => ({
    sessionId: t.id({ required: true, description: 'The session.' }),
    agentIds: t.stringList({
      required: true,
      description: 'The agents taking part (1 to 100, distinct); each completes with completeAgent.',
    }),
    initiator: t.field({ type: InitiatorInput, required: false, description: 'What starts it (default kind USER, no id).' }),
    turnId: t.id({
      required: false,
      description:
        'A key you choose (up to 200 characters): starting again with the same key on the session returns the turn it started, so a retry is safe.',
    }),
  }),
});

const ReportUsageInput = builder.inputType('ReportUsageInput', {
  description: "One model call's usage. Counts are whole numbers from 0 to 2^31 (missing counts are 0).",
  fields: (t) => ({
    turnId: t.id({ required: true, description: 'The turn.' }),
    agentId: t.string({ required: true, description: "The agent that made the call (one of the turn's agents)." }),
    inputTokens: t.int({
      required: false,
      description: 'Prompt tokens not read from or written to the provider cache (those are counted apart, as Anthropic reports them).',
    }),
    outputTokens: t.int({ required: false, description: 'Completion tokens (reasoning included).' }),
    cacheReadTokens: t.int({ required: false, description: 'Prompt tokens read from the provider cache.' }),
    cacheWriteTokens: t.int({ required: false, description: 'Prompt tokens written to the provider cache.' }),
    cost: t.float({
      required: false,
      description:
        'Cost of the call (0 or more), in your currency unit: costSource REPORTED. Without it, a model the catalog knows is priced from the catalog in USD (costSource CATALOG); otherwise the cost is 0 and costSource UNKNOWN.',
    }),
    callId: t.string({
      required: false,
      description: 'Id of the model call: a report repeating a callId already reported for this turn changes nothing (retries are safe).',
    }),
    model: t.string({
      required: false,
      description:
        'The model called; usage can be read per model. Without cost, the catalog prices the call when it knows the model (docs/models.md; the names of AssembleContextInput.model): an unknown model is not refused, its cost is UNKNOWN.',
    }),
  }),
});

const CompleteAgentInput = builder.inputType('CompleteAgentInput', {
  description: "One agent's completion of its work on a turn.",
  fields: (t) => ({
    turnId: t.id({ required: true, description: 'The turn.' }),
    agentId: t.string({ required: true, description: "The agent (one of the turn's agents)." }),
    success: t.boolean({ required: true, description: 'False when the agent failed; the turn then ends FAILED.' }),
    error: t.string({ required: false, description: 'Why it failed.' }),
  }),
});

const CancelTurnInput = builder.inputType('CancelTurnInput', {
  description: 'A turn to cancel.',
  fields: (t) => ({
    turnId: t.id({ required: true, description: 'The turn.' }),
    reason: t.string({ required: false, description: "Why; kept as the turn's error." }),
  }),
});

const HeartbeatTurnInput = builder.inputType('HeartbeatTurnInput', {
  description: 'A turn to keep alive.',
  fields: (t) => ({ turnId: t.id({ required: true, description: 'The turn.' }) }),
});

const turnIdOf = (raw: string | number) => parseGlobalId(String(raw), 'Turn', 'turnId');

builder.mutationFields((t) => ({
  startTurn: t.field({
    type: Turn,
    description:
      'Starts turn 1, 2, 3 … of a session with its agents. One turn is active per session at a time (TURN_ALREADY_ACTIVE); a repeated turnId returns the turn it started.',
    args: { input: t.arg({ type: StartTurnInput, required: true }) },
    resolve: (_, { input }, ctx) =>
      ctx.turns.startTurn(
        ctx.workspaceId,
        {
          sessionId: parseGlobalId(String(input.sessionId), 'Session', 'sessionId'),
          agentIds: input.agentIds,
          initiator: input.initiator,
          clientTurnId: input.turnId === null || input.turnId === undefined ? null : String(input.turnId),
        },
        String(input.sessionId),
      ),
  }),
  reportUsage: t.field({
    type: Turn,
    description:
      "Adds one model call's usage to its agent and its turn, atomically. A repeated callId is a no-op; usage reported after the turn ended still counts.",
    args: { input: t.arg({ type: ReportUsageInput, required: true }) },
    resolve: (_, { input }, ctx) =>
      ctx.turns.reportUsage(ctx.workspaceId, { ...input, turnId: turnIdOf(input.turnId) }, String(input.turnId)),
  }),
  completeAgent: t.field({
    type: Turn,
    description:
      "Completes one agent's work. When every agent has completed, the turn becomes COMPLETED, or FAILED if any failed, exactly once. An ended turn is refused (TURN_NOT_ACTIVE).",
    args: { input: t.arg({ type: CompleteAgentInput, required: true }) },
    resolve: (_, { input }, ctx) =>
      ctx.turns.completeAgent(ctx.workspaceId, { ...input, turnId: turnIdOf(input.turnId) }, String(input.turnId)),
  }),
  cancelTurn: t.field({
    type: Turn,
    description: 'Cancels an active turn (an ended one is refused: TURN_NOT_ACTIVE). Usage reported later still counts.',
    args: { input: t.arg({ type: CancelTurnInput, required: true }) },
    resolve: (_, { input }, ctx) =>
      ctx.turns.cancelTurn(ctx.workspaceId, { turnId: turnIdOf(input.turnId), reason: input.reason }, String(input.turnId)),
  }),
  heartbeatTurn: t.field({
    type: Turn,
    description:
      'Tells the server an active turn is still being worked on, so it is not failed as stale (TURN_TIMEOUT_MS). Usage reports and messages of the turn count as activity too.',
    args: { input: t.arg({ type: HeartbeatTurnInput, required: true }) },
    resolve: (_, { input }, ctx) => ctx.turns.heartbeatTurn(ctx.workspaceId, turnIdOf(input.turnId), String(input.turnId)),
  }),
}));
