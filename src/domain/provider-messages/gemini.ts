/**
 * Gemini generateContent: request `contents` (and `systemInstruction`) and a
 * `GenerateContentResponse` (its first candidate). A part keeps its `thoughtSignature` on the part
 * it came with (`providerMetadata.google.thoughtSignature`, never added to one that had none) and
 * its other keys (`google.extra`). Gemini pairs calls and responses by name and position, and gives
 * a call an id only sometimes: a call without one is stored with the call id `<name>_<k>` (the k-th
 * call of that name in its turn), and a functionResponse without one answers `<name>_<k>` (the k-th
 * response of that name in its turn), so a response appended in a later call finds its call without
 * a read. Such ids repeat across turns, which the formats that need unique ids map
 * (assembly/provider-rules.ts); GEMINI sends no id it was not given.
 *
 * A user turn's images and PDFs are attachments (media.ts): `inlineData` as data (URL-safe base64,
 * which Gemini also takes, is stored as standard base64), `fileData` with a Files API URI
 * (`https://generativelanguage.googleapis.com/…/files/…`) as a Google provider file by that URI,
 * with another https URI as the URL. Other types (audio, video, text), other URIs (`gs://`), and
 * media in a model turn (which no format sends back as an attachment) stay provider parts.
 */
import { mediaKindOf } from '../assembly/media-rules.js';
import { badInput } from '../errors.js';
import type { PartInput } from '../parts.js';
import {
  array,
  at,
  count,
  isObject,
  type Json,
  MessageList,
  metadata,
  object,
  optionalString,
  type ProviderRead,
  usageOf,
  string,
  without,
} from './common.js';
import { attachmentPart, httpsUrl, MediaNames, mediaType } from './media.js';

const googleMeta = (fields: Json) => metadata('google', fields);

function signedFields(part: Json, where: string, modeled: readonly string[]): Json {
  const extra = without(part, [...modeled, 'thoughtSignature']);
  return { thoughtSignature: optionalString(part.thoughtSignature, at(where, 'thoughtSignature')), ...(extra ? { extra } : {}) };
}

function responseContent(response: Json): { content: string; isError: boolean } {
  const keys = Object.keys(response);
  if (keys.length === 1 && typeof response.output === 'string') return { content: response.output, isError: false };
  if (keys.length === 1 && typeof response.error === 'string') return { content: response.error, isError: true };
  return { content: JSON.stringify(response), isError: false };
}

/** A Files API file's URI: what Gemini gives a file uploaded with the Files API. */
const FILES_API_URI = /^https:\/\/generativelanguage\.googleapis\.com\/[^/?#]+\/files\/[^/?#]+$/;

/**
 * Base64 as the attachment checks take it: standard alphabet, padded. Gemini's JSON also takes the
 * URL-safe alphabet and no padding (proto3 JSON for bytes); anything else is left for the checks to
 * refuse.
 */
function standardBase64(data: string): string {
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(data)) return data;
  const standard = data.replace(/-/g, '+').replace(/_/g, '/');
  return standard.length % 4 === 0 ? standard : standard + '='.repeat(4 - (standard.length % 4));
}

/**
 * An `inlineData` or `fileData` part of a user turn as an attachment part, or null when it stays a
 * provider part (not an image or a PDF, a URI that is not https, keys it cannot keep).
 */
function mediaPart(part: Json, where: string, names: MediaNames): PartInput | null {
  const key = isObject(part.inlineData) ? 'inlineData' : isObject(part.fileData) ? 'fileData' : null;
  if (key === null) return null;
  const body = part[key] as Json;
  const dWhere = at(where, key);
  if (Object.keys(body).some((k) => !['mimeType', key === 'inlineData' ? 'data' : 'fileUri'].includes(k))) return null;
  const mimeType = mediaType(string(body.mimeType, at(dWhere, 'mimeType')));
  const kind = mediaKindOf(mimeType);
  if (kind === null) return null;
  const fields = metadata('google', signedFields(part, where, [key]), false);
  if (key === 'inlineData') {
    const data = standardBase64(string(body.data, at(dWhere, 'data')));
    return attachmentPart(names.next(kind, mimeType, null), mimeType, { data, where: at(dWhere, 'data') }, at(dWhere, 'mimeType'), fields);
  }
  const uri = httpsUrl(string(body.fileUri, at(dWhere, 'fileUri')));
  if (uri === null) return null;
  const source = FILES_API_URI.test(uri) ? { providerFile: { provider: 'google' as const, fileId: uri } } : { url: uri };
  return attachmentPart(names.next(kind, mimeType, null), mimeType, source, at(dWhere, 'mimeType'), fields);
}

/** The call id of the k-th call (or response) named `name` in its turn, for parts without an id. */
const positionalId = (name: string, k: number) => `${name}_${k}`;

class GeminiReader {
  readonly list = new MessageList();
  /** Calls (or responses) of each name seen in the current turn. */
  private seen = new Map<string, number>();

  private nth(name: string): number {
    const k = (this.seen.get(name) ?? 0) + 1;
    this.seen.set(name, k);
    return k;
  }

  /** Names of the current turn's attachments. */
  private names = new MediaNames();

  content(value: unknown, where: string) {
    this.seen = new Map();
    this.names = new MediaNames();
    const content = object(value, where);
    const role = content.role ?? 'user';
    if (role !== 'user' && role !== 'model') throw badInput(`${at(where, 'role')} must be "user" or "model".`);
    const pWhere = at(where, 'parts');
    array(content.parts, pWhere).forEach((p, i) => this.part(object(p, at(pWhere, i)), at(pWhere, i), role === 'model'));
    this.list.flush();
  }

  private part(part: Json, where: string, model: boolean) {
    if (typeof part.text === 'string') {
      const fields = signedFields(part, where, ['text', 'thought']);
      if (part.thought === true) {
        if (!model) throw badInput(`${where}: a thought belongs in a "model" turn.`);
        this.list.add('ASSISTANT', { reasoning: { text: part.text, providerMetadata: googleMeta(fields) } });
      } else {
        const extra =
          part.thought === undefined ? fields : { ...fields, extra: { ...(fields.extra as Json | undefined), thought: part.thought } };
        this.list.add(model ? 'ASSISTANT' : 'USER', { text: { text: part.text, providerMetadata: googleMeta(extra) } });
      }
    } else if (isObject(part.functionCall)) {
      if (!model) throw badInput(`${where}: a functionCall belongs in a "model" turn.`);
      const call = part.functionCall;
      const cWhere = at(where, 'functionCall');
      const name = string(call.name, at(cWhere, 'name'));
      const id = optionalString(call.id, at(cWhere, 'id'));
      const k = this.nth(name);
      const callId = id ?? positionalId(name, k);
      const args = call.args === undefined ? {} : object(call.args, at(cWhere, 'args'));
      this.list.add('ASSISTANT', {
        toolCall: {
          callId,
          name,
          argumentsJson: JSON.stringify(args),
          providerMetadata: googleMeta({ ...signedFields(part, where, ['functionCall']), id }),
        },
      });
    } else if (isObject(part.functionResponse)) {
      if (model) throw badInput(`${where}: a functionResponse belongs in a "user" turn.`);
      const fr = part.functionResponse;
      const rWhere = at(where, 'functionResponse');
      const name = string(fr.name, at(rWhere, 'name'));
      const id = optionalString(fr.id, at(rWhere, 'id'));
      const response = object(fr.response ?? {}, at(rWhere, 'response'));
      const { content, isError } = responseContent(response);
      const k = this.nth(name);
      const callId = id ?? positionalId(name, k);
      const plain = Object.keys(response).length === 1 && (typeof response.output === 'string' || typeof response.error === 'string');
      this.list.add('TOOL', {
        toolResult: {
          callId,
          content,
          isError,
          providerMetadata: googleMeta({ ...signedFields(part, where, ['functionResponse']), id, ...(plain ? {} : { response }) }),
        },
      });
    } else {
      if (Object.keys(part).length === 0) throw badInput(`${where} is an empty part.`);
      const media = model ? null : mediaPart(part, where, this.names);
      this.list.add(model ? 'ASSISTANT' : 'USER', media ?? { providerPart: { provider: 'google', data: part } });
    }
  }
}

/** Reads request `contents` (or a request body with `contents` and `systemInstruction`). */
export function readGeminiContents(value: unknown, where: string): ProviderRead {
  const reader = new GeminiReader();
  let contents = value;
  if (isObject(value)) {
    const system = value.systemInstruction;
    if (typeof system === 'string') reader.list.add('SYSTEM', { text: { text: system } });
    else if (system !== undefined) {
      const sWhere = at(at(where, 'systemInstruction'), 'parts');
      array(object(system, at(where, 'systemInstruction')).parts, sWhere).forEach((p, i) =>
        reader.list.add('SYSTEM', { text: { text: string(object(p, at(sWhere, i)).text, at(at(sWhere, i), 'text')) } }),
      );
    }
    reader.list.flush();
    contents = value.contents;
    where = at(where, 'contents');
  }
  array(contents, where).forEach((c, i) => reader.content(c, at(where, i)));
  return { messages: reader.list.done(where), usage: null };
}

/** Reads a `GenerateContentResponse`: its first candidate's content, and its usage. */
export function readGeminiResponse(value: unknown, where: string): ProviderRead {
  const response = object(value, where);
  const candidates = array(response.candidates, at(where, 'candidates'));
  if (candidates.length === 0) throw badInput(`${at(where, 'candidates')} is empty: nothing to store.`);
  const cWhere = at(at(where, 'candidates'), 0);
  const reader = new GeminiReader();
  reader.content({ role: 'model', ...object(object(candidates[0], cWhere).content, at(cWhere, 'content')) }, at(cWhere, 'content'));
  const usage = isObject(response.usageMetadata) ? response.usageMetadata : {};
  const cached = count(usage.cachedContentTokenCount);
  return {
    messages: reader.list.done(cWhere),
    usage: usageOf(
      {
        inputTokens: Math.max(0, count(usage.promptTokenCount) - cached),
        outputTokens: count(usage.candidatesTokenCount) + count(usage.thoughtsTokenCount),
        cacheReadTokens: cached,
        cacheWriteTokens: 0,
      },
      response.modelVersion,
      response.responseId,
    ),
  };
}
