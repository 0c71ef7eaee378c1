// The server under test without its deviations from the obvious implementation, for
// `npm run bench -- --deviations=off` (bench/README.md). It starts the compiled server exactly as
// `node dist/main.js` does (`start` in src/start.ts, the same environment), but with
// `buildApp(config, { deviations })` turning the deviations off: all of them (`NO_DEVIATIONS`), or
// only those named as arguments (`node bench/servers/obvious.mjs httpFastPath queryJit`).
// `--source` runs src/ instead of dist/, under `node --import tsx` (the read scenario's tsx row).
// Bench-only: the server itself has no setting that turns a deviation off (docs/performance.md).
const args = process.argv.slice(2);
const source = args.includes('--source');
const named = args.filter((arg) => arg !== '--source');
const root = source ? '../../src/' : '../../dist/';
const { NO_DEVIATIONS } = await import(`${root}app.${source ? 'ts' : 'js'}`);
const { start } = await import(`${root}start.${source ? 'ts' : 'js'}`);
const unknown = named.filter((name) => !(name in NO_DEVIATIONS));
if (unknown.length) {
  console.error(`obvious.mjs: unknown deviation(s) ${unknown.join(', ')}; known: ${Object.keys(NO_DEVIATIONS).join(', ')}`);
  process.exit(2);
}
const deviations = named.length ? Object.fromEntries(named.map((name) => [name, false])) : NO_DEVIATIONS;
// To stderr: stdout carries what `node dist/main.js` prints, which the runner reads.
console.error(`session-graph (bench): deviations off: ${Object.keys(deviations).join(', ')}`);
await start({ deviations });
