import type { Plugin } from 'graphql-yoga';
import type { TextCaps } from '../domain/limits.js';
import { errorAt } from './errors.js';
import { GraphQLError } from 'graphql';

/** Codes graphql-yoga gives a refused request, which the contract spells BAD_USER_INPUT. */
const YOGA_CLIENT_CODES = new Set(['BAD_REQUEST', 'GRAPHQL_PARSE_FAILED', 'GRAPHQL_VALIDATION_FAILED']);

/**
 * The contract's form of an error the client caused, or null for one that must be masked.
 * graphql-js reports syntax, validation and coercion failures (a wrong enum, a missing required
 * variable, 2^31 for an Int, "Invalid global ID" from an argument's decoding) as GraphQL errors
 * without a code, created by graphql-js itself (no original error, or a GraphQL error as the
 * original): they are the client's and answer BAD_USER_INPUT. A GraphQL error wrapping anything
 * else (a failed invariant, a database error) is not.
 */
export function asClientError(error: unknown): GraphQLError | null {
  if (!(error instanceof GraphQLError)) return null;
  const original = error.originalError;
  if (original && !(original instanceof GraphQLError)) return null;
  const code = (original instanceof GraphQLError ? original.extensions.code : undefined) ?? error.extensions.code;
  const message = withClientIds(error.message);
  if (typeof code === 'string' && !YOGA_CLIENT_CODES.has(code)) {
    if (message === error.message) return error;
    return errorAt(message, error, error.extensions);
  }
  return errorAt(message, error, { ...error.extensions, code: 'BAD_USER_INPUT' });
}

const NODE_UUID =
  /\b(Session|Message|Turn|Attachment)\b([^.:"]{0,40}?)\b([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/gi;

/**
 * A message as the client may see it: a database id after the name of its type ("Turn 01a2…
 * was not found") becomes the global ID the client knows that object by. Applied to every error
 * that reaches a client, so no code path can leak an internal id into a message.
 */
export function withClientIds(message: string): string {
  return message.replace(NODE_UUID, (_m, type: string, between: string, uuid: string) => {
    const typename = type[0].toUpperCase() + type.slice(1).toLowerCase();
    return `${type}${between}${Buffer.from(`${typename}:${uuid.toLowerCase()}`).toString('base64')}`;
  });
}

const bodyTooLarge = (size: string, caps: TextCaps, multipart = false) =>
  new GraphQLError(
    multipart
      ? `The multipart request is ${size}; send at most ${caps.fileBytes} bytes a file, two full-size files a request.`
      : `The request body is ${size}; send long text in several calls (strings hold at most ${caps.stringLength} characters) and files with \`upload\` (multipart).`,
    // The body is not read to its end: the connection cannot carry another request.
    { extensions: { code: 'BAD_USER_INPUT', http: { status: 413, headers: { connection: 'close' } } } },
  );

/**
 * `request` with its body cut off past the cap while it is read (for a body sent without a
 * Content-Length: chunked), failing with the same refusal as a declared length over it (a
 * GraphQLError: the body parsers pass it on as is). As graphql-yoga's `maxRequestBodySize` does,
 * but only for a body without a length (one with a length is checked against it up front).
 */
function limitedBody(
  request: Request,
  caps: TextCaps,
  cap: number,
  fetchAPI: { Request: typeof Request; TransformStream: typeof TransformStream },
) {
  const body = request.body;
  if (!body) return request;
  const Transform = body instanceof ReadableStream ? globalThis.TransformStream : fetchAPI.TransformStream;
  let read = 0;
  return new fetchAPI.Request(request.url, {
    method: request.method,
    headers: request.headers,
    signal: request.signal,
    body: body.pipeThrough(
      new Transform({
        transform(chunk: Uint8Array, controller) {
          read += chunk.byteLength;
          if (read > cap) controller.error(bodyTooLarge(`more than ${cap} bytes`, caps, cap !== caps.requestBytes));
          else controller.enqueue(chunk);
        },
      }),
    ),
    // @ts-expect-error: a streamed request body needs it (not in the DOM types)
    duplex: 'half',
  });
}

/** A `Content-Length` header as a number: null when absent, NaN when it is not a length. */
export const declaredLength = (header: string | null | undefined): number | null =>
  header == null ? null : /^\d+$/.test(header) ? Number(header) : Number.NaN;

/** The body cap, shared by Yoga's path (`useRequestParseErrors`) and the HTTP fast path. */
export const withinBodyCap = (length: number, caps: TextCaps) => length <= caps.requestBytes;

/**
 * Caps request bodies (a multipart one at `multipartBytes`), and turns a request graphql-yoga cannot read (`variables=%7Bbad` on a GET, whose JSON.parse throws
 * a plain SyntaxError) into a 400 with BAD_USER_INPUT instead of a masked internal error.
 */
export function useRequestParseErrors(caps: TextCaps): Plugin {
  return {
    onRequestParse({ request, requestParser, setRequestParser, fetchAPI }) {
      const multipart = request.headers.get('content-type')?.toLowerCase().startsWith('multipart/') ?? false;
      const cap = multipart ? caps.multipartBytes : caps.requestBytes;
      const declared = request.headers.get('content-length');
      const length = declaredLength(declared);
      if (Number.isNaN(length)) {
        throw new GraphQLError('The Content-Length header is not a length.', {
          extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } },
        });
      }
      if (length !== null && length > cap) throw bodyTooLarge(`${length} bytes, more than ${cap}`, caps, multipart);
      if (!requestParser) return;
      setRequestParser(async (request) => {
        try {
          // With a Content-Length, Node's HTTP parser reads exactly that many bytes (checked above);
          // a body sent without one (chunked) is cut off while it is read, with the same refusal.
          return await requestParser(declared === null ? limitedBody(request, caps, cap, fetchAPI) : request);
        } catch (error) {
          const message = (error as Error)?.message ?? String(error);
          // Yoga's multipart parser answers busboy's limit with its own code: ours says what the cap is.
          if (/File size limit exceeded/.test(message)) {
            throw new GraphQLError(
              `A file is larger than ${caps.fileBytes} bytes, the cap on this server; it was refused as it arrived and nothing was stored.`,
              {
                extensions: { code: 'BAD_USER_INPUT', http: { status: 413, headers: { connection: 'close' } } },
              },
            );
          }
          if (error instanceof GraphQLError) throw error;
          throw new GraphQLError(`The request could not be read: ${(error as Error)?.message ?? String(error)}`, {
            extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } },
          });
        }
      });
    },
  };
}
