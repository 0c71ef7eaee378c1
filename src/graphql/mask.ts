import { randomUUID } from 'node:crypto';
import type { ExecutionResult } from 'graphql';
import { asServiceUnavailable } from '../db/faults.js';
import { Prisma } from '../generated/prisma/client.js';
import type { Logger } from '../logger.js';
import { GraphQLError } from 'graphql';
import { asClientError } from './client-errors.js';
import { DomainError, domainErrorOf, toGraphQLError } from './errors.js';

/** `Retry-After` of a request refused for an outage: a short wait, the database usually returns within seconds. */
export const OUTAGE_RETRY_AFTER_SECONDS = 2;

/**
 * What a client sees of an error (Yoga's `maskedErrors`, the fast path, and the stream mask of
 * WebSocket subscriptions): a domain refusal with its code, a client error as BAD_USER_INPUT, an
 * outage as a retryable SERVICE_UNAVAILABLE, anything else as INTERNAL_SERVER_ERROR with an id
 * under which the cause is logged. An outage that refused the request before execution (no
 * `path`: the key check, the request context) carries Yoga's `http` extension: HTTP 503 (with `Retry-After`, `useOutageRetryAfter`)
 * for a client that accepts `application/graphql-response+json`, which the GraphQL-over-HTTP spec
 * allows when no execution began (`spec: true`: Yoga keeps 200 for `application/json`, and strips
 * the extension from the body).
 */
export function createErrorMask(logger: Logger): (error: unknown) => GraphQLError {
  return (error) => {
    const located = error instanceof GraphQLError ? error : undefined;
    const original = located ? located.originalError : error;
    const refusal = domainErrorOf(error);
    if (refusal && refusal.code !== 'SERVICE_UNAVAILABLE') {
      const refused = toGraphQLError(refusal, located);
      return asClientError(refused) ?? refused;
    }
    const clientError = refusal ? null : asClientError(error);
    if (clientError) return clientError;
    // A row read after the write that made it, deleted in between by another request.
    if (original instanceof Prisma.PrismaClientKnownRequestError && original.code === 'P2025') {
      return new GraphQLError('The object was not found; it may just have been deleted.', {
        path: located?.path,
        extensions: { code: 'NOT_FOUND' },
      });
    }
    const errorId = randomUUID();
    const outage = refusal ?? asServiceUnavailable(original ?? error);
    if (outage) {
      // Retryable for the client; the cause (kept off the response) goes to the log under errorId.
      logger.warn('dependency unavailable', { errorId, error: (outage as { cause?: unknown }).cause ?? original ?? error });
      const refused = toGraphQLError(new DomainError(outage.code, outage.message, { ...outage.details, errorId }), located);
      if (!located?.path) {
        // No headers here: Yoga would send them with the 200 too (`useOutageRetryAfter` adds Retry-After to the 503).
        refused.extensions.http = { status: 503, spec: true };
      }
      return refused;
    }
    logger.error('unexpected error', { errorId, error: original ?? error });
    return new GraphQLError(`Unexpected error (id ${errorId}); it has been logged.`, {
      extensions: { code: 'INTERNAL_SERVER_ERROR', errorId },
    });
  };
}

/**
 * Masking for WebSocket subscriptions, which run outside envelop (and so outside its masking
 * plugin): a shared result with errors is masked once (the plugin masked it, and logged its
 * unexpected errors, once per subscriber), and an AbortError passes as it is (as Yoga lets it).
 * The shape of live delivery's `StreamMask`.
 */
export function createStreamMask(maskError: (error: unknown) => GraphQLError) {
  const maskedResults = new WeakMap<ExecutionResult, ExecutionResult>();
  return {
    result(result: ExecutionResult): ExecutionResult {
      if (!result.errors?.length) return result;
      let masked = maskedResults.get(result);
      if (!masked) maskedResults.set(result, (masked = { ...result, errors: result.errors.map(maskError) }));
      return masked;
    },
    error: (error: unknown): unknown => (error instanceof Error && error.name === 'AbortError' ? error : maskError(error)),
  };
}
