import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { buildApp, type App } from '../../src/app.js';
import { hashApiKey } from '../../src/auth/workspace-auth.js';
import { DEFAULT_CACHE_CONFIG } from '../../src/caches/sizes.js';
import { createApiKey, revokeApiKey } from '../../src/auth/keys.js';
import {
  backend,
  createTestApp,
  dropTestDatabases,
  freshPostgresDatabase,
  gql,
  gqlError,
  testConfig,
  testDeviations,
  testPglite,
  type TestApp,
} from '../helpers/app.js';
import { oneBuildAtATime } from '../helpers/one-build.js';

// Most tests here build their own app (a fresh database each): allow for a loaded machine.
vi.setConfig({ testTimeout: 90_000 });

const root = new URL('../..', import.meta.url).pathname;
const dataDir = mkdtempSync(join(tmpdir(), 'sg-keys-'));
const opened: App[] = [];

afterAll(async () => {
  for (const app of opened) await app.close();
  await dropTestDatabases();
  rmSync(dataDir, { recursive: true, force: true });
});

const WHO = '{ sessions(first: 1) { totalCount } }';

/** Runs the keys CLI (from source through tsx) as a real process against `target`. */
const keysCli = (target: Record<string, string>, ...args: string[]) => runCli(['--import', 'tsx', 'src/auth/keys-cli.ts', ...args], target);

/** Exactly what `npm run keys -- ARGS` runs: compile to dist/, then the compiled CLI. */
const npmRunKeys = (target: Record<string, string>, ...args: string[]) =>
  oneBuildAtATime(() => runCli(['scripts/start.mjs', 'auth/keys-cli.js', ...args], target));

function runCli(argv: string[], target: Record<string, string>) {
  const child = spawn(process.execPath, argv, {
    cwd: root,
    env: { ...process.env, DATABASE_URL: '', DATA_DIR: '', ...target },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, stdout, stderr })),
  );
}

/** Waits (bounded) until `probe` holds: revocation reaches other instances after their API_KEY_CACHE_TTL_MS. */
async function eventually(probe: () => Promise<boolean>, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function appOn(target: { databaseUrl: string | null }, config: Parameters<typeof testConfig>[0] = {}) {
  const database = target.databaseUrl ? undefined : await testPglite(dataDir);
  const app = await buildApp(testConfig({ databaseUrl: target.databaseUrl, ...config }), { database, deviations: testDeviations });
  opened.push(app);
  return app;
}

async function closeApp(app: App) {
  opened.splice(opened.indexOf(app), 1);
  await app.close();
}

// The CLI as a process of its own (through tsx, and as `npm run keys` runs it: dist/ compiled
// first). Tagged `program`: run on CI and by `npm run test:all`, not by a plain `npm test`.
describe(`npm run keys (${backend.label})`, { tags: ['program'] }, () => {
  it('creates a key shown once, lists keys without secrets, and revokes: the revoked key is refused, even if API_KEYS still holds it', async () => {
    const databaseUrl = backend.postgresUrl ? await freshPostgresDatabase() : null;
    const target: Record<string, string> = databaseUrl ? { DATABASE_URL: databaseUrl } : { DATA_DIR: dataDir };

    const created = await keysCli(target, 'create', '--workspace', 'alpha', '--name', 'ci runner');
    expect(created.code, created.stderr).toBe(0);
    const key = /^(sg_\S+)$/m.exec(created.stdout)?.[1];
    const id = /Created key (\S+) for workspace "alpha" \(name "ci runner", scope full\)/.exec(created.stdout)?.[1];
    expect(key).toBeDefined();
    expect(id).toBeDefined();

    const reader = await keysCli(target, 'create', '--workspace', 'alpha', '--name', 'dashboard', '--scope', 'read');
    expect(reader.code, reader.stderr).toBe(0);
    const readerId = /Created key (\S+) for workspace "alpha" \(name "dashboard", scope read\)/.exec(reader.stdout)?.[1];
    expect(readerId).toBeDefined();
    expect((await keysCli(target, 'create', '--workspace', 'alpha', '--scope', 'admin')).code).toBe(2);

    const listed = await keysCli(target, 'list', '--json');
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      { id, workspace: 'alpha', name: 'ci runner', scope: 'FULL', createdAt: expect.any(String), revokedAt: null },
      { id: readerId, workspace: 'alpha', name: 'dashboard', scope: 'READ', createdAt: expect.any(String), revokedAt: null },
    ]);
    const table = await npmRunKeys(target, 'list');
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/id\s+workspace\s+name\s+scope\s+created\s+revoked/);
    expect(table.stdout).toMatch(new RegExp(`${readerId}\\s+alpha\\s+dashboard\\s+read\\s`));
    for (const output of [listed.stdout, table.stdout]) {
      expect(output).not.toContain(key!);
      expect(output).not.toContain(hashApiKey(key!));
    }

    // The key works; a key now exists, so requests without one are refused.
    let app = await appOn({ databaseUrl }, { caches: { ...DEFAULT_CACHE_CONFIG, apiKeyTtlMs: 0 } });
    expect((await gql(app, WHO, undefined, { apiKey: key })).errors).toBeUndefined();
    expect((await gqlError(app, WHO)).code).toBe('UNAUTHENTICATED');
    // PGlite is one process's database: the CLI cannot open it while a server has it.
    if (!databaseUrl) await closeApp(app);

    const revoked = await keysCli(target, 'revoke', id!);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain(`Revoked key ${id}`);
    const unknown = await keysCli(target, 'revoke', '00000000-0000-7000-8000-000000000000');
    expect(unknown.code).toBe(1);
    const after = JSON.parse((await keysCli(target, 'list', '--json')).stdout) as { revokedAt: string | null }[];
    expect(after[0].revokedAt).toEqual(expect.any(String));

    if (!databaseUrl) app = await appOn({ databaseUrl }, { caches: { ...DEFAULT_CACHE_CONFIG, apiKeyTtlMs: 0 } });
    expect(await gqlError(app, WHO, undefined, { apiKey: key })).toMatchObject({ code: 'UNAUTHENTICATED' });

    // A restart with the revoked key in API_KEYS (the bootstrap) does not bring it back.
    await closeApp(app);
    app = await appOn(
      { databaseUrl },
      { caches: { ...DEFAULT_CACHE_CONFIG, apiKeyTtlMs: 0 }, apiKeys: [{ workspace: 'alpha', key: key! }] },
    );
    expect(await gqlError(app, WHO, undefined, { apiKey: key })).toMatchObject({ code: 'UNAUTHENTICATED' });
  }, 180_000);

  it('refuses a command it does not know, and create without a workspace, with usage', async () => {
    const bad = await keysCli({ DATA_DIR: 'memory://' }, 'create');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--workspace');
  }, 60_000);
});

describe(`AUTH_REQUIRED (${backend.label})`, () => {
  const apps: TestApp[] = [];
  afterAll(async () => {
    for (const app of apps) await app.close();
  });
  const make = async (...args: Parameters<typeof createTestApp>) => {
    const app = await createTestApp(...args);
    apps.push(app);
    return app;
  };

  it('true: a request without a key is refused even when no key exists', async () => {
    const app = await make({ config: { authRequired: true } });
    expect(await gqlError(app, WHO)).toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('unset (auto): keyless until the first key is created, then keys are required', async () => {
    const app = await make({ config: { authRequired: null, caches: { ...DEFAULT_CACHE_CONFIG, apiKeyTtlMs: 0 } } });
    expect((await gql(app, WHO)).errors).toBeUndefined();
    const { key } = await createApiKey(app.runtime.db.prisma, { workspace: 'late' });
    expect(await gqlError(app, WHO)).toMatchObject({ code: 'UNAUTHENTICATED' });
    expect((await gql(app, WHO, undefined, { apiKey: key })).errors).toBeUndefined();
  });

  it('false: requests without a key use the default workspace, but a key that is sent must be valid', async () => {
    const app = await make({ config: { authRequired: false }, apiKeys: [{ workspace: 'alpha', key: 'alpha-key-0123456789abcdef' }] });
    expect((await gql(app, WHO)).errors).toBeUndefined();
    expect((await gql(app, WHO, undefined, { apiKey: 'alpha-key-0123456789abcdef' })).errors).toBeUndefined();
    expect(await gqlError(app, WHO, undefined, { apiKey: 'not-a-key-0123456789abc' })).toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it.runIf(backend.postgresUrl)('a key revoked on one instance stops working on another within its API_KEY_CACHE_TTL_MS', async () => {
    const first = await make({ config: { caches: { ...DEFAULT_CACHE_CONFIG, apiKeyTtlMs: 300 } } });
    const second = await make({ shareWith: first, config: { caches: { ...DEFAULT_CACHE_CONFIG, apiKeyTtlMs: 300 } } });
    const created = await createApiKey(first.runtime.db.prisma, { workspace: 'shared' });
    await eventually(
      async () => !(await gql(second, WHO, undefined, { apiKey: created.key })).errors,
      'the new key works on the second instance',
    );
    await revokeApiKey(first.runtime.db.prisma, created.id);
    await eventually(
      async () => (await gql(second, WHO, undefined, { apiKey: created.key })).errors?.[0]?.extensions?.code === 'UNAUTHENTICATED',
      'the revoked key is refused on the second instance',
    );
  });
});
