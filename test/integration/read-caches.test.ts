import { describe, expect, it } from 'vitest';
import { AppendMessages, CreateSession, DeleteSession, SessionMessages, UpdateMessage, UpdateSession } from '../helpers/documents.js';
import { backend, gqlOk, rawIdOf, type TestApp, useTestApp } from '../helpers/app.js';
import { FinishedRowsCache } from '../../src/caches/finished-rows.js';
import { createMessageRangeLoader } from '../../src/caches/message-ranges.js';
import { ResponseBudget } from '../../src/domain/content-budget.js';
import { messageRowChars } from '../../src/db/stores/messages.js';
import { findSessions } from '../../src/db/stores/sessions.js';
import type { Message } from '../../src/generated/prisma/client.js';

// The rows reads are served from without a statement: whole finished message rows for
// Session.messages pages (both backends), and session rows while this process is the database's
// only writer (PGlite), dropped at any write whoever sends it.

let app: TestApp;
useTestApp((built) => {
  app = built;
});

const pglite = !backend.postgresUrl;
const TITLE = 'query ($id: ID!) { session(id: $id) { title messageCount } }';

async function statementsOf<T>(run: () => Promise<T>) {
  const counter = app.runtime.db.queries;
  counter.reset();
  const result = await run();
  return { result, statements: [...counter.statements] };
}
// Plain SQL names a table "Message"; Prisma names it "public"."Message".
const onTable = (statements: string[], table: string) =>
  statements.filter((s) => s.includes(`FROM "${table}"`) || s.includes(`FROM "public"."${table}"`));

async function session(messages: { role: 'USER' | 'ASSISTANT'; text: string; generating?: boolean }[]) {
  return (await gqlOk(app, CreateSession, { input: { title: 'kept', messages } })).createSession.id;
}

describe(`read caches (${backend.label})`, () => {
  it('serves a page of finished messages again without reading them, and reads a generating one until it is finished', async () => {
    const id = await session([
      { role: 'USER', text: 'q1' },
      { role: 'ASSISTANT', text: 'a1' },
      { role: 'USER', text: 'q2' },
    ]);
    const appended = await gqlOk(app, AppendMessages, {
      input: { sessionId: id, messages: [{ role: 'ASSISTANT', text: 'Par', generating: true }] },
    });
    const streaming = appended.appendMessages.messages[0].id;
    const page = () => gqlOk(app, SessionMessages, { id, first: 10 });
    const texts = (r: Awaited<ReturnType<typeof page>>) => r.session!.messages.edges.map((e) => e.node.text);

    expect(texts(await page())).toEqual(['q1', 'a1', 'q2', 'Par']);
    // The generating row is read again (with the finished ones of its page); its new text shows.
    await gqlOk(app, UpdateMessage, { input: { messageId: streaming, appendText: 'is' } });
    const during = await statementsOf(page);
    expect(texts(during.result)).toEqual(['q1', 'a1', 'q2', 'Paris']);
    expect(onTable(during.statements, 'Message')).toHaveLength(1);
    await gqlOk(app, UpdateMessage, { input: { messageId: streaming, appendText: '.', generating: false } });
    expect(texts(await page())).toEqual(['q1', 'a1', 'q2', 'Paris.']);
    // All four finished now: the next read of the page reads no message.
    const again = await statementsOf(page);
    expect(texts(again.result)).toEqual(['q1', 'a1', 'q2', 'Paris.']);
    expect(again.result.session!.messages.edges.map((e) => e.node.generating)).toEqual([false, false, false, false]);
    expect(onTable(again.statements, 'Message')).toEqual([]);
    expect(app.runtime.caches.pages.range(rawIdOf(id))).toEqual({ lo: 0, hi: 4 });
    // Appended since: the page is read again, and the new row joins what is kept.
    await gqlOk(app, AppendMessages, { input: { sessionId: id, messages: [{ role: 'USER', text: 'q3' }] } });
    expect(texts(await page())).toEqual(['q1', 'a1', 'q2', 'Paris.', 'q3']);
    expect(app.runtime.caches.pages.range(rawIdOf(id))).toEqual({ lo: 0, hi: 5 });
    await gqlOk(app, DeleteSession, { input: { sessionId: id } });
    expect(app.runtime.caches.pages.range(rawIdOf(id))).toBeNull();
  });

  it('answers a batch whose reads evict the rows it took from the cache', async () => {
    const text = 'x'.repeat(100);
    const ids = [
      await session([
        { role: 'USER', text },
        { role: 'ASSISTANT', text },
      ]),
      await session([{ role: 'USER', text }]),
    ];
    const { sql } = app.runtime.db;
    const [{ workspaceId }] = await sql.query<{ workspaceId: string }>('SELECT "workspaceId" FROM "Session" WHERE id = $1', [
      rawIdOf(ids[0]),
    ]);
    const rows = await findSessions(sql, workspaceId, ids.map(rawIdOf));
    const [a, b] = ids.map((id) => rows.find((r) => r.id === rawIdOf(id))!);
    // Room for one session's rows only (a row weighs 256 plus its text, counted in the text and in the parts).
    const pages = new FinishedRowsCache<Message>(2 * (256 + 2 * 100) + 10, 100, messageRowChars);
    await createMessageRangeLoader(sql, pages, new ResponseBudget(Infinity)).load({ session: a, lo: 0, hi: 2 });
    expect(pages.range(a.id)).toEqual({ lo: 0, hi: 2 });
    const loader = createMessageRangeLoader(sql, pages, new ResponseBudget(Infinity));
    const [fromCache, fromDb] = await Promise.all([loader.load({ session: a, lo: 0, hi: 2 }), loader.load({ session: b, lo: 0, hi: 1 })]);
    // Keeping b's row evicted a's, which this batch had already taken.
    expect(pages.range(a.id)).toBeNull();
    expect(fromCache.map((m) => m.position)).toEqual([0, 1]);
    expect(fromDb.map((m) => m.text)).toEqual([text]);
  });

  it.runIf(pglite)('keeps session rows on PGlite until any write begins or ends, whoever sends it', async () => {
    const id = await session([{ role: 'USER', text: 'q' }]);
    const raw = rawIdOf(id);
    const title = async () => (await gqlOk(app, TITLE, { id })) as { session: { title: string; messageCount: number } };
    await title();
    const kept = await statementsOf(title);
    expect(kept.result.session.title).toBe('kept');
    expect(onTable(kept.statements, 'Session')).toEqual([]);

    // Through the API (the plain-SQL and Prisma paths of the mutations).
    await gqlOk(app, UpdateSession, { input: { sessionId: id, title: 'renamed' } });
    expect((await title()).session.title).toBe('renamed');
    await gqlOk(app, AppendMessages, { input: { sessionId: id, messages: [{ role: 'ASSISTANT', text: 'a' }] } });
    expect((await title()).session.messageCount).toBe(2);
    // Behind the API's back: Prisma, plain SQL, and a plain-SQL transaction.
    await app.runtime.db.prisma.session.update({ where: { id: raw }, data: { title: 'by prisma' } });
    expect((await title()).session.title).toBe('by prisma');
    await app.runtime.db.sql.query('UPDATE "Session" SET title = $1 WHERE id = $2', ['by sql', raw]);
    expect((await title()).session.title).toBe('by sql');
    await app.runtime.db.sql.transaction((tx) => tx.query('UPDATE "Session" SET title = $1 WHERE id = $2', ['in a transaction', raw]));
    expect((await title()).session.title).toBe('in a transaction');
    const after = await statementsOf(title);
    expect(onTable(after.statements, 'Session')).toEqual([]);
  });

  it.runIf(pglite)('does not keep a session row read while a write was under way', async () => {
    const id = await session([{ role: 'USER', text: 'q' }]);
    const raw = rawIdOf(id);
    const { sessionRows } = app.runtime;
    sessionRows.clear();
    // The write begins before the read is sent and ends after it: the row the read returns is the one from before.
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const writing = app.runtime.db.sql.transaction(async (tx) => {
      await held;
      await tx.query('UPDATE "Session" SET title = $1 WHERE id = $2', ['written', raw]);
    });
    const read = await sessionRows.read('w', [raw], async () => {
      release();
      await writing;
      return [{ id: raw, workspaceId: 'w', title: 'stale' } as never];
    });
    expect(read).toHaveLength(1);
    expect(sessionRows.size).toBe(0);
    expect(((await gqlOk(app, TITLE, { id })) as { session: { title: string } }).session.title).toBe('written');
  });

  it.runIf(!pglite)('keeps no session row on PostgreSQL, where other instances write too', async () => {
    const id = await session([{ role: 'USER', text: 'q' }]);
    expect(app.runtime.db.sql.writes()).toBeNull();
    await gqlOk(app, TITLE, { id });
    const again = await statementsOf(() => gqlOk(app, TITLE, { id }));
    expect(onTable(again.statements, 'Session')).toHaveLength(1);
    expect(app.runtime.sessionRows.size).toBe(0);
  });
});
