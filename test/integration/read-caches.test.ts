import { describe, expect, it } from 'vitest';
import { AppendMessages, CreateSession, DeleteSession, SessionMessages, UpdateMessage, UpdateSession } from '../helpers/documents.js';
import { backend, gqlOk, rawIdOf, type TestApp, useTestApp } from '../helpers/app.js';

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
    const mark = sessionRows.mark();
    release();
    await writing;
    sessionRows.keep(mark, [{ id: raw, workspaceId: 'w', title: 'stale' } as never]);
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
