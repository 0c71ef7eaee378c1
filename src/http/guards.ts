import type { IncomingMessage } from 'node:http';
import type { Plugin } from 'graphql-yoga';
import { hashApiKey } from '../auth/workspace-auth.js';
import type { Database } from '../db/database.js';
import type { EventBus } from '../pubsub/bus.js';
import { OUTAGE_RETRY_AFTER_SECONDS } from '../graphql/mask.js';
import { fastPathCovers } from './fast-path-contract.js';
import type { RateLimiter } from './rate-limit.js';
import { NoSchemaIntrospectionCustomRule } from 'graphql';

type NodeServerContext = { req?: IncomingMessage; rateCounted?: boolean };

const json = (fetchAPI: { Response: typeof Response }, status: number, body: unknown, headers: Record<string, string> = {}) =>
  new fetchAPI.Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

/** Rejects when `promise` has not settled within `ms`: a readiness probe (or a scrape) must answer at once. */
export function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  promise.catch(() => {});
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * `Retry-After` on the GraphQL endpoint's 503 (an outage refused before execution, for a client
 * that accepts `application/graphql-response+json`: `createErrorMask`), and only there: the same
 * refusal answered 200 as `application/json` carries none. The fast path never answers 503 (such a
 * request is handed to Yoga), so its `onResponse` is covered.
 */
export function useOutageRetryAfter(endpoint: string): Plugin {
  return fastPathCovers<Plugin>(
    {
      onResponse({ request, response }) {
        if (response.status === 503 && new URL(request.url).pathname === endpoint && !response.headers.has('retry-after')) {
          response.headers.set('retry-after', String(OUTAGE_RETRY_AFTER_SECONDS));
        }
      },
    },
    ['onResponse'],
  );
}

/**
 * `/healthz` (the process answers) and `/readyz` (per dependency), served by Yoga itself so that
 * `yoga.fetch` reaches them too. Readiness: database down, or the server stopping, is 503
 * (`unavailable` / `stopping`); Redis down is 200 `degraded`: queries and mutations still work and
 * events stay in the log for replay, so taking every instance out of the load balancer for it would
 * turn a partial outage into a full one. So is a read replica down or lagging (`replicas`): the
 * primary serves what it would have.
 */
export function useHealthEndpoints(deps: { db: Database; bus: EventBus; timeoutMs: number; stopping: () => boolean }): Plugin {
  const check = (ping: () => Promise<void>) =>
    within(ping(), deps.timeoutMs).then(
      () => 'ok',
      (error: Error) => `error: ${error.message}`,
    );
  // The fast path takes only POSTs to the GraphQL endpoint: never a health endpoint.
  return fastPathCovers<Plugin>(
    {
      async onRequest({ url, fetchAPI, endResponse }) {
        if (url.pathname === '/healthz') return endResponse(json(fetchAPI, 200, { status: 'ok' }));
        if (url.pathname !== '/readyz') return;
        const [database, pubsub] = await Promise.all([check(() => deps.db.ping()), check(() => deps.bus.ping())]);
        // A replica down or lagging is skipped (the primary serves its reads): degraded, not unavailable.
        const replicas = deps.db.replicas?.status();
        const degraded = pubsub !== 'ok' || (replicas !== undefined && !replicas.ok);
        const status = deps.stopping() ? 'stopping' : database !== 'ok' ? 'unavailable' : degraded ? 'degraded' : 'ok';
        const body = { status, database, pubsub, ...(replicas ? { replicas: replicas.replicas } : {}) };
        endResponse(json(fetchAPI, status === 'ok' || status === 'degraded' ? 200 : 503, body));
      },
    },
    ['onRequest'],
  );
}

/** Who a request counts against: its API key (hashed) if it sends one, else its IP address. */
export function rateIdentity(authorization: string | null | undefined, remoteAddress: string | undefined): string {
  const key = authorization && /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
  return key ? `key:${hashApiKey(key).slice(0, 32)}` : `ip:${remoteAddress ?? 'unknown'}`;
}

/**
 * The one rate-limit check of every transport (Yoga's `useRateLimit`, the HTTP fast path, a
 * graphql-ws subscribe): counts the request against its identity and says whether it may go on.
 */
export const takeRate = (limiter: RateLimiter, authorization: string | null | undefined, remoteAddress: string | undefined) =>
  limiter.take(rateIdentity(authorization, remoteAddress));

/** The key from the Fetch request, graphql-ws `connectionParams`, or the WebSocket upgrade request's header. */
export function authorizationFrom(
  request: { headers: { get(name: string): string | null } } | undefined,
  connectionParams: Record<string, unknown> | undefined,
  upgradeHeader?: string | null,
): string | null {
  const header = request?.headers.get('authorization');
  if (header) return header;
  const fromParams = connectionParams?.Authorization ?? connectionParams?.authorization;
  if (typeof fromParams === 'string') return fromParams;
  return upgradeHeader ?? null;
}

export const rateLimitedBody = (retryAfterSeconds: number) => ({
  message: `Too many requests; retry after ${retryAfterSeconds} s.`,
  extensions: { code: 'RATE_LIMITED' as const, retryAfter: retryAfterSeconds },
});

/** The 429 a request over the limit gets: `Retry-After`, and RATE_LIMITED with the same delay. */
export const rateLimitedResponse = (fetchAPI: { Response: typeof Response }, retryAfterSeconds: number) =>
  json(fetchAPI, 429, { errors: [rateLimitedBody(retryAfterSeconds)] }, { 'retry-after': String(retryAfterSeconds) });

/**
 * Every request to the GraphQL endpoint counts; over the limit: 429, `Retry-After`, RATE_LIMITED.
 * A request the HTTP fast path has counted already and hands over (`rateCounted`) is not counted again.
 */
export function useRateLimit(limiter: RateLimiter, endpoint: string): Plugin<Record<string, unknown>, NodeServerContext> {
  // The fast path counts every request it takes with the same `takeRate`, and marks one it hands over.
  return fastPathCovers<Plugin<Record<string, unknown>, NodeServerContext>>(
    {
      async onRequest({ request, url, fetchAPI, endResponse, serverContext }) {
        if (url.pathname !== endpoint || request.method === 'OPTIONS' || serverContext?.rateCounted) return;
        const decision = await takeRate(limiter, request.headers.get('authorization'), serverContext?.req?.socket?.remoteAddress);
        if (!decision.allowed) endResponse(rateLimitedResponse(fetchAPI, decision.retryAfterSeconds));
      },
    },
    ['onRequest'],
  );
}

const JSON_TYPES = ['application/json', 'application/graphql-response+json'];

/** Whether a body is a multipart request (file uploads). */
export const isMultipart = (contentType: string | null | undefined) =>
  (contentType ?? '').split(';')[0].trim().toLowerCase() === 'multipart/form-data';

/** Whether a POST body of this `Content-Type` is accepted (`useJsonPostsOnly`; the fast path takes a subset). */
export const isJsonBodyType = (contentType: string | null | undefined) =>
  JSON_TYPES.includes((contentType ?? '').split(';')[0].trim().toLowerCase());

/**
 * POST bodies must be JSON, or multipart (file uploads, the GraphQL multipart request spec). A
 * browser can send a form-urlencoded, multipart or text/plain POST to any site without a CORS
 * preflight: the other two are refused here, and a multipart POST must carry a header a form cannot
 * set (CSRF prevention, which runs after this), so no page can write in keyless mode.
 */
export function useJsonPostsOnly(endpoint: string): Plugin {
  // The fast path takes only bodies `isJsonBodyType` accepts.
  return fastPathCovers<Plugin>(
    {
      onRequest({ request, url, fetchAPI, endResponse }) {
        if (url.pathname !== endpoint || request.method !== 'POST') return;
        const type = request.headers.get('content-type');
        if (isJsonBodyType(type) || isMultipart(type)) return;
        endResponse(
          json(fetchAPI, 415, {
            errors: [
              {
                message: 'POST bodies must be application/json (or multipart/form-data for file uploads).',
                extensions: { code: 'BAD_USER_INPUT' },
              },
            ],
          }),
        );
      },
    },
    ['onRequest'],
  );
}

/** Refuses `__schema` and `__type` (GRAPHIQL=false); `__typename` stays allowed. */
export function useNoIntrospection(): Plugin {
  return {
    onValidate({ addValidationRule }) {
      addValidationRule(NoSchemaIntrospectionCustomRule);
    },
  };
}
