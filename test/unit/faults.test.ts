import { describe, expect, it } from 'vitest';
import { isOutage } from '../../src/db/faults.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('telling an outage from a bad request', () => {
  it.each([
    ['a refused connection', withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')],
    ['a reset socket', withCode('ECONNRESET')],
    ['PostgreSQL shutting down (57P01)', withCode('57P01', 'terminating connection due to administrator command')],
    ['a connection exception (class 08)', withCode('08006')],
    ['Prisma cannot reach the server (P1001)', withCode('P1001')],
    ['pg losing its connection', new Error('Connection terminated unexpectedly')],
    ['a driver-adapter error', Object.assign(new Error('adapter'), { cause: { kind: 'DatabaseNotReachable', host: 'h', port: 1 } })],
    [
      'a PostgreSQL error kind inside Prisma meta',
      Object.assign(new Error('query failed'), { meta: { driverAdapterError: { cause: { kind: 'postgres', code: '57P03' } } } }),
    ],
    ['every attempt refused (AggregateError)', new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')])],
    ['a closed PGlite', new Error('PGlite is closed')],
  ])('%s is an outage', (_, error) => {
    expect(isOutage(error)).toBe(true);
  });

  it.each([
    ['a unique violation', withCode('23505')],
    ['a NUL in text', withCode('22021')],
    ['a Prisma record not found', withCode('P2025')],
    ['a plain bug', new TypeError('undefined is not a function')],
    ['a string', 'ECONNREFUSED'],
  ])('%s is not', (_, error) => {
    expect(isOutage(error)).toBe(false);
  });
});
