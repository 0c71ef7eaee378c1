/**
 * The one place domain errors become GraphQL errors (Yoga's maskError, the WebSocket request context, and
 * validation rules call it). The domain's classes are re-exported so callers outside the domain
 * import errors from one module.
 */
import { DomainError } from '../domain/errors.js';
import { GraphQLError } from 'graphql';

export { badInput, DomainError, notFound, type ErrorCode } from '../domain/errors.js';

/** A refusal as the client sees it: the message, `extensions.code` and the details, at `located`'s place. */
export function toGraphQLError(error: DomainError, located?: GraphQLError): GraphQLError {
  return errorAt(error.message, located, { code: error.code, ...error.details });
}

/** A GraphQL error with `message` and `extensions` at `located`'s place in the document and the result. */
export function errorAt(message: string, located: GraphQLError | undefined, extensions: Record<string, unknown>): GraphQLError {
  return new GraphQLError(message, {
    nodes: located?.nodes,
    source: located?.source,
    positions: located?.positions,
    path: located?.path,
    extensions,
  });
}

/** The domain error behind `error` (thrown as is, or wrapped by graphql-js with its path), if any. */
export function domainErrorOf(error: unknown): DomainError | null {
  if (error instanceof DomainError) return error;
  if (error instanceof GraphQLError && error.originalError instanceof DomainError) return error.originalError;
  return null;
}
