import { DomainError } from '../domain/errors.js';

// Socket-level failures (node, pg, ioredis).
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
  'EAI_AGAIN',
]);
// Prisma: can't reach, timed out, closed connection, pool timeout.
const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
// Prisma driver-adapter error kinds that mean the database is gone, not that the query was wrong.
const ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections', 'DatabaseDoesNotExist']);
// PostgreSQL SQLSTATE: class 08 (connection exception), admin/crash shutdown, cannot connect now, too many connections.
const isPostgresOutage = (code: string) => /^08...$/.test(code) || ['57P01', '57P02', '57P03', '53300'].includes(code);
const OUTAGE_MESSAGES =
  /Connection terminated|Client has encountered a connection error|not queryable|Can't reach database server|Server has closed the connection|PGlite is closed|Connection is closed|Timed out fetching a new connection/i;

/** The fields drivers, Prisma and its adapters put on their errors (all optional, all unchecked). */
interface ErrorShape {
  code?: unknown;
  kind?: unknown;
  originalCode?: unknown;
  message?: unknown;
  errors?: unknown;
  cause?: unknown;
  originalError?: unknown;
  meta?: { driverAdapterError?: unknown; cause?: unknown };
}

/**
 * Whether an error means a dependency (PostgreSQL, Redis) is unreachable rather than that the
 * request was wrong. Looks through `cause`, Prisma's `meta` and driver-adapter wrappers.
 */
export function isOutage(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 6) return false;
  const e = error as ErrorShape;
  const code = typeof e.code === 'string' ? e.code : undefined;
  if (code && (NETWORK_CODES.has(code) || PRISMA_CODES.has(code) || isPostgresOutage(code))) return true;
  if (typeof e.kind === 'string') {
    if (ADAPTER_KINDS.has(e.kind)) return true;
    if (e.kind === 'postgres' && typeof e.code === 'string' && isPostgresOutage(e.code)) return true;
  }
  if (typeof e.originalCode === 'string' && (NETWORK_CODES.has(e.originalCode) || isPostgresOutage(e.originalCode))) return true;
  if (typeof e.message === 'string' && OUTAGE_MESSAGES.test(e.message)) return true;
  if (Array.isArray(e.errors) && e.errors.some((inner: unknown) => isOutage(inner, depth + 1))) return true;
  return [e.cause, e.meta?.driverAdapterError, e.meta?.cause, e.originalError].some((inner) => inner !== e && isOutage(inner, depth + 1));
}

/** The client-facing refusal for an outage: retryable, carrying no internal detail (`cause` is for the log). */
export function serviceUnavailable(cause?: unknown, what = 'The database'): DomainError {
  const refusal = new DomainError('SERVICE_UNAVAILABLE', `${what} is unavailable right now; retry shortly.`, { retryable: true });
  if (cause !== undefined) Object.defineProperty(refusal, 'cause', { value: cause, enumerable: false });
  return refusal;
}

/** `serviceUnavailable(error)` when `error` is an outage, else null. */
export const asServiceUnavailable = (error: unknown) => (isOutage(error) ? serviceUnavailable(error) : null);
