import { afterEach, describe, expect, it } from 'vitest';
import { trimPgliteParsers } from '../../src/db/database.js';
import { openPglite } from '../../src/db/pglite-open.js';
import { createPgliteSql, isRetryableSqlError, parseUtcTimestamp } from '../../src/db/sql.js';
import { isOutage } from '../../src/db/faults.js';
import { appendEvents } from '../../src/db/stores/events.js';
import { backend, gqlOk, initializedPglite, migratedPglite, rawIdOf, type TestApp, testDeviations, useTestApp } from '../helpers/app.js';
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

  it('reads arrays of strings, numbers, booleans, times, json and uuids as arrays', async () => {
    const [row] = await app.runtime.db.sql.query<Record<string, unknown[]>>(
      `SELECT ARRAY['a', 'b"c']::text[] AS t, ARRAY[1, 2]::int[] AS i, ARRAY[true, false] AS b,
        ARRAY['2026-01-02 03:04:05.678'::timestamp(3)] AS ts, ARRAY['{"k":1}'::jsonb] AS j,
        ARRAY['0190f1a0-0000-7000-8000-000000000001'::uuid] AS u`,
    );
    expect(row).toEqual({
      t: ['a', 'b"c'],
      i: [1, 2],
      b: [true, false],
      ts: [new Date('2026-01-02T03:04:05.678Z')],
      j: [{ k: 1 }],
      u: ['0190f1a0-0000-7000-8000-000000000001'],
    });
    if (app.runtime.db.kind === 'pglite') {
      const [enums] = await app.runtime.db.sql.query<{ roles: string[] }>(`SELECT ARRAY['USER', 'TOOL']::"MessageRole"[] AS roles`);
      expect(enums.roles).toEqual(['USER', 'TOOL']);
    }
  });

  it('keeps PGlite parsers for what the schema can return, arrays of enums made later included', async () => {
    const { pglite } = await openPglite('memory://', undefined, initializedPglite());
    try {
      await pglite.exec(`CREATE TYPE "Mood" AS ENUM ('calm', 'busy')`);
      const before = Object.keys(pglite.parsers).length;
      await trimPgliteParsers(pglite);
      // PGlite copies this table into a new object for every statement: from over 300 entries to a few dozen.
      expect(before).toBeGreaterThan(300);
      expect(Object.keys(pglite.parsers).length).toBeLessThan(80);
      const { rows } = await pglite.query<Record<string, unknown>>(
        `SELECT ARRAY['calm']::"Mood"[] AS moods, ARRAY['x']::varchar[] AS v, ARRAY[1.5]::numeric[] AS n, ARRAY['1 day'::interval] AS spans`,
      );
      expect(rows[0]).toEqual({ moods: ['calm'], v: ['x'], n: ['1.5'], spans: '{"1 day"}' });
    } finally {
      await pglite.close();
    }
  });

  it('refuses a prepared statement on a closed PGlite as an outage, not a crash', async () => {
    const { pglite } = await openPglite('memory://', undefined, migratedPglite());
    const sql = createPgliteSql(pglite, { record: () => undefined });
    const text = 'SELECT $1::int + 1 AS n';
    expect(await sql.query(text, [1], { name: 'sg_test_closed' })).toEqual([{ n: 2 }]);
    await pglite.close();
    const refusal = await sql.query(text, [2], { name: 'sg_test_closed' }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(Error);
    expect(isOutage(refusal)).toBe(true);
  });

  describe('named statements (QueryOptions.name)', () => {
    const sql = () => app.runtime.db.sql;
    // On PGlite a named statement is prepared on its one connection once it is first used outside a
    // transaction; with that deviation off (TEST_DEVIATIONS=off) it is sent through PGlite's `query`,
    // prepared nowhere, and must answer the same all the same. On PostgreSQL, per pooled connection: not counted.
    const preparing = () => app.runtime.db.kind === 'pglite' && testDeviations.pgliteStatements;
    const made = async (name: string) =>
      preparing()
        ? Number((await sql().reads.query<{ n: bigint }>('SELECT count(*) AS n FROM pg_prepared_statements WHERE name = $1', [name]))[0].n)
        : null;
    const ROW = `SELECT $1::text AS id, $2::timestamp(3) AS at, 9007199254740993::bigint AS big, $3::jsonb AS doc,
      ARRAY[$1::text, NULL] AS ids, 'TOOL'::"MessageRole" AS role`;
    const values = ['x"y é 😀 中', '2026-11-22T15:04:05.123Z', JSON.stringify({ k: [1, 'x', 'ü'] })];

    it('answers the same rows, typed the same, as the statement sent as it is', async () => {
      const plain = await sql().query(ROW, values);
      expect(await made('sg_test_row')).toBe(preparing() ? 0 : null);
      const first = await sql().query(ROW, values, { name: 'sg_test_row' });
      const again = await sql().query(ROW, values, { name: 'sg_test_row' });
      expect(await made('sg_test_row')).toBe(preparing() ? 1 : null);
      expect(first).toEqual(plain);
      expect(again).toEqual(plain);
      expect(again[0]).toEqual({
        id: 'x"y é 😀 中',
        at: new Date('2026-11-22T15:04:05.123Z'),
        big: 9007199254740993n,
        doc: { k: [1, 'x', 'ü'] },
        ids: ['x"y é 😀 中', null],
        role: 'TOOL',
      });
    });

    it('writes, locks and fails as the statement itself does', async () => {
      const session = (await gqlOk(app, CreateSession, { input: { title: 'named' } })).createSession;
      const id = rawIdOf(session.id);
      const RENAME = `UPDATE "Session" SET title = $2 || (100 / $3::int)::text WHERE id = $1 RETURNING title`;
      const rename = (title: string, divisor: number) =>
        sql().query<{ title: string }>(RENAME, [id, title, divisor], { name: 'sg_test_rename' });
      const writes = sql().writes();
      expect(await rename('a', 1)).toEqual([{ title: 'a100' }]);
      expect(await rename('b', 4)).toEqual([{ title: 'b25' }]);
      if (writes !== null) expect(sql().writes()).toBeGreaterThan(writes);
      // The same SQLSTATE as the statement's own error, and nothing written.
      await expect(rename('c', 0)).rejects.toMatchObject({ code: '22012' });
      const [row] = await sql().query<{ title: string }>('SELECT title FROM "Session" WHERE id = $1', [id]);
      expect(row.title).toBe('b25');
      // In a transaction, made or not, and rolled back completely.
      await expect(
        sql().transaction(async (tx) => {
          expect(await tx.query<{ title: string }>(RENAME, [id, 'd', 2], { name: 'sg_test_rename' })).toEqual([{ title: 'd50' }]);
          expect(await tx.query<{ title: string }>(RENAME, [id, 'e', 5], { name: 'sg_test_rename_tx' })).toEqual([{ title: 'e20' }]);
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      const [after] = await sql().query<{ title: string }>('SELECT title FROM "Session" WHERE id = $1', [id]);
      expect(after.title).toBe('b25');
      // Nothing is made inside a transaction (a rollback would take it away unseen).
      expect(await made('sg_test_rename_tx')).toBe(preparing() ? 0 : null);
      expect(await sql().query(RENAME, [id, 'f', 10], { name: 'sg_test_rename_tx' })).toEqual([{ title: 'f10' }]);
      expect(await made('sg_test_rename_tx')).toBe(preparing() ? 1 : null);
    });

    it('runs a statement that answers no columns too, and a name it cannot use as it is', async () => {
      const session = (await gqlOk(app, CreateSession, { input: { title: 'silent' } })).createSession;
      const id = rawIdOf(session.id);
      expect(await sql().query(`UPDATE "Session" SET title = $2 WHERE id = $1`, [id, 'silent 1'], { name: 'sg_test_silent' })).toEqual([]);
      expect(await sql().query(`UPDATE "Session" SET title = $2 WHERE id = $1`, [id, 'silent 2'], { name: 'sg_test_silent' })).toEqual([]);
      expect(await sql().query('SELECT 2 AS n', [], { name: 'Not-A-Name' })).toEqual([{ n: 2 }]);
      const [row] = await sql().query<{ title: string }>('SELECT title FROM "Session" WHERE id = $1', [id]);
      expect(row.title).toBe('silent 2');
      expect(await made('sg_test_silent')).toBe(preparing() ? 1 : null);
      expect(await made('Not-A-Name')).toBe(preparing() ? 0 : null);
    });

    it('never runs a named statement inside a transaction that is not its own', async () => {
      const session = (await gqlOk(app, CreateSession, { input: { title: 'outside' } })).createSession;
      const id = rawIdOf(session.id);
      const RENAME = `UPDATE "Session" SET title = $2 WHERE id = $1 RETURNING title`;
      expect(await sql().query(RENAME, [id, 'prepared'], { name: 'sg_test_outside' })).toEqual([{ title: 'prepared' }]);
      let release = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let inside = () => {};
      const opened = new Promise<void>((resolve) => {
        inside = resolve;
      });
      const rolledBack = sql().transaction(async (tx) => {
        await tx.query('UPDATE "Session" SET title = $2 WHERE id = $1', [id, 'in the transaction']);
        inside();
        await gate;
        throw new Error('roll back');
      });
      await opened;
      // Sent while the transaction is open: it waits for it (PGlite's one connection, PostgreSQL's
      // row lock), so the rollback cannot take its write away.
      const outside = sql().query<{ title: string }>(RENAME, [id, 'after'], { name: 'sg_test_outside' });
      await new Promise((resolve) => setTimeout(resolve, 30));
      release();
      await expect(rolledBack).rejects.toThrow('roll back');
      expect(await outside).toEqual([{ title: 'after' }]);
      const [row] = await sql().query<{ title: string }>('SELECT title FROM "Session" WHERE id = $1', [id]);
      expect(row.title).toBe('after');
    });
  });
});
