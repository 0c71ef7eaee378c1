/**
 * The providers' documented request rules, checked on a payload independently of the server's code
 * (the patterns are written out here, not imported): every rule a stored conversation can break, as
 * sentences; an empty list means the provider would accept the payload. Used by the unit tests of
 * the provider rules, the property test and the integration tests.
 */
type Json = Record<string, unknown>;
type Format = 'GENERIC' | 'OPENAI_CHAT' | 'OPENAI_RESPONSES' | 'ANTHROPIC_MESSAGES' | 'GEMINI';

const ANTHROPIC_ID = /^[a-zA-Z0-9_-]+$/;
const OPENAI_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const CHAT_ID = /^[a-zA-Z0-9_-]{1,40}$/;
const RESPONSES_ID = /^[a-zA-Z0-9_-]{1,64}$/;
const GEMINI_NAME = /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/;

export function anthropicViolations(payload: Json): string[] {
  const out: string[] = [];
  const messages = payload.messages as Array<{ role: string; content: Json[] }>;
  if (messages.length === 0) out.push('messages is empty');
  else if (messages[0].role !== 'user') out.push('the first message is not user');
  const ids = new Set<string>();
  messages.forEach((m, i) => {
    if (m.content.length === 0) out.push(`message ${i} has no content`);
    for (const b of m.content) {
      if (b.type === 'text' && !/\S/.test(b.text as string)) out.push(`message ${i} has a whitespace-only text block`);
      if (b.type === 'tool_use') {
        const id = b.id as string;
        if (ids.has(id)) out.push(`duplicate tool_use id ${id}`);
        ids.add(id);
        if (!ANTHROPIC_ID.test(id)) out.push(`invalid tool_use id ${id}`);
        if (!OPENAI_NAME.test(b.name as string)) out.push(`invalid tool name ${b.name}`);
      }
    }
    if (i > 0 && messages[i - 1].role === m.role) out.push(`messages ${i - 1} and ${i} have the same role`);
    // Every tool_use is answered first thing in the next message, and every tool_result answers the previous one.
    const uses = m.content.filter((b) => b.type === 'tool_use').map((b) => b.id as string);
    const next = messages[i + 1]?.content ?? [];
    const leading = next.slice(0, uses.length);
    if (
      uses.length > 0 &&
      (leading.some((b) => b.type !== 'tool_result') ||
        !sameSet(
          leading.map((b) => b.tool_use_id as string),
          uses,
        ))
    ) {
      out.push(`message ${i}'s tool_use blocks are not answered first in message ${i + 1}`);
    }
    const prevUses = new Set((messages[i - 1]?.content ?? []).filter((b) => b.type === 'tool_use').map((b) => b.id as string));
    for (const b of m.content)
      if (b.type === 'tool_result' && !prevUses.has(b.tool_use_id as string)) out.push(`orphan tool_result ${b.tool_use_id}`);
  });
  const last = messages[messages.length - 1];
  const block = last?.content[last.content.length - 1];
  if (last?.role === 'assistant' && block?.type === 'text' && block.text !== (block.text as string).trimEnd()) {
    out.push('final assistant content ends with whitespace');
  }
  return out;
}

export function openAiChatViolations(payload: Json): string[] {
  const out: string[] = [];
  const messages = payload.messages as Json[];
  if (messages.length === 0) out.push('messages is empty');
  const ids = new Set<string>();
  let pending = new Set<string>();
  for (const m of messages) {
    if (m.role === 'tool') {
      const id = m.tool_call_id as string;
      if (!pending.delete(id)) out.push(`tool message ${id} answers no preceding tool call`);
      continue;
    }
    if (pending.size > 0) out.push(`tool calls ${[...pending].join(', ')} are not answered right after their message`);
    pending = new Set();
    if (m.role !== 'assistant' || !m.tool_calls) continue;
    for (const c of m.tool_calls as Array<{ id: string; function: { name: string } }>) {
      if (ids.has(c.id)) out.push(`duplicate tool call id ${c.id}`);
      ids.add(c.id);
      pending.add(c.id);
      if (!OPENAI_NAME.test(c.function.name)) out.push(`invalid function name ${c.function.name}`);
      if (!CHAT_ID.test(c.id)) out.push(`invalid tool call id ${c.id}`);
    }
  }
  if (pending.size > 0) out.push(`tool calls ${[...pending].join(', ')} are never answered`);
  return out;
}

export function openAiResponsesViolations(payload: Json): string[] {
  const out: string[] = [];
  const items = payload.input as Json[];
  if (items.length === 0) out.push('input is empty');
  const ids = new Set<string>();
  const open = new Set<string>();
  for (const item of items) {
    if (item.type === 'function_call') {
      const id = item.call_id as string;
      if (ids.has(id)) out.push(`duplicate call_id ${id}`);
      ids.add(id);
      open.add(id);
      if (!OPENAI_NAME.test(item.name as string)) out.push(`invalid function name ${item.name}`);
      if (!RESPONSES_ID.test(id)) out.push(`invalid call_id ${id}`);
      if (typeof item.arguments !== 'string') out.push(`arguments of ${id} is not a string`);
    } else if (item.type === 'function_call_output') {
      if (!open.delete(item.call_id as string)) out.push(`function_call_output ${item.call_id} has no preceding function_call`);
    } else if (item.type === 'message') {
      if (!['system', 'developer', 'user', 'assistant'].includes(item.role as string)) out.push(`message item with role ${item.role}`);
    } else {
      out.push(`unknown item type ${item.type}`);
    }
  }
  if (open.size > 0) out.push(`function calls ${[...open].join(', ')} have no output`);
  return out;
}

export function geminiViolations(payload: Json): string[] {
  const out: string[] = [];
  const contents = payload.contents as Array<{ role: string; parts: Json[] }>;
  if (contents.length === 0) out.push('contents is empty');
  else if (contents[0].role !== 'user') out.push('the first turn is not user');
  contents.forEach((c, i) => {
    if (c.role !== 'user' && c.role !== 'model') out.push(`turn ${i} has role ${c.role}`);
    if (c.parts.length === 0) out.push(`turn ${i} has no parts`);
    if (i > 0 && contents[i - 1].role === c.role) out.push(`turns ${i - 1} and ${i} have the same role`);
    for (const p of c.parts) {
      if ('text' in p && !/\S/.test(p.text as string)) out.push(`turn ${i} has an empty text part`);
      const call = p.functionCall as { name: string; args: unknown } | undefined;
      if (call) {
        if (c.role !== 'model') out.push(`turn ${i}: a functionCall outside a model turn`);
        if (!GEMINI_NAME.test(call.name)) out.push(`invalid function name ${call.name}`);
        if (call.args === null || typeof call.args !== 'object' || Array.isArray(call.args))
          out.push(`args of ${call.name} is not an object`);
      }
      const response = p.functionResponse as { name: string; response: unknown } | undefined;
      if (response) {
        if (c.role !== 'user') out.push(`turn ${i}: a functionResponse outside a user turn`);
        if (response.response === null || typeof response.response !== 'object') out.push(`response of ${response.name} is not an object`);
      }
    }
    // A turn of calls follows a user turn; the next turn answers each call, in order, by name.
    const calls = c.parts.flatMap((p) => (p.functionCall ? [(p.functionCall as { name: string }).name] : []));
    const responses = (contents[i + 1]?.parts ?? []).flatMap((p) =>
      p.functionResponse ? [(p.functionResponse as { name: string }).name] : [],
    );
    if (calls.length > 0) {
      if (i === 0 || contents[i - 1].role !== 'user') out.push(`turn ${i}: a function call turn does not follow a user turn`);
      if (responses.length !== calls.length || responses.some((name, k) => name !== calls[k])) {
        out.push(
          `turn ${i}: ${calls.length} function calls (${calls.join(', ')}) but the next turn answers ${responses.join(', ') || 'none'}`,
        );
      }
    }
    const prevCalls = (contents[i - 1]?.parts ?? []).filter((p) => p.functionCall).length;
    const own = c.parts.filter((p) => p.functionResponse).length;
    if (own > 0 && own !== prevCalls) out.push(`turn ${i}: ${own} function responses after ${prevCalls} calls`);
  });
  const system = payload.systemInstruction as { parts: Json[] } | undefined;
  if (system && (system.parts.length === 0 || system.parts.some((p) => !/\S/.test(p.text as string))))
    out.push('empty systemInstruction part');
  return out;
}

/** The violations of `payload` in `format` (GENERIC has no provider: none). */
export function payloadViolations(format: Format, payload: unknown): string[] {
  const p = payload as Json;
  switch (format) {
    case 'GENERIC':
      return [];
    case 'OPENAI_CHAT':
      return openAiChatViolations(p);
    case 'OPENAI_RESPONSES':
      return openAiResponsesViolations(p);
    case 'ANTHROPIC_MESSAGES':
      return anthropicViolations(p);
    case 'GEMINI':
      return geminiViolations(p);
  }
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && [...a].sort().join('\u0000') === [...b].sort().join('\u0000');
}
