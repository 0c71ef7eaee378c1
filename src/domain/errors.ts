/** Every `extensions.code` a client can receive for a refused operation (see CONTRACT.md). */
export type ErrorCode =
  | 'UNAUTHENTICATED'
  | 'NOT_FOUND'
  | 'BAD_USER_INPUT'
  | 'FORK_INDEX_OUT_OF_RANGE'
  | 'FORK_POINT_NOT_USER_MESSAGE'
  | 'FORK_POINT_IN_SUB_SESSION'
  | 'FORK_POINT_IN_TOOL_ROUND'
  | 'REGENERATE_NOT_ASSISTANT_MESSAGE'
  | 'SESSION_HAS_FORKS'
  | 'MESSAGE_IMMUTABLE'
  | 'TURN_ALREADY_ACTIVE'
  | 'TURN_NOT_ACTIVE'
  | 'CONTEXT_BUDGET_TOO_SMALL'
  | 'QUERY_TOO_COMPLEX'
  | 'RATE_LIMITED'
  | 'SERVICE_UNAVAILABLE'
  | 'FORBIDDEN'
  | 'EVENTS_EXPIRED';

/**
 * An expected refusal, with its contract code and the details a client can act on. Plain data:
 * the schema boundary (src/graphql/errors.ts, called from Yoga's maskError) maps it to a GraphQL error
 * carrying `extensions.code`; anything else is masked and logged.
 */
export class DomainError extends Error {
  override readonly name = 'DomainError';

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export const notFound = (what: string, id?: string) =>
  new DomainError('NOT_FOUND', id ? `${what} ${id} was not found.` : `${what} was not found.`);

export const badInput = (message: string, details?: Record<string, unknown>) => new DomainError('BAD_USER_INPUT', message, details);
