/**
 * Pure-function benchmark: `npx tsx bench/_pure-assemble.ts`.
 * A 10,000-message generated session (text, code, JSON, CJK, tool rounds) assembled at a 128k
 * budget with stored counts, against the same assembly with every message recounted from scratch.
 */
import { runAssembly } from '../src/domain/assembly/index.js';
import { markImmutable } from '../src/domain/immutable.js';
import type { TokenEncoding } from '../src/domain/types.js';
import { generateSession, makeInput } from '../test/unit/assembly/helpers.js';
import { median } from './lib.js';

const messages = generateSession(10_000, 7);
const uncounted = messages.map((m) => ({ ...m, tokens: null }));
// As the server's parts cache holds finished messages: frozen, so payload pieces are kept.
const cached = messages.map((m) => ({ ...m, parts: markImmutable(structuredClone(m.parts)) }));

/** Wall-clock and CPU time (process.cpuUsage: less sensitive to other processes on a shared machine). */
function time(label: string, fn: () => unknown, runs: number) {
  fn(); // warm-up
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const c = process.cpuUsage();
    const t = performance.now();
    fn();
    wall.push(performance.now() - t);
    const d = process.cpuUsage(c);
    cpu.push((d.user + d.system) / 1000);
  }
  console.log(
    `${label}: wall median ${median(wall).toFixed(2)} ms (min ${Math.min(...wall).toFixed(2)}), cpu median ${median(cpu).toFixed(2)} ms (${runs} runs)`,
  );
}

for (const encoding of ['O200K_BASE', 'CL100K_BASE'] as TokenEncoding[]) {
  for (const format of ['OPENAI_CHAT', 'ANTHROPIC_MESSAGES'] as const) {
    const input = makeInput(messages, { maxTokens: 128_000, encoding, format, system: 'You are a helpful assistant.' });
    const r = runAssembly(input);
    console.log(
      `${encoding} ${format}: kept ${r.messages.length} messages, ${r.tokenCount} tokens, dropped ${r.droppedMessageCount}, elided ${r.elidedToolResultCount}`,
    );
    time(`  stored counts`, () => runAssembly(input), 30);
    time(`  stored counts, cached (immutable) parts`, () => runAssembly({ ...input, messages: cached }), 30);
    time(`  no maxTokens (all 10k kept)`, () => runAssembly({ ...input, options: { ...input.options, maxTokens: null } }), 10);
    time(`  recount from scratch`, () => runAssembly({ ...input, messages: uncounted }), 5);
  }
}
