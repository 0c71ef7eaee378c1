// `npm run keys -- create --workspace NAME [--name LABEL] [--scope read|full] | list [--json] | revoke ID`: manages the
// API keys of the configured database (DATABASE_URL, or the PGlite folder in DATA_DIR).
import { parseArgs } from 'node:util';
import { type AppConfig, ConfigError, loadConfig } from '../config.js';
import { createDatabase, databaseOptionsOf } from '../db/database.js';
import { createApiKey, listApiKeys, revokeApiKey } from './keys.js';

const USAGE = `usage:
  npm run keys -- create --workspace NAME [--name LABEL] [--scope read|full]
                                                           prints the new key (shown only this once);
                                                           read: queries and subscriptions only (default full)
  npm run keys -- list [--json]                            id, workspace, name, scope, created, revoked
  npm run keys -- revoke ID                                refused by every instance within API_KEY_CACHE_TTL_MS`;

function fail(message: string): never {
  console.error(`keys: ${message}\n${USAGE}`);
  process.exit(2);
}

const options = {
  workspace: { type: 'string' },
  name: { type: 'string' },
  scope: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;
let parsed: ReturnType<typeof parseArgs<{ allowPositionals: true; options: typeof options }>>;
try {
  parsed = parseArgs({ allowPositionals: true, options });
} catch (error) {
  fail((error as Error).message);
}
const { values, positionals } = parsed;
const [command, ...rest] = positionals;
if (values.help || !command) {
  console.log(USAGE);
  process.exit(command || values.help ? 0 : 2);
}
if (!['create', 'list', 'revoke'].includes(command)) fail(`unknown command "${command}"`);
if (command === 'create' && !values.workspace?.trim()) fail('create needs --workspace NAME');
const scope = values.scope?.trim().toUpperCase() ?? 'FULL';
if (scope !== 'READ' && scope !== 'FULL') fail(`--scope must be read or full (got "${values.scope}")`);
if (command === 'revoke' && rest.length !== 1) fail('revoke needs exactly one key id (see `list`)');

let config: AppConfig;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) fail(`configuration error: ${error.message}`);
  throw error;
}
const db = await createDatabase(databaseOptionsOf(config));
let exitCode = 0;
try {
  await db.migrate();
  if (command === 'create') {
    const created = await createApiKey(db.prisma, {
      workspace: values.workspace!.trim(),
      name: values.name?.trim() || undefined,
      scope,
    });
    console.log(
      `Created key ${created.id} for workspace "${created.workspace}" (name "${created.name}", scope ${created.scope.toLowerCase()}).`,
    );
    console.log('The key, shown only this once (send it as `Authorization: Bearer <key>`):');
    console.log(created.key);
  } else if (command === 'list') {
    const keys = await listApiKeys(db.prisma);
    if (values.json) {
      console.log(JSON.stringify(keys, null, 2));
    } else if (keys.length === 0) {
      console.log('No API keys.');
    } else {
      const rows = [
        ['id', 'workspace', 'name', 'scope', 'created', 'revoked'],
        ...keys.map((k) => [
          k.id,
          k.workspace,
          k.name,
          k.scope.toLowerCase(),
          k.createdAt.toISOString(),
          k.revokedAt?.toISOString() ?? '-',
        ]),
      ];
      const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
      for (const row of rows)
        console.log(
          row
            .map((cell, i) => cell.padEnd(widths[i]))
            .join('  ')
            .trimEnd(),
        );
    }
  } else {
    const revoked = await revokeApiKey(db.prisma, rest[0]);
    if (!revoked) {
      console.error(`keys: no key with id ${rest[0]}`);
      exitCode = 1;
    } else {
      console.log(`Revoked key ${revoked.id} of workspace "${revoked.workspace}" at ${revoked.revokedAt!.toISOString()}.`);
    }
  }
} catch (error) {
  console.error(`keys: ${(error as Error).message}`);
  exitCode = 1;
} finally {
  await db.close();
}
// Explicit: closing PGlite resets process.exitCode.
process.exit(exitCode);
