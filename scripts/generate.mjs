// Generates the Prisma client and the Pothos Prisma types into src/generated/, offline.
//
// Prisma 7's CLI checks that its schema-engine binary exists before `generate`, and would
// download it from a host these machines cannot reach. `generate` never runs the engine, so when
// the real one is absent we point PRISMA_SCHEMA_ENGINE_BINARY at a stub that fails loudly if
// anything ever does try to run it.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const env = {
  ...process.env,
  PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH}`,
  PRISMA_HIDE_UPDATE_MESSAGE: '1',
  CHECKPOINT_DISABLE: '1',
};

function realEngineExists() {
  if (process.env.PRISMA_SCHEMA_ENGINE_BINARY) return existsSync(process.env.PRISMA_SCHEMA_ENGINE_BINARY);
  const dir = join(root, 'node_modules', '@prisma', 'engines');
  return existsSync(dir) && readdirSync(dir).some((f) => f.startsWith('schema-engine'));
}

if (!realEngineExists()) {
  const stubDir = join(root, 'node_modules', '.cache', 'session-graph');
  mkdirSync(stubDir, { recursive: true });
  const stub = join(stubDir, 'schema-engine-unavailable');
  writeFileSync(
    stub,
    '#!/bin/sh\necho "session-graph: the Prisma schema engine is not installed on this machine;" >&2\n' +
      'echo "migrations are applied by the server itself (npm run db:migrate)." >&2\nexit 1\n',
  );
  chmodSync(stub, 0o755);
  env.PRISMA_SCHEMA_ENGINE_BINARY = stub;
}

execFileSync(join(root, 'node_modules', '.bin', 'prisma'), ['generate'], { cwd: root, env, stdio: 'inherit' });

// Typed documents for the tests (a dev dependency: skipped on production installs).
const codegen = join(root, 'node_modules', '.bin', 'graphql-codegen');
if (existsSync(codegen) && existsSync(join(root, 'schema.graphql'))) {
  execFileSync(codegen, ['--config', 'codegen.ts', '--silent'], { cwd: root, env, stdio: 'inherit' });
}
