/**
 * What a share token (`createShareLink`) may reach: one session, read-only. Two independent
 * fences, both here, both applied to the schema object itself so they hold on every path that
 * executes it (Yoga's HTTP and SSE, the HTTP fast path, both WebSocket servers, trusted documents,
 * compiled queries, shared subscription executions):
 *
 * 1. **An allowlist of fields**, checked on the whole operation before any root field of it runs
 *    (every root field's resolver and subscribe are wrapped): only the coordinates in
 *    `SHARE_FIELDS` may be selected. A type that is not listed cannot be selected into at all.
 *    What is left out is what leads away from the session: `sessions`, `searchMessages`,
 *    `attachment`, every mutation, `Session.parent`/`root`/`ancestors`/`forks`/`subSessions`/
 *    `timeline`/`treeUsage`, `Message.session`/`forks`/`turn` (an inherited message's turn is the
 *    ancestor's), sub-session events, introspection. A refusal is FORBIDDEN naming the field.
 * 2. **At run time, every Session a field returns is the shared one**: each field whose type is
 *    Session (alone, in a list, behind an edge) or Node is wrapped, and for a share token any other
 *    session becomes null (left out of a list; NOT_FOUND where null is not allowed). So
 *    `session(id:)` and `node(id:)` of another session answer null, as for an id that does not
 *    exist, and a field added later that reaches a session cannot reach another one.
 *
 * 3. **A redacted message reads as its replacement**: for a share token, `Message.text` and
 *    `Message.parts` of a message redacted in the session it is seen in are what assembly sends
 *    (`redactParts`), not the original, which a key of the workspace still reads. A redaction is
 *    made to keep content from being passed on; a link is how content is passed on.
 *
 * Subscriptions: `sessionEvents` and `turnEvents` of the shared session only
 * (`workspaceSessionStream` refuses another as not found).
 */
import type {
  FragmentDefinitionNode,
  GraphQLCompositeType,
  GraphQLField,
  GraphQLFieldResolver,
  GraphQLOutputType,
  GraphQLSchema,
  OperationDefinitionNode,
  SelectionSetNode,
} from 'graphql';
import { defaultFieldResolver, getNamedType, isCompositeType, isInterfaceType, isListType, isNonNullType, isObjectType } from 'graphql';
import type { ShareGrant } from '../caches/api-keys.js';
import { DomainError, notFound } from '../domain/errors.js';
import { redactParts } from '../domain/transforms.js';
import type { StoredPart } from '../domain/types.js';
import type { Message as MessageRow } from '../generated/prisma/client.js';
import type { RequestContext } from '../graphql/context.js';
import { redactionOf } from './transforms.js';

const EVENT = ['sequence', 'at', 'session'];
const TURN_EVENT = ['sequence', 'at', 'session', 'turn'];
const CONNECTION = ['edges', 'pageInfo', 'totalCount'];
const EDGE = ['cursor', 'node'];

/** Every field a share token may select, by the type it is selected on (an interface's own fields included). */
export const SHARE_FIELDS: Readonly<Record<string, readonly string[]>> = {
  Query: ['session', 'node'],
  Subscription: ['sessionEvents', 'turnEvents'],
  Node: ['id'],
  Session: [
    'id',
    'title',
    'createdAt',
    'updatedAt',
    'kind',
    'agentId',
    'forkIndex',
    'depth',
    'messageCount',
    'eventSequence',
    'messages',
    'settings',
    'metadata',
    'usage',
    'ownUsage',
    'inheritedUsage',
    'usageByModel',
    'turns',
    'activeTurn',
    'contextGauge',
    'toolOutputsStrippedUpto',
  ],
  SessionMessagesConnection: ['edges', 'pageInfo'],
  SessionMessagesConnectionEdge: EDGE,
  SessionTurnsConnection: CONNECTION,
  SessionTurnsConnectionEdge: EDGE,
  PageInfo: ['hasNextPage', 'hasPreviousPage', 'startCursor', 'endCursor'],
  Message: [
    'id',
    'index',
    'role',
    'parts',
    'text',
    'generating',
    'tokenCount',
    'agentId',
    'createdAt',
    'updatedAt',
    'hidden',
    'hiddenReason',
    'redacted',
    'redaction',
    'toolOutputsStripped',
  ],
  MessageRedaction: ['redactedAt', 'replacement', 'tokenCount'],
  TextPart: ['text', 'providerMetadata'],
  ToolCallPart: ['callId', 'name', 'arguments', 'argumentsJson', 'providerMetadata'],
  ToolResultPart: ['callId', 'content', 'isError', 'providerMetadata'],
  ReasoningPart: ['text', 'redacted', 'providerMetadata'],
  ProviderPart: ['provider', 'format', 'data', 'providerMetadata'],
  AttachmentPart: ['attachment', 'providerMetadata'],
  Attachment: [
    'id',
    'name',
    'mimeType',
    'size',
    'sha256',
    'kind',
    'width',
    'height',
    'pages',
    'url',
    'sourceUrl',
    'providerFile',
    'content',
  ],
  AttachmentContent: ['text', 'offset', 'length', 'totalLength', 'nextOffset', 'hasMore'],
  ProviderFile: ['provider', 'fileId'],
  Turn: [
    'id',
    'number',
    'clientTurnId',
    'status',
    'initiator',
    'agents',
    'usage',
    'ownUsage',
    'usageByModel',
    'startedAt',
    'completedAt',
    'error',
  ],
  TurnInitiator: ['kind', 'id'],
  TurnAgent: ['agentId', 'status', 'usage', 'error'],
  Usage: ['inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheWriteTokens', 'totalTokens', 'cost', 'costSource'],
  ModelUsage: ['model', 'usage'],
  ContextGauge: ['usedTokens', 'maxTokens', 'messageCount', 'messagesUntilDrop', 'byRole'],
  ContextGaugeByRole: ['system', 'summary', 'user', 'assistant', 'tool', 'attachments'],
  SessionEvent: EVENT,
  TurnEvent: ['sequence', 'at', 'turn'],
  MessageAdded: [...EVENT, 'index', 'message'],
  MessageUpdated: [...EVENT, 'message', 'appendText', 'finished'],
  SessionUpdated: [...EVENT, 'fields'],
  SessionCompacted: [...EVENT, 'uptoIndex'],
  SessionDeleted: [...EVENT, 'deletedSessionId'],
  MessagesHidden: [...EVENT, 'messages', 'reason'],
  MessagesUnhidden: [...EVENT, 'messages'],
  MessageRedacted: [...EVENT, 'index', 'message'],
  MessageUnredacted: [...EVENT, 'index', 'message'],
  ToolOutputsStripped: [...EVENT, 'uptoIndex'],
  TurnStarted: [...TURN_EVENT, 'number', 'agentIds'],
  TurnUsageUpdated: [...TURN_EVENT, 'agentId', 'agentTotal', 'callId', 'delta', 'model', 'total'],
  TurnAgentCompleted: [...TURN_EVENT, 'agentId', 'success', 'error'],
  TurnCompleted: [...TURN_EVENT, 'status', 'usage'],
  TurnFailed: [...TURN_EVENT, 'cause', 'error'],
  TurnCancelled: [...TURN_EVENT, 'reason'],
};

const ALLOWED = new Map(Object.entries(SHARE_FIELDS).map(([type, fields]) => [type, new Set(fields)]));

/** The first field of the operation a share token may not select (`Type.field`), or null. */
export function shareViolation(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  fragments: Record<string, FragmentDefinitionNode>,
): string | null {
  const root = schema.getRootType(operation.operation);
  if (!root) return operation.operation;
  const seen = new Set<string>();
  const visit = (type: GraphQLCompositeType, set: SelectionSetNode): string | null => {
    for (const selection of set.selections) {
      if (selection.kind === 'Field') {
        const name = selection.name.value;
        if (name === '__typename') continue;
        if (!ALLOWED.get(type.name)?.has(name)) return `${type.name}.${name}`;
        // Only object and interface types are listed, so `type` has fields here.
        const field = (type as { getFields(): Record<string, GraphQLField<unknown, unknown>> }).getFields()[name];
        const named = field ? getNamedType(field.type) : undefined;
        if (!field || !named) return `${type.name}.${name}`;
        if (selection.selectionSet && isCompositeType(named)) {
          const found = visit(named, selection.selectionSet);
          if (found) return found;
        }
        continue;
      }
      const fragment = selection.kind === 'FragmentSpread' ? fragments[selection.name.value] : selection;
      if (!fragment) return `...${selection.kind === 'FragmentSpread' ? selection.name.value : ''}`;
      const condition = fragment.typeCondition ? schema.getType(fragment.typeCondition.name.value) : type;
      if (!condition || !isCompositeType(condition)) return fragment.typeCondition?.name.value ?? type.name;
      // A named fragment is looked at once per type it is spread on (validation has refused cycles).
      if (selection.kind === 'FragmentSpread') {
        const key = `${selection.name.value}@${type.name}`;
        if (seen.has(key)) continue;
        seen.add(key);
      }
      const found = visit(condition, fragment.selectionSet);
      if (found) return found;
    }
    return null;
  };
  return visit(root, operation.selectionSet);
}

/**
 * Checked once per operation (the same operation object: its root fields, or every event of a
 * subscription). `useKeyScopes` calls this before execution too, so an operation is refused whole,
 * introspection (which runs no resolver of ours) included.
 */
const checked = new WeakMap<OperationDefinitionNode, string | null>();

export function assertShareOperation(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  fragments: Record<string, FragmentDefinitionNode>,
): void {
  let violation = checked.get(operation);
  if (violation === undefined) {
    violation = shareViolation(schema, operation, fragments);
    checked.set(operation, violation);
  }
  if (violation !== null) {
    throw new DomainError(
      'FORBIDDEN',
      `A share link reads its one session only (session(id:), node(id:), sessionEvents and turnEvents of it, and the fields that stay inside it): ${violation} is not one of them.`,
      { field: violation },
    );
  }
}

type Resolver = GraphQLFieldResolver<unknown, { share?: ShareGrant | null }>;
type Info = Parameters<Resolver>[3];

/** Keeps only the shared session in a resolved value of type `type` (null, or dropped from a list, otherwise). */
function onlyShared(value: unknown, type: GraphQLOutputType, sessionId: string, info: Info): unknown {
  if (value && typeof (value as PromiseLike<unknown>).then === 'function') {
    return (value as PromiseLike<unknown>).then((v) => onlyShared(v, type, sessionId, info));
  }
  if (value === null || value === undefined) return value;
  const inner = isNonNullType(type) ? type.ofType : type;
  if (isListType(inner)) {
    if (!Array.isArray(value)) return value;
    return value.filter((item) => (item as { id?: unknown } | null)?.id === sessionId);
  }
  if ((value as { id?: unknown }).id === sessionId) return value;
  if (isNonNullType(type)) throw notFound(`${info.parentType.name}.${info.fieldName}`);
  return null;
}

/** Whether values of this field are sessions (or nodes, which may be), alone or in a list. */
const returnsSessions = (type: GraphQLOutputType) => {
  const named = getNamedType(type);
  return named.name === 'Session' || (isInterfaceType(named) && named.name === 'Node');
};

/** Fence 3: `Message.text` and `Message.parts` of a redacted message, for a share token, as assembly sends them. */
function redactedForShares(schema: GraphQLSchema) {
  const message = schema.getType('Message');
  if (!isObjectType(message)) return;
  const fields = message.getFields();
  for (const name of ['text', 'parts'] as const) {
    const field = fields[name];
    const inner = (field.resolve ?? defaultFieldResolver) as GraphQLFieldResolver<MessageRow, RequestContext>;
    field.resolve = ((source: MessageRow, args, context: RequestContext, info) => {
      if (!context.share) return inner(source, args, context, info);
      return redactionOf(source, context).then((redaction) => {
        if (!redaction) return inner(source, args, context, info);
        return name === 'text' ? redaction.replacement : redactParts(source.parts as unknown as StoredPart[], redaction.replacement);
      });
    }) as typeof field.resolve;
  }
}

/** Applies the three fences (see the top of this file) to `schema`'s resolvers; returns it. */
export function withShareScope(schema: GraphQLSchema): GraphQLSchema {
  redactedForShares(schema);
  const roots = new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].filter((t) => t));
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    const isRoot = roots.has(type);
    for (const field of Object.values(type.getFields())) {
      const sessions = returnsSessions(field.type);
      if (!isRoot && !sessions) continue;
      const wrap = (inner: Resolver | undefined, filter: boolean): Resolver | undefined => {
        if (!inner) return inner;
        return (source, args, context, info) => {
          const share = context.share;
          if (!share) return inner(source, args, context, info);
          if (isRoot) assertShareOperation(info.schema, info.operation, info.fragments);
          const value = inner(source, args, context, info);
          return filter ? onlyShared(value, field.type, share.sessionId, info) : value;
        };
      };
      field.resolve = wrap((field.resolve ?? defaultFieldResolver) as Resolver, sessions) as typeof field.resolve;
      // A subscription's stream is checked by its session (workspaceSessionStream); its events by `resolve`.
      field.subscribe = wrap(field.subscribe as Resolver | undefined, false) as typeof field.subscribe;
    }
  }
  return schema;
}
