// Builds the explorer page (explorer/) into dist/explorer/: type-checks it (explorer/tsconfig.json),
// bundles explorer/src/main.ts with graphql-ws into one script (esbuild), and copies the HTML and
// CSS. Run by `npm run build` and `npm test`; the server serves dist/explorer/ as it is.
//
// Usage: node scripts/build-explorer.mjs [--no-check]
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'dist', 'explorer');

/** Bundles the page into dist/explorer/ (no type check). */
export async function buildExplorer() {
  mkdirSync(out, { recursive: true });
  await build({
    entryPoints: [join(root, 'explorer', 'src', 'main.ts')],
    outfile: join(out, 'explorer.js'),
    bundle: true,
    format: 'esm',
    target: 'es2022',
    minify: true,
    sourcemap: false,
    legalComments: 'none',
    logLevel: 'warning',
  });
  for (const file of ['index.html', 'explorer.css']) copyFileSync(join(root, 'explorer', file), join(out, file));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (!existsSync(join(root, 'explorer', 'generated'))) {
    const codegen = join(root, 'node_modules', '.bin', 'graphql-codegen');
    if (!existsSync(codegen)) {
      // An install without dev dependencies: the server runs, and /explorer says it is not built.
      console.warn('explorer: not built (its typed documents need @graphql-codegen/cli, a dev dependency).');
      process.exit(0);
    }
    execFileSync(codegen, ['--config', 'codegen.ts', '--silent'], { cwd: root, stdio: 'inherit' });
  }
  if (!process.argv.includes('--no-check')) {
    execFileSync(
      process.execPath,
      [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'explorer', 'tsconfig.json')],
      {
        stdio: 'inherit',
      },
    );
  }
  await buildExplorer();
}
