import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { ExecutionResult } from 'graphql';
import type { YogaServerInstance } from 'graphql-yoga';
import { type GraphQLError, getOperationAST } from 'graphql';
import { processRegularResult } from 'graphql-yoga';
import { sendNodeResponse } from '@whatwg-node/server';
import { isPlainObject } from '../domain/assembly/turn-context.js';
import { declaredLength, withinBodyCap } from '../graphql/client-errors.js';
import type { TextCaps } from '../domain/limits.js';
import { isJsonBodyType, rateLimitedResponse, takeRate } from './guards.js';
import type { RateLimiter } from './rate-limit.js';

/**
 * The server context a request handed back to Yoga carries: the Node request and response (as
 * Yoga's own Node adapter passes them), and `rateCounted` when the fast path has already counted
 * the request against its rate limit (so `useRateLimit` does not count it twice).
 */
export interface FastPathServerContext {
  req: IncomingMessage;
  res: ServerResponse;
  rateCounted?: boolean;
}

export interface FastPathStats {
  /** Requests this path answered itself. */
  answered: number;
  /** Requests it read and then handed to Yoga (a body or an operation it does not take). */
  handedOver: number;
}

export interface FastPathOptions {
  yoga: YogaServerInstance<FastPathServerContext, object>;
  endpoint: string;
  limiter: RateLimiter;
  /** The body cap: a longer declared length goes to Yoga, which refuses it. */
  caps: TextCaps;
  /** What a client sees of an error `execute` threw (the app's masking). */
  maskError: (error: unknown) => GraphQLError;
  /** Counts the result of a request this path answers, as the metrics' `onResultProcess` counts Yoga's (ServerMetrics). */
  countResult?: (result: ExecutionResult) => void;
  /**
   * Trusted documents (TRUSTED_DOCUMENTS) on: the manifest's document a request names by
   * `documentId` or `extensions.persistedQuery` (null: it names none, or one the manifest lacks).
   * This path then takes only requests without document text that name a listed document, and
   * runs that document, as Yoga's persisted operations plugin would (`TrustedDocuments`); every
   * other request (text, an unknown id) is Yoga's, which refuses or allows it.
   */
  trustedDocument?: (params: Record<string, unknown>) => string | null;
}

/** Writes a Fetch `Response` to Node's response as Yoga's own Node adapter does (one `writeHead`). */
const send = (response: Response, res: ServerResponse, req: IncomingMessage | undefined) =>
  sendNodeResponse(response, res, req as IncomingMessage, true);

/** The largest write of a response body (see `writeInChunks`). */
const WRITE_CHUNK_BYTES = 256 * 1024;

/**
 * A 200 JSON body written a chunk at a time, the next one only once the socket has taken the last
 * (`drain`): each completed write is progress the idle rule (`trackConnections`) sees, so a client
 * that reads a large answer slowly is not mistaken for one that stopped reading.
 */
function writeInChunks(res: ServerResponse, body: Buffer) {
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length });
  let offset = 0;
  const pump = () => {
    while (offset + WRITE_CHUNK_BYTES < body.length) {
      const more = res.write(body.subarray(offset, (offset += WRITE_CHUNK_BYTES)));
      if (!more) return void res.once('drain', pump);
    }
    res.end(body.subarray(offset));
  };
  pump();
}

/** The JSON body types this path reads (as UTF-8): a subset of what `useJsonPostsOnly` accepts. */
const UTF8_JSON_TYPE = /^application\/json\s*(;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;
const PARAM_KEYS = new Set(['query', 'variables', 'operationName', 'extensions']);

/**
 * The request's operation, if it is one this path takes: a JSON object of GraphQL-over-HTTP's keys;
 * with trusted documents, one that names a listed document (`documentId` allowed) and sends no text.
 */
function paramsOf(
  body: string,
  trustedDocument: FastPathOptions['trustedDocument'],
): { query: string; variables?: Record<string, unknown> | null; operationName?: string | null } | null {
  let params: unknown;
  try {
    params = JSON.parse(body);
  } catch {
    return null;
  }
  if (!isPlainObject(params)) return null;
  for (const key in params) if (!PARAM_KEYS.has(key) && !(trustedDocument && key === 'documentId')) return null;
  if (trustedDocument) {
    if (params.query !== undefined && params.query !== null && params.query !== '') return null;
    const document = trustedDocument(params);
    if (document === null) return null;
    params = { ...params, query: document };
  }
  if (!isPlainObject(params) || typeof params.query !== 'string') return null;
  const { variables, operationName, extensions } = params;
  if (variables != null && !isPlainObject(variables)) return null;
  if (operationName != null && typeof operationName !== 'string') return null;
  if (extensions != null && !isPlainObject(extensions)) return null;
  return params as { query: string; variables?: Record<string, unknown> | null; operationName?: string | null };
}

/** Just the `Headers.get` the request context function and envelop's plugins read, over Node's headers. */
class NodeHeaders {
  constructor(private readonly headers: IncomingHttpHeaders) {}
  get(name: string): string | null {
    const value = this.headers[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(', ') : value;
  }
}

/**
 * The common request, run without Yoga's HTTP layer: a JSON POST of one query or mutation to the
 * GraphQL endpoint, from a client that sends no `Origin` (a server, an agent runtime, a script; a
 * browser's request takes Yoga's path, with its CORS) and accepts `application/json`. Yoga builds a
 * Fetch `Request` and `Response` around every request and runs its request pipeline; here the body
 * goes straight to envelop, the same `parse`, `validate`, context and `execute`
 * (with every envelop plugin: caches, limits, masking, compiled queries) that Yoga would run.
 * `assertFastPathHonours` keeps that true for plugins added later. `deviations.httpFastPath` off
 * (`buildApp`) leaves every request to Yoga.
 *
 * Anything else is Yoga's, so every refusal keeps Yoga's exact status and body:
 * - decided from the headers, before the body is read: another method, path, content type,
 *   `Accept`, an `Origin`, a body without a length or longer than the cap, a compressed body;
 * - decided once the body is read: a body that is not one JSON object of `query`, `variables`,
 *   `operationName` and `extensions` is handed to Yoga as a Fetch request (`yoga.handleRequest`)
 *   before anything ran;
 * - after the rate limit (counted here, as Yoga counts first): a syntax or validation error, a
 *   subscription, a request context that cannot be made (a bad key, the database down) are handed over
 *   marked `rateCounted`, before anything was executed.
 * A result with errors (or `extensions`) is formatted by Yoga's own `processRegularResult`, and a
 * request over the rate limit gets the same 429 as Yoga's `useRateLimit` gives.
 */
export function createHttpFastPath(options: FastPathOptions) {
  const { yoga, endpoint, limiter, caps, maskError, countResult, trustedDocument } = options;
  const stats: FastPathStats = { answered: 0, handedOver: 0 };

  /**
   * Whether the headers alone allow this path to take the request. Every request it takes passes
   * each HTTP guard of Yoga's path, checked with the guard's own function: only the GraphQL
   * endpoint (never the health endpoints), a declared length within the body cap, a JSON body
   * type (so CSRF prevention's preflight condition holds), no `Origin` (no CORS).
   */
  const takes = (req: IncomingMessage): boolean => {
    if (req.method !== 'POST' || req.url !== endpoint) return false;
    const { headers } = req;
    if (headers.origin !== undefined || headers['transfer-encoding'] !== undefined || headers['content-encoding'] !== undefined) {
      return false;
    }
    const length = declaredLength(headers['content-length']);
    if (length === null || Number.isNaN(length) || !withinBodyCap(length, caps)) return false;
    const type = headers['content-type'];
    if (!isJsonBodyType(type) || !UTF8_JSON_TYPE.test(type ?? '')) return false;
    const accept = headers.accept;
    return accept === undefined || accept === '*/*' || accept === 'application/json';
  };

  const handOver = (req: IncomingMessage, res: ServerResponse, body: Buffer, rateCounted: boolean) => {
    stats.handedOver++;
    const headers: [string, string][] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i], req.rawHeaders[i + 1]]);
    const request = new yoga.fetchAPI.Request(`http://${req.headers.host ?? 'localhost'}${req.url}`, {
      method: 'POST',
      headers,
      body: new Uint8Array(body) as Uint8Array<ArrayBuffer>,
    });
    const serverContext: FastPathServerContext = { req, res, rateCounted };
    return Promise.resolve(yoga.handleRequest(request, serverContext)).then((response) => send(response, res, req));
  };

  const answer = (res: ServerResponse, result: ExecutionResult) => {
    stats.answered++;
    countResult?.(result);
    // Already answered: the shutdown's grace ended first (503), or the client is gone.
    if (res.writableEnded || res.destroyed) return;
    if (result.errors === undefined && result.extensions === undefined) {
      // What processRegularResult makes of a result without errors: 200, and the same JSON.
      const body = ((result as { stringify?: (r: ExecutionResult) => string }).stringify ?? JSON.stringify)(result);
      if (body.length <= WRITE_CHUNK_BYTES / 3) {
        res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
        res.end(body);
      } else writeInChunks(res, Buffer.from(body));
      return;
    }
    return send(processRegularResult(result, yoga.fetchAPI, 'application/json'), res, undefined);
  };

  async function run(req: IncomingMessage, res: ServerResponse, body: Buffer) {
    const params = paramsOf(body.toString('utf8'), trustedDocument);
    if (!params) return handOver(req, res, body, false);
    // Counted before anything else runs, as Yoga counts in its first hook: a client over its limit
    // costs no parsing. From here on a request handed over is marked as counted.
    const decision = await takeRate(limiter, req.headers.authorization, req.socket.remoteAddress);
    if (!decision.allowed) {
      stats.answered++;
      return send(rateLimitedResponse(yoga.fetchAPI, decision.retryAfterSeconds), res, undefined);
    }
    const request = { method: 'POST', url: req.url, headers: new NodeHeaders(req.headers) };
    // The initial context Yoga would give envelop: its server context, the request and the params.
    const context = { req, res, request, params };
    const { parse, validate, contextFactory, execute, schema } = yoga.getEnveloped(context);
    let document: ReturnType<typeof parse>;
    try {
      document = parse(params.query);
    } catch {
      return handOver(req, res, body, true);
    }
    // Every request runs envelop's validate, so every plugin's onValidate (and a rule it adds for
    // this request's context) sees it; caching a verdict is the validation plugins' own business.
    if (validate(schema, document).length > 0) return handOver(req, res, body, true);
    if (getOperationAST(document, params.operationName)?.operation === 'subscription') return handOver(req, res, body, true);
    let contextValue: unknown;
    try {
      contextValue = await contextFactory();
    } catch {
      return handOver(req, res, body, true);
    }
    let result: ExecutionResult;
    try {
      result = (await execute({
        schema,
        document,
        contextValue,
        variableValues: params.variables,
        operationName: params.operationName,
      })) as ExecutionResult;
    } catch (error) {
      result = { errors: [maskError(error)] };
    }
    return answer(res, result);
  }

  return {
    stats,
    /** Takes the request and answers it (true), or leaves it untouched for Yoga (false). */
    handle(req: IncomingMessage, res: ServerResponse): boolean {
      if (!takes(req)) return false;
      const chunks: Buffer[] = [];
      // A client gone before its body ended: nothing to answer (without a listener, the stream's
      // error would be thrown).
      req.on('error', () => res.destroy());
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
        run(req, res, body).catch((error: unknown) => {
          // Every refusal above is answered; only the unexpected lands here (logged by maskError).
          if (!res.headersSent) {
            res.writeHead(500, { 'Content-Type': 'application/json; charset=utf-8' });
            res.end(JSON.stringify({ errors: [maskError(error).toJSON()] }));
          } else res.destroy();
        });
      });
      return true;
    },
  };
}
