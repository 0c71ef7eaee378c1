import type { Message as MessageRow, Session as SessionRow } from '../generated/prisma/client.js';
import type { EventsRequestContext, RequestContext } from '../graphql/context.js';
import type { SessionEventMessage } from '../pubsub/bus.js';
import type { ViewedMessage } from '../services/transforms.js';
import { HIDE_REASON_MAX } from '../services/transforms.js';
import type { Redaction } from '../domain/transforms.js';
import { REDACTED_TEXT } from '../domain/transforms.js';
import { builder } from './builder.js';
import { eventType, payloadOf } from './events.js';
import { parseGlobalId } from './ids.js';
import { Message, Session } from './refs.js';

/** The session whose view a message's transform flags describe: the listing session, else its own. */
const viewOf = (m: MessageRow) => (m as Partial<ViewedMessage>).viewSessionId ?? m.sessionId;
const transformsOf = (m: MessageRow, ctx: RequestContext) => ctx.loaders.transformsBySession.load(viewOf(m));

/** The redaction in force on `m` in the session it is seen in, or null. */
export const redactionOf = async (m: MessageRow, ctx: RequestContext): Promise<Redaction | null> =>
  (await transformsOf(m, ctx))?.redacted.get(m.id) ?? null;

const VIEW =
  "In the session the message is read through (`Session.messages`, a transform mutation's payload or event); elsewhere, in the session that wrote it. A fork sees the transforms its parent had made when it was forked (on messages before its cut), then its own.";

const MessageRedaction = builder.objectRef<Redaction>('MessageRedaction').implement({
  description: 'What assembly sends instead of a redacted message. The original content stays readable in `parts` and `text`.',
  fields: (t) => ({
    replacement: t.exposeString('replacement', {
      description:
        'The text sent instead of the content (a TOOL message: the first tool result\'s content; the others are "[redacted]"). Tool calls keep their id and name, with arguments {}.',
    }),
    tokenCount: t.int({
      description: 'Content tokens of the redacted message as assembly sends it, o200k_base, counted once when it was redacted.',
      resolve: (r) => r.tokens.O200K_BASE,
    }),
    redactedAt: t.field({ type: 'DateTime', description: 'When the redaction was made.', resolve: (r) => r.at }),
  }),
});

builder.prismaObjectFields(Message, (t) => ({
  hidden: t.boolean({
    description: `True when hideMessages hid this message: assembleContext leaves it out (decision HIDDEN). ${VIEW}`,
    resolve: async (m, _, ctx) => (await transformsOf(m, ctx))?.hidden.has(m.id) ?? false,
  }),
  hiddenReason: t.string({
    nullable: true,
    description: 'Why it is hidden (the reason given to hideMessages); null when it is not.',
    resolve: async (m, _, ctx) => (await transformsOf(m, ctx))?.hidden.get(m.id)?.reason ?? null,
  }),
  redacted: t.boolean({
    description: `True when redactMessage redacted this message: assembleContext sends the replacement instead of its content. ${VIEW}`,
    resolve: async (m, _, ctx) => (await transformsOf(m, ctx))?.redacted.has(m.id) ?? false,
  }),
  redaction: t.field({
    type: MessageRedaction,
    nullable: true,
    description: 'The redaction in force, null when the message is not redacted.',
    resolve: async (m, _, ctx) => (await transformsOf(m, ctx))?.redacted.get(m.id) ?? null,
  }),
  toolOutputsStripped: t.boolean({
    description: `True when stripToolOutputs covers this message and it holds tool results: assembleContext sends them as stubs. ${VIEW}`,
    resolve: async (m, _, ctx) => m.toolResultIds.length > 0 && m.position < ((await transformsOf(m, ctx))?.stripUpto ?? 0),
  }),
}));

builder.prismaObjectField(Session, 'toolOutputsStrippedUpto', (t) =>
  t.int({
    description:
      'Tool results of messages before this index are sent as stubs by assembleContext (stripToolOutputs, its own or inherited); 0 when none are.',
    resolve: async (s, _, ctx) => (await ctx.loaders.transformsBySession.load(s.id))?.stripUpto ?? 0,
  }),
);

type VisibilityPayloadShape = { session: SessionRow; messages: ViewedMessage[] };
const MessageVisibilityPayload = builder.objectRef<VisibilityPayloadShape>('MessageVisibilityPayload').implement({
  description: 'The session after hideMessages or unhideMessages, and the messages named, as seen in it.',
  fields: (t) => ({
    session: t.field({ type: Session, description: 'The session.', resolve: (p) => p.session }),
    messages: t.field({ type: [Message], description: 'The messages named, in index order, each once.', resolve: (p) => p.messages }),
  }),
});

type RedactionPayloadShape = { session: SessionRow; message: ViewedMessage };
const RedactMessagePayload = builder.objectRef<RedactionPayloadShape>('RedactMessagePayload').implement({
  description: 'The session the redaction is made in, and the message as seen in it.',
  fields: (t) => ({
    session: t.field({ type: Session, description: 'The session.', resolve: (p) => p.session }),
    message: t.field({
      type: Message,
      description: 'The message (`redacted`, `redaction` reflect the change).',
      resolve: (p) => p.message,
    }),
  }),
});

const HideMessagesInput = builder.inputType('HideMessagesInput', {
  description: 'Messages to hide in a session.',
  fields: (t) => ({
    sessionId: t.id({ required: true, description: 'The session to hide them in (a fork may hide messages it inherited).' }),
    messageIds: t.idList({ required: true, description: 'Messages of that session (own or inherited), 1 to 1,000.' }),
    reason: t.string({
      required: true,
      description: `Why (not blank, at most ${HIDE_REASON_MAX} characters); assembly's decision quotes it.`,
    }),
  }),
});

const UnhideMessagesInput = builder.inputType('UnhideMessagesInput', {
  description: 'Hidden messages to show again in a session.',
  fields: (t) => ({
    sessionId: t.id({ required: true, description: 'The session they are hidden in.' }),
    messageIds: t.idList({
      required: true,
      description: 'Messages of that session (own or inherited), 1 to 1,000; those not hidden are left as they are.',
    }),
  }),
});

const RedactMessageInput = builder.inputType('RedactMessageInput', {
  description: 'A message whose content assembly replaces.',
  fields: (t) => ({
    messageId: t.id({ required: true, description: 'The message (finished).' }),
    sessionId: t.id({
      required: false,
      description:
        'The session to redact it in: one whose view holds it (a fork may redact an inherited message). Default: the session that wrote it.',
    }),
    replacement: t.string({
      required: false,
      description: `The text sent instead of its content (not blank; default "${REDACTED_TEXT}").`,
    }),
  }),
});

const UnredactMessageInput = builder.inputType('UnredactMessageInput', {
  description: 'A redacted message whose content assembly sends again.',
  fields: (t) => ({
    messageId: t.id({ required: true, description: 'The message.' }),
    sessionId: t.id({ required: false, description: 'The session it is redacted in. Default: the session that wrote it.' }),
  }),
});

const StripToolOutputsInput = builder.inputType('StripToolOutputsInput', {
  description: 'Where tool outputs stop being sent whole.',
  fields: (t) => ({
    sessionId: t.id({ required: true, description: 'The session.' }),
    uptoIndex: t.int({ required: true, description: 'Tool results of messages [0, uptoIndex) become stubs (1 to messageCount).' }),
  }),
});

function parseMessageIds(raw: readonly (string | number)[], argument: string): { ids: string[]; clientIds: Map<string, string> } {
  const clientIds = new Map<string, string>();
  const ids = raw.map((r, i) => {
    const id = parseGlobalId(String(r), 'Message', `${argument}[${i}]`);
    clientIds.set(id, String(r));
    return id;
  });
  return { ids, clientIds };
}

/** The message a (un)redaction names and the optional session it is made in: internal ids, and the client's for messages. */
function parseRedactionTarget(input: { messageId: unknown; sessionId?: unknown }) {
  const session = input.sessionId ? String(input.sessionId) : null;
  return {
    ids: {
      messageId: parseGlobalId(String(input.messageId), 'Message', 'messageId'),
      sessionId: session ? parseGlobalId(session, 'Session', 'sessionId') : null,
    },
    clientIds: { message: String(input.messageId), session },
  };
}

builder.mutationFields((t) => ({
  hideMessages: t.field({
    type: MessageVisibilityPayload,
    description:
      'Hides messages in a session: they stay in it (and in `messages`, with `hidden: true`) but assembleContext leaves them out, with the decision HIDDEN quoting the reason (a tool call and its results go together: hiding one side drops the other as DROPPED_TOOL_PAIR). Hiding a message already hidden with the same reason changes nothing. Forks made later inherit it; forks made earlier, and the parent of a fork that hides an inherited message, never see it.',
    args: { input: t.arg({ type: HideMessagesInput, required: true }) },
    resolve: (_, { input }, ctx) => {
      const sessionId = parseGlobalId(String(input.sessionId), 'Session', 'sessionId');
      const { ids, clientIds } = parseMessageIds(input.messageIds, 'messageIds');
      return ctx.transforms.hideMessages(
        ctx.workspaceId,
        { sessionId, messageIds: ids, reason: input.reason },
        { session: String(input.sessionId), messages: clientIds },
      );
    },
  }),
  unhideMessages: t.field({
    type: MessageVisibilityPayload,
    description:
      'Shows hidden messages again in a session (assembleContext considers them as before). Messages not hidden are left as they are.',
    args: { input: t.arg({ type: UnhideMessagesInput, required: true }) },
    resolve: (_, { input }, ctx) => {
      const sessionId = parseGlobalId(String(input.sessionId), 'Session', 'sessionId');
      const { ids, clientIds } = parseMessageIds(input.messageIds, 'messageIds');
      return ctx.transforms.unhideMessages(
        ctx.workspaceId,
        { sessionId, messageIds: ids },
        { session: String(input.sessionId), messages: clientIds },
      );
    },
  }),
  redactMessage: t.field({
    type: RedactMessagePayload,
    description:
      'Redacts a message in a session: from now on assembleContext sends the replacement instead of its content (a secret pasted by mistake, a huge tool output), counted exactly; the original stays readable through the API, flagged `redacted`. Redacting again replaces the replacement. Inherited by forks made later, like hideMessages.',
    args: { input: t.arg({ type: RedactMessageInput, required: true }) },
    resolve: (_, { input }, ctx) => {
      const { ids, clientIds } = parseRedactionTarget(input);
      return ctx.transforms.redactMessage(ctx.workspaceId, { ...ids, replacement: input.replacement }, clientIds);
    },
  }),
  unredactMessage: t.field({
    type: RedactMessagePayload,
    description:
      'Lifts a redaction in a session: assembleContext sends the original content again. A message not redacted there is left as it is.',
    args: { input: t.arg({ type: UnredactMessageInput, required: true }) },
    resolve: (_, { input }, ctx) => {
      const { ids, clientIds } = parseRedactionTarget(input);
      return ctx.transforms.unredactMessage(ctx.workspaceId, ids, clientIds);
    },
  }),
  stripToolOutputs: t.field({
    type: Session,
    description:
      'From now on assembleContext sends every tool result of messages [0, uptoIndex) as a stub ("[tool result elided: N characters]"), as keepToolCallRounds elision does but fixed, failed results included (decision ELIDED). An index at or below one in force changes nothing. Forks inherit it up to their cut.',
    args: { input: t.arg({ type: StripToolOutputsInput, required: true }) },
    resolve: (_, { input }, ctx) =>
      ctx.transforms.stripToolOutputs(
        ctx.workspaceId,
        { sessionId: parseGlobalId(String(input.sessionId), 'Session', 'sessionId'), uptoIndex: input.uptoIndex },
        String(input.sessionId),
      ),
  }),
}));

eventType(
  'MessagesHidden',
  'MESSAGES_HIDDEN',
  'hideMessages hid messages of this session (those already hidden with that reason are not listed).',
  (t) => ({
    messages: t.field({
      type: [Message],
      description: 'The messages hidden, in index order, as seen in this session.',
      resolve: (e, _, ctx) => ctx.reads.messagesInView(payloadOf(e).messageIds as string[], e.sessionId),
    }),
    reason: t.string({ description: 'The reason given.', resolve: (e) => payloadOf(e).reason as string }),
  }),
);

eventType('MessagesUnhidden', 'MESSAGES_UNHIDDEN', 'unhideMessages showed hidden messages of this session again.', (t) => ({
  messages: t.field({
    type: [Message],
    description: 'The messages shown again, in index order, as seen in this session.',
    resolve: (e, _, ctx) => ctx.reads.messagesInView(payloadOf(e).messageIds as string[], e.sessionId),
  }),
}));

/** The message an event names, as seen in the event's session (null once deleted). */
const viewedMessage = async (e: SessionEventMessage, ctx: EventsRequestContext) =>
  e.messageId ? ((await ctx.reads.messagesInView([e.messageId], e.sessionId))[0] ?? null) : null;

/** A redaction event: the message, as seen in the session, and its index. */
const redactionEvent = (name: string, type: string, description: string) =>
  eventType(name, type, description, (t) => ({
    message: t.field({
      type: Message,
      nullable: true,
      description: 'The message, as seen in this session (null once deleted).',
      resolve: (e, _, ctx) => viewedMessage(e, ctx),
    }),
    index: t.int({ description: 'Its index.', resolve: (e) => payloadOf(e).index as number }),
  }));

redactionEvent('MessageRedacted', 'MESSAGE_REDACTED', 'redactMessage redacted a message in this session.');
redactionEvent('MessageUnredacted', 'MESSAGE_UNREDACTED', 'unredactMessage lifted a redaction in this session.');

eventType('ToolOutputsStripped', 'TOOL_OUTPUTS_STRIPPED', 'stripToolOutputs: tool results before an index are now sent as stubs.', (t) => ({
  uptoIndex: t.int({ description: 'Tool results of messages [0, uptoIndex) are stubs.', resolve: (e) => payloadOf(e).uptoIndex as number }),
}));
