import { afterEach, describe, expect, it } from 'vitest';
import { isRetryableSqlError, parseUtcTimestamp } from '../../src/db/sql.js';
import { appendEvents } from '../../src/db/stores/events.js';
import { backend, gqlOk, rawIdOf, type TestApp, useTestApp } from '../helpers/app.js';
import { CreateSession, ForkSession } from '../helpers/documents.js';

// The plain-SQL path beside Prisma (db/sql.ts), on the test backend: rows read as Prisma reads them
// whatever the process's time zone, transactions that roll back completely, and the statements
// shared by both kinds of write (event log) giving the same results.

let app: TestApp;
const zone = process.env.TZ;

useTestApp((built) => {
  app = built;
});

afterEach(() => {
  if (zone === undefined) delete process.env.TZ;
  else process.env.TZ = zone;
});

describe(`plain SQL (${backend.label})`, () => {
  it('parses TIMESTAMP(3) text as UTC', () => {
    expect(parseUtcTimestamp('2026-11-22 15:04:05.123').toISOString()).toBe('2026-11-22T15:04:05.123Z');
    expect(parseUtcTimestamp('1999-01-02 03:04:05').toISOString()).toBe('1999-01-02T03:04:05.000Z');
  });

  it('reads and writes timestamps in UTC when the process runs in another time zone', async () => {
    process.env.TZ = 'America/New_York';
    expect(new Date(2026, 0, 1).getTimezoneOffset()).not.toBe(0);
    const before = Date.now();
    const parent = (
      await gqlOk(app, CreateSession, {
        input: {
          title: 'zones',
          messages: [
            { role: 'USER', text: 'q' },
            { role: 'ASSISTANT', text: 'a' },
            { role: 'USER', text: 'q2' },
          ],
        },
      })
    ).createSession;
    const forked = (await gqlOk(app, ForkSession, { input: { sessionId: parent.id, messageIndex: 2 } })).forkSession;
    const after = Date.now();

    const id = rawIdOf(forked.session.id);
    const viaPrisma = await app.runtime.db.prisma.session.findUniqueOrThrow({ where: { id } });
    const [viaSql] = await app.runtime.db.sql.query<{ createdAt: Date; updatedAt: Date; settings: unknown; ancestorIds: string[] }>(
      'SELECT "createdAt", "updatedAt", settings, "ancestorIds" FROM "Session" WHERE id = $1',
      [id],
    );
    // Written by the fork's plain SQL, read back the same by Prisma and by plain SQL, at the real time.
    expect(viaSql.createdAt).toBeInstanceOf(Date);
    expect(viaSql.createdAt.getTime()).toBe(viaPrisma.createdAt.getTime());
    expect(viaSql.updatedAt.getTime()).toBe(viaPrisma.updatedAt.getTime());
    expect(viaPrisma.createdAt.getTime()).toBeGreaterThanOrEqual(before - 1);
    expect(viaPrisma.createdAt.getTime()).toBeLessThanOrEqual(after + 1);
    expect(viaSql.ancestorIds).toEqual([rawIdOf(parent.id)]);
    expect(viaSql.settings).toEqual(viaPrisma.settings);

    // The fork's event (plain SQL) is stamped with the same clock as Prisma's writes.
    const [event] = await app.runtime.db.prisma.sessionEvent.findMany({
      where: { sessionId: rawIdOf(parent.id), type: 'SESSION_FORKED' },
    });
    expect(event.createdAt.getTime()).toBeGreaterThanOrEqual(before - 1);
    expect(event.createdAt.getTime()).toBeLessThanOrEqual(after + 1);
  });

  it('reads BIGINT as bigint and JSON, arrays and enums as Prisma does', async () => {
    const [row] = await app.runtime.db.sql.query<{ big: bigint; j: unknown; a: string[]; role: string }>(
      `SELECT 9007199254740993::bigint AS big, '{"k":[1,"x"]}'::jsonb AS j, ARRAY['a', NULL, 'b"c']::text[] AS a, 'TOOL'::"MessageRole" AS role`,
    );
    expect(row).toEqual({ big: 9007199254740993n, j: { k: [1, 'x'] }, a: ['a', null, 'b"c'], role: 'TOOL' });
  });

  it('rolls a transaction back completely when its work throws, and frees the connection', async () => {
    const session = (await gqlOk(app, CreateSession, { input: { title: 'rollback' } })).createSession;
    const id = rawIdOf(session.id);
    const failure = new Error('stop here');
    await expect(
      app.runtime.db.sql.transaction(async (sql) => {
        await appendEvents(sql, id, [{ type: 'SESSION_UPDATED', payload: { fields: ['title'] } }]);
        await sql.query('UPDATE "Session" SET title = $1 WHERE id = $2', ['changed', id]);
        throw failure;
      }),
    ).rejects.toBe(failure);
    const after = await app.runtime.db.prisma.session.findUniqueOrThrow({ where: { id }, include: { events: true } });
    expect(after.title).toBe('rollback');
    expect(after.eventSequence).toBe(0);
    expect(after.events).toEqual([]);

    // A failed statement rolls back too, and the next transactions run normally (on every connection).
    await expect(app.runtime.db.sql.transaction((sql) => sql.query('SELECT * FROM "NoSuchTable"'))).rejects.toThrow();
    const counts = await Promise.all(
      Array.from({ length: 12 }, () =>
        app.runtime.db.sql.transaction((sql) => sql.query<{ n: bigint }>('SELECT count(*) AS n FROM "Session"')),
      ),
    );
    expect(counts.every(([row]) => typeof row.n === 'bigint' && row.n >= 1n)).toBe(true);
  });

  it('numbers events the same from a Prisma transaction and from a plain SQL one', async () => {
    const session = (await gqlOk(app, CreateSession, { input: { title: 'both' } })).createSession;
    const id = rawIdOf(session.id);
    const fromPrisma = await app.runtime.db.prisma.$transaction((tx) =>
      appendEvents(tx, id, [
        { type: 'SESSION_UPDATED', payload: { n: 1 } },
        { type: 'SESSION_UPDATED', payload: { n: 2 } },
      ]),
    );
    const fromSql = await app.runtime.db.sql.transaction((sql) => appendEvents(sql, id, [{ type: 'SESSION_UPDATED', payload: { n: 3 } }]));
    expect([...fromPrisma, ...fromSql].map((e) => e.sequence)).toEqual([1, 2, 3]);
    const stored = await app.runtime.db.prisma.sessionEvent.findMany({ where: { sessionId: id }, orderBy: { sequence: 'asc' } });
    expect(stored.map((e) => [e.sequence, (e.payload as { n: number }).n])).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
  });

  it('tells retryable failures (serialization, deadlock) from the rest', () => {
    expect(isRetryableSqlError(Object.assign(new Error('x'), { code: '40001' }))).toBe(true);
    expect(isRetryableSqlError(Object.assign(new Error('x'), { code: '40P01' }))).toBe(true);
    expect(isRetryableSqlError(Object.assign(new Error('x'), { code: '23505' }))).toBe(false);
    expect(isRetryableSqlError(null)).toBe(false);
  });
});
