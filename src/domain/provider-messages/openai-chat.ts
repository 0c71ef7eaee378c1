/**
 * OpenAI Chat Completions: request `messages` and a `ChatCompletion` response (its first choice).
 * Content given as an array keeps that form (`providerMetadata.openai.contentArray`); non-text
 * content parts (image_url, input_audio, file) are OPENAI_CHAT provider parts; an assistant
 * message's `name` and `refusal` ride on its first part (`openai.message`).
 */
import { badInput } from '../errors.js';
import type { PartInput } from '../parts.js';
import type { MessageRole } from '../types.js';
import {
  array,
  at,
  count,
  isObject,
  type Json,
  MessageList,
  metadata,
  object,
  type ProviderRead,
  string,
  usageOf,
  without,
} from './common.js';

const openaiMeta = (fields: Json, keep = false) => metadata('openai', fields, keep);

/** Text and other parts of a message's `content` (a string or an array of parts). */
function contentParts(content: unknown, where: string, first: Json): PartInput[] {
  if (typeof content === 'string') return [{ text: { text: content, providerMetadata: openaiMeta(first) } }];
  const parts = array(content, where).map((p, i): PartInput => {
    const part = object(p, at(where, i));
    if (part.type === 'text') {
      const extra = without(part, ['type', 'text']);
      return {
        text: { text: string(part.text, at(at(where, i), 'text')), providerMetadata: openaiMeta(extra ? { chatExtra: extra } : {}) },
      };
    }
    string(part.type, at(at(where, i), 'type'));
    return { providerPart: { provider: 'openai', data: part, format: 'OPENAI_CHAT' } };
  });
  return withFirst(parts, { ...first, contentArray: true });
}

/** `fields` added to the first part's openai metadata. */
function withFirst(parts: PartInput[], fields: Json): PartInput[] {
  if (parts.length === 0 || Object.keys(fields).length === 0) return parts;
  const [key, body] = Object.entries(parts[0])[0] as [keyof PartInput, { providerMetadata?: Json }];
  const openai = isObject(body.providerMetadata?.openai) ? body.providerMetadata.openai : {};
  return [
    { [key]: { ...body, providerMetadata: { ...body.providerMetadata, openai: { ...openai, ...fields } } } } as PartInput,
    ...parts.slice(1),
  ];
}

function toolCalls(value: unknown, where: string): PartInput[] {
  return array(value, where).map((c, i) => {
    const call = object(c, at(where, i));
    const fn = object(call.function, at(at(where, i), 'function'));
    const extra = without(call, ['id', 'type', 'function']);
    return {
      toolCall: {
        callId: string(call.id, at(at(where, i), 'id')),
        name: string(fn.name, at(at(at(where, i), 'function'), 'name')),
        argumentsJson: string(fn.arguments, at(at(at(where, i), 'function'), 'arguments')),
        providerMetadata: openaiMeta(extra ? { chatExtra: extra } : {}),
      },
    };
  });
}

/** One assistant message (a request's, or a response's choice): text, calls, and request keys kept. */
function assistantParts(message: Json, where: string, response: boolean): PartInput[] {
  const kept: Json = {};
  if (typeof message.name === 'string') kept.name = message.name;
  if (typeof message.refusal === 'string') kept.refusal = message.refusal;
  const first: Json = Object.keys(kept).length > 0 ? { message: kept } : {};
  // A message of tool calls only is sent with `content: null` unless it had no `content` key at all.
  if (!('content' in message)) first.noContent = true;
  // Response-only keys are kept, not sent (a request's assistant message does not take them).
  if (response && Array.isArray(message.annotations) && message.annotations.length > 0) first.annotations = message.annotations;
  const content = message.content === null || message.content === undefined ? [] : contentParts(message.content, at(where, 'content'), {});
  const calls =
    message.tool_calls === undefined || message.tool_calls === null ? [] : toolCalls(message.tool_calls, at(where, 'tool_calls'));
  const parts = [...content, ...calls];
  if (parts.length === 0) parts.push({ text: { text: '' } });
  return withFirst(parts, first);
}

const ROLES: Record<string, MessageRole> = { system: 'SYSTEM', developer: 'SYSTEM', user: 'USER' };

/** Reads request `messages` (or a request body holding them). */
export function readChatMessages(value: unknown, where: string): ProviderRead {
  let items = value;
  if (isObject(value)) {
    items = value.messages;
    where = at(where, 'messages');
  }
  const list = new MessageList();
  for (const [i, m] of array(items, where).entries()) {
    const mWhere = at(where, i);
    const message = object(m, mWhere);
    const role = message.role;
    if (role === 'assistant') {
      for (const part of assistantParts(message, mWhere, false)) list.add('ASSISTANT', part);
      list.flush();
    } else if (role === 'tool') {
      const content = message.content;
      const text =
        typeof content === 'string'
          ? content
          : contentParts(content, at(mWhere, 'content'), {})
              .map((p) => p.text?.text ?? '')
              .join('\n');
      const meta = Array.isArray(content) ? openaiMeta({ content }) : undefined;
      list.add('TOOL', {
        toolResult: { callId: string(message.tool_call_id, at(mWhere, 'tool_call_id')), content: text, providerMetadata: meta },
      });
    } else if (typeof role === 'string' && ROLES[role]) {
      const first = role === 'developer' ? { role } : {};
      for (const part of contentParts(message.content, at(mWhere, 'content'), first)) list.add(ROLES[role], part);
      list.flush();
    } else throw badInput(`${at(mWhere, 'role')} must be system, developer, user, assistant or tool.`);
  }
  return { messages: list.done(where), usage: null };
}

/** Reads a `ChatCompletion`: its first choice's message, and its usage. */
export function readChatResponse(value: unknown, where: string): ProviderRead {
  const response = object(value, where);
  const choices = array(response.choices, at(where, 'choices'));
  if (choices.length === 0) throw badInput(`${at(where, 'choices')} is empty: nothing to store.`);
  const cWhere = at(at(where, 'choices'), 0);
  const message = object(object(choices[0], cWhere).message, at(cWhere, 'message'));
  const list = new MessageList();
  for (const part of assistantParts(message, at(cWhere, 'message'), true)) list.add('ASSISTANT', part);
  const usage = isObject(response.usage) ? response.usage : {};
  const cached = isObject(usage.prompt_tokens_details) ? count(usage.prompt_tokens_details.cached_tokens) : 0;
  return {
    messages: list.done(cWhere),
    usage: usageOf(
      {
        inputTokens: Math.max(0, count(usage.prompt_tokens) - cached),
        outputTokens: count(usage.completion_tokens),
        cacheReadTokens: cached,
        cacheWriteTokens: 0,
      },
      response.model,
      response.id,
    ),
  };
}
