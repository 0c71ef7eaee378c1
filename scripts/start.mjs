// `npm start` (and `npm run db:migrate`): production runs compiled JavaScript, never TypeScript.
//
// Compiles src/ to dist/ first (incremental, so an unchanged tree rebuilds in a few seconds): a fresh
// `npm install && npm start` works and dist/ is never stale. TypeScript and the type packages the
// build needs are dependencies, not dev dependencies, so `npm ci --omit=dev` can build too. An install
// pruned of the compiler runs the dist/ built beforehand (`npm run build`) as it is; so does
// `node dist/main.js`.
//
// Usage: node scripts/start.mjs [entry [args…]]   (entry is relative to dist/, default main.js)
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const entry = join(root, 'dist', process.argv[2] ?? 'main.js');
// The entry sees its own arguments only (`npm run keys -- list` → ['list']).
if (process.argv[2]) process.argv.splice(2, 1);
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

if (existsSync(tsc)) {
  const build = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) {
    console.error('session-graph: the build failed (npm run build); not starting.');
    process.exit(build.status ?? 1);
  }
} else if (!existsSync(entry)) {
  console.error(`session-graph: ${entry} does not exist and TypeScript is not installed to build it; run \`npm run build\` first.`);
  process.exit(1);
}

// Stack traces point into src/*.ts through the emitted source maps.
process.setSourceMapsEnabled(true);
await import(pathToFileURL(entry).href);
