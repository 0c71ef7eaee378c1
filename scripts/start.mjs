// `npm start` (and `npm run db:migrate`): production runs compiled JavaScript, never TypeScript.
//
// Compiles src/ to dist/ first, unless dist/ was built from the sources as they are (stamped by the
// last successful build here; `npm run build` alone leaves no stamp): a fresh `npm install && npm
// start` works and dist/ is never stale. TypeScript and the type packages the
// build needs are dependencies, not dev dependencies, so `npm ci --omit=dev` can build too. An install
// pruned of the compiler runs the dist/ built beforehand (`npm run build`) as it is; so does
// `node dist/main.js`.
//
// Usage: node scripts/start.mjs [entry [args…]]   (entry is relative to dist/, default main.js)
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const entry = join(root, 'dist', process.argv[2] ?? 'main.js');
// The entry sees its own arguments only (`npm run keys -- list` → ['list']).
if (process.argv[2]) process.argv.splice(2, 1);
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const stamp = join(root, 'dist', '.build-started');
// What the build reads: a change to any of these (a new mtime, or a file added to or removed from
// a folder, which touches the folder) means dist/ may be stale.
const inputs = ['src', 'explorer', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json'];

/**
 * Whether dist/ was built, successfully, from the sources as they are: even an incremental tsc run
 * that finds nothing to do takes seconds (it type-checks the program), so it is skipped then.
 */
function upToDate() {
  let builtAt;
  try {
    builtAt = Number(readFileSync(stamp, 'utf8'));
  } catch {
    return false;
  }
  if (!Number.isFinite(builtAt) || !existsSync(entry)) return false;
  const newest = (path) => {
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) return 0;
    if (!stat.isDirectory()) return stat.mtimeMs;
    let latest = stat.mtimeMs;
    for (const name of readdirSync(path)) latest = Math.max(latest, newest(join(path, name)));
    return latest;
  };
  return inputs.every((input) => newest(join(root, input)) < builtAt);
}

if (existsSync(tsc) && !upToDate()) {
  const startedAt = Date.now();
  const build = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) {
    console.error('session-graph: the build failed (npm run build); not starting.');
    process.exit(build.status ?? 1);
  }
  // The explorer page needs its typed documents (explorer/generated/, written by codegen, a dev
  // dependency): without them the server runs and /explorer says it is not built.
  if (existsSync(join(root, 'explorer', 'generated'))) {
    const page = spawnSync(process.execPath, [join(root, 'scripts', 'build-explorer.mjs'), '--no-check'], { cwd: root, stdio: 'inherit' });
    if (page.status !== 0) {
      console.error('session-graph: the explorer page did not build (node scripts/build-explorer.mjs); not starting.');
      process.exit(page.status ?? 1);
    }
  }
  // When this build started: a source changed after it (even during it) is newer and rebuilds.
  writeFileSync(stamp, `${startedAt}\n`);
} else if (!existsSync(entry)) {
  console.error(`session-graph: ${entry} does not exist and TypeScript is not installed to build it; run \`npm run build\` first.`);
  process.exit(1);
}

// Stack traces point into src/*.ts through the emitted source maps.
process.setSourceMapsEnabled(true);
await import(pathToFileURL(entry).href);
