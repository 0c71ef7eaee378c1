import type { ContextGauge as ContextGaugeShape } from '../domain/context-gauge.js';
import { ContextFormatEnum, TokenEncodingEnum } from './assembly.js';
import { builder } from './builder.js';

const ContextGaugeByRole = builder.objectRef<ContextGaugeShape['byRole']>('ContextGaugeByRole').implement({
  description:
    "Where the gauge's tokens are: each role's messages with their framing in the format, the summary block with its framing, and the attachments of the counted messages (not in their role's figure). usedTokens is their sum plus the format's reply priming (3 tokens; 0 for GEMINI).",
  fields: (t) => ({
    system: t.exposeInt('system', { description: 'SYSTEM messages.' }),
    summary: t.exposeInt('summary', { description: 'The compaction summary block (0 without a compaction).' }),
    user: t.exposeInt('user', { description: 'USER messages.' }),
    assistant: t.exposeInt('assistant', { description: 'ASSISTANT messages (their tool calls included).' }),
    tool: t.exposeInt('tool', { description: 'TOOL messages (their tool results, counted whole).' }),
    attachments: t.exposeInt('attachments', {
      description:
        "Attachments of the counted messages, estimated from their stored parts: an image or PDF by its provider's rule for the format (as assembly counts it), a text attachment as a quarter of its bytes up to 20,000, other files as 0.",
    }),
  }),
});

const ContextGauge = builder.objectRef<ContextGaugeShape>('ContextGauge').implement({
  description:
    'How full the context of the next model call is, from the token counts stored with each message: no payload is built, so a client can poll it.',
  fields: (t) => ({
    usedTokens: t.exposeInt('usedTokens', {
      description:
        "Tokens the messages would take: for a session of text messages and tool rounds within keepToolCallRounds (2), exactly the tokenCount of assembleContext with the same encoding and format and no maxTokens, maxMessages, system, turnContext or tools: the summary block, the leading SYSTEM message (kept ahead of the summary), and each finished, visible message after the compaction (a redacted one as its replacement), each with the format's framing (OPENAI_CHAT, OPENAI_RESPONSES, GENERIC: 4 a message, 3 more a tool call, 4 a tool result in a TOOL message; ANTHROPIC_MESSAGES: 4 a message, 3 a tool_use or tool_result block; GEMINI: none), plus the reply priming. Tool results assembly sends as stubs (older rounds, stripToolOutputs) are counted whole, so usedTokens is then an upper bound; attachments are estimated (byRole.attachments); the placeholder first user turn of ANTHROPIC_MESSAGES and GEMINI is not counted.",
    }),
    maxTokens: t.exposeInt('maxTokens', {
      nullable: true,
      description: "The budget measured against: the maxTokens argument, else the model's default (window less outputReserve), else null.",
    }),
    byRole: t.field({ type: ContextGaugeByRole, description: 'usedTokens by where they come from.', resolve: (g) => g.byRole }),
    messageCount: t.exposeInt('messageCount', { description: 'Messages counted (the summary block not among them).' }),
    messagesUntilDrop: t.exposeInt('messagesUntilDrop', {
      nullable: true,
      description:
        "How many more messages of the counted ones' average size (framing and attachments included) fit in maxTokens before an assembly with that budget must drop the oldest: 0 when it already must; null without maxTokens or without a message.",
    }),
  }),
});

builder.prismaObjectFields('Session', (t) => ({
  contextGauge: t.field({
    type: ContextGauge,
    description:
      'How full the context assembled from this session would be, from stored counts and without building a payload: cheap enough to poll (a polled session that gained nothing reads nothing more than itself; one that did, its compaction and its new messages). CHARS_DIV_4 is refused (no counts are stored for it).',
    args: {
      model: t.arg.string({
        required: false,
        description:
          'A model of the catalog (as AssembleContextInput.model): its window less outputReserve is maxTokens when maxTokens is not given.',
      }),
      maxTokens: t.arg.int({ required: false, description: 'The budget to measure against (≥ 1).' }),
      outputReserve: t.arg.int({
        required: false,
        description: 'With model and no maxTokens: tokens kept for the answer (default 16,384, or a quarter of the window when smaller).',
      }),
      encoding: t.arg({ type: TokenEncodingEnum, required: false, defaultValue: 'O200K_BASE', description: 'How tokens are counted.' }),
      format: t.arg({
        type: ContextFormatEnum,
        required: false,
        defaultValue: 'GENERIC',
        description: 'The format whose framing is counted.',
      }),
    },
    resolve: (session, args, ctx) => ctx.assembly.gauges.gauge(session, args),
  }),
}));
