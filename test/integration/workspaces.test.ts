import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ensureWorkspace } from '../../src/db/stores/api-keys.js';
import { backend, type TestApp, useTestApp } from '../helpers/app.js';

// Every start ensures its workspaces (the default one, and those of API_KEYS): a workspace that
// exists is read, not written again, and racing starts get one row.

let app: TestApp;
useTestApp((built) => {
  app = built;
});

const rowVersion = async (id: string) =>
  (await app.runtime.db.sql.query<{ xmin: string }>('SELECT xmin::text AS xmin FROM "Workspace" WHERE id = $1', [id]))[0]?.xmin;

describe(`ensureWorkspace (${backend.label})`, () => {
  it('creates a missing workspace, and returns the stored row without writing it again', async () => {
    const name = `ws-${randomUUID()}`;
    const made = await ensureWorkspace(app.runtime.db.sql, name);
    expect(made).toMatchObject({ name });
    const version = await rowVersion(made.id);
    expect(version).toBeDefined();
    expect(await ensureWorkspace(app.runtime.db.sql, name)).toEqual(made);
    // The same row version: the second call wrote nothing.
    expect(await rowVersion(made.id)).toBe(version);
  });

  it('gives callers racing to create one name the same workspace', async () => {
    const name = `ws-${randomUUID()}`;
    const rows = await Promise.all(Array.from({ length: 8 }, () => ensureWorkspace(app.runtime.db.sql, name)));
    expect(new Set(rows.map((r) => r.id)).size).toBe(1);
    const stored = await app.runtime.db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM "Workspace" WHERE name = $1', [name]);
    expect(stored[0].n).toBe(1);
  });
});
