import type { MessageInputData } from '../domain/parts.js';
import { badInput } from '../domain/errors.js';
import { readProviderPayload } from '../domain/provider-messages/index.js';
import { ContextFormatEnum } from './assembly.js';
import { builder } from './builder.js';
import { parseGlobalId } from './ids.js';
import { AppendMessagesPayload } from './session-mutations.js';

const AppendProviderMessagesInput = builder.inputType('AppendProviderMessagesInput', {
  description:
    "A provider's own payload to append as messages: exactly one of `messages` (request items of `format`) and `response` (a response object of that format's provider). Every part keeps what its provider needs to take it back (thinking with its signature, reasoning items with their ids and encrypted content, thought signatures, citations, annotations, built-in tool blocks as provider parts), so assembling in the same format gives the same items back (docs/provider-replay.md lists the few normalizations). Images and PDFs (by base64, https URL or provider file id) are stored as attachments, so every format sends them as its own blocks; one whose bytes the attachment checks refuse refuses the whole call, naming its JSON path.",
  fields: (t) => ({
    sessionId: t.id({ required: true, description: 'The session.' }),
    format: t.field({
      type: ContextFormatEnum,
      required: true,
      description: 'The payload format: OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES or GEMINI.',
    }),
    messages: t.field({
      type: 'JSON',
      required: false,
      description:
        'Request items of `format`: Chat Completions `messages`, Anthropic `messages`, Responses `input` items, Gemini `contents`; or the whole request body (its `system`, `instructions` or `systemInstruction` then becomes a SYSTEM message first).',
    }),
    response: t.field({
      type: 'JSON',
      required: false,
      description:
        "A response of `format`'s provider: a ChatCompletion (its first choice), an Anthropic Message, a Response (its output items) or a GenerateContentResponse (its first candidate). Stored as the assistant message(s) it holds; with `turnId`, its usage is reported to the turn after the messages are stored (callId: the response's id, so a retry counts once; model: the response's model): if that report fails, the messages stay stored, and `reportUsage` with the response's id is the retry (sending the response again would store its messages twice).",
    }),
    turnId: t.id({ required: false, description: 'The turn they belong to (a turn of this session).' }),
    agentId: t.string({
      required: false,
      description: 'The agent writing them; required with `turnId` and `response`, whose usage is reported for this agent.',
    }),
  }),
});

builder.mutationField('appendProviderMessages', (t) =>
  t.field({
    type: AppendMessagesPayload,
    description:
      "Appends a provider's request items or response as messages, with every part and its provider data, atomically: all of them or none. Anything it cannot read is refused with BAD_USER_INPUT naming the JSON path, and nothing is stored.",
    args: { input: t.arg({ type: AppendProviderMessagesInput, required: true }) },
    resolve: async (_, { input }, ctx) => {
      const sessionId = parseGlobalId(String(input.sessionId), 'Session', 'sessionId');
      const turnId = input.turnId ? parseGlobalId(String(input.turnId), 'Turn', 'turnId') : null;
      const hasMessages = input.messages !== undefined && input.messages !== null;
      const hasResponse = input.response !== undefined && input.response !== null;
      if (hasMessages === hasResponse) throw badInput('appendProviderMessages: give exactly one of `messages` and `response`.');
      const side = hasMessages ? 'messages' : 'response';
      const read = readProviderPayload(input.format, side, hasMessages ? input.messages : input.response, `input.${side}`);
      const agentId = input.agentId ?? null;
      if (turnId !== null && read.usage !== null && agentId === null) {
        throw badInput('appendProviderMessages: give agentId with turnId and a response: its usage is reported for that agent.');
      }
      const appended = await ctx.sessions.appendMessages(
        ctx.workspaceId,
        sessionId,
        read.messages as MessageInputData[],
        { turnId, agentId, turnLabel: input.turnId ? String(input.turnId) : undefined },
        String(input.sessionId),
      );
      if (turnId !== null && read.usage !== null) {
        const { model, callId, ...counts } = read.usage;
        await ctx.turns.reportUsage(ctx.workspaceId, { ...counts, turnId, agentId: agentId!, callId, model }, String(input.turnId));
      }
      return appended;
    },
  }),
);
