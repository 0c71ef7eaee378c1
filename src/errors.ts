import { GraphQLError } from 'graphql';

/** Every `extensions.code` a client can receive for a refused operation (see CONTRACT.md). */
export type ErrorCode =
  | 'UNAUTHENTICATED'
  | 'NOT_FOUND'
  | 'BAD_USER_INPUT'
  | 'FORK_INDEX_OUT_OF_RANGE'
  | 'FORK_POINT_NOT_USER_MESSAGE'
  | 'SESSION_HAS_FORKS'
  | 'MESSAGE_IMMUTABLE'
  | 'TURN_ALREADY_ACTIVE'
  | 'TURN_NOT_ACTIVE'
  | 'CONTEXT_BUDGET_TOO_SMALL'
  | 'QUERY_TOO_COMPLEX'
  | 'RATE_LIMITED';

/**
 * An expected refusal. The domain layer throws these; the schema layer lets them through
 * unmasked as GraphQL errors carrying `extensions.code`. Anything else is masked and logged.
 */
export class DomainError extends GraphQLError {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message, { extensions: { code, ...details } });
    this.code = code;
  }
}

export const notFound = (what: string, id?: string) =>
  new DomainError('NOT_FOUND', id ? `${what} ${id} was not found.` : `${what} was not found.`);

export const badInput = (message: string, details?: Record<string, unknown>) =>
  new DomainError('BAD_USER_INPUT', message, details);
