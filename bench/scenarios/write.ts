/**
 * Scenario `write`: `appendMessages` (one message per call) from 50 concurrent autocannon
 * connections, each on its own session, then all 50 on one session, counting failed calls
 * (conflict errors included: there must be none). Baseline in the same run: the load process's
 * raw driver loop doing the same SQL work with 50 concurrent clients (pool of 10, as the
 * server's): BEGIN; SELECT … FOR UPDATE the session row; INSERT the message at the next position;
 * UPDATE the session's counters; COMMIT. The server's rounds run first, then the server stops and
 * the raw rounds run on the same database (PGlite is one process's folder). Target ≥ 0.50.
 */
import { parseGlobalId } from '../../src/schema/ids.js';
import type { ProcessScenario, Row } from '../lib.js';
import { FILLER, type Round, seedSessions, summary, throughputRows } from './_shared.js';

const APPEND_ONE = `mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { id index } } }`;
const CLIENTS = 50;

const write: ProcessScenario = {
  name: 'write',
  mode: 'process',
  description: 'appendMessages from 50 clients on their own sessions and on one session vs the locked raw insert',
  async run(ctx) {
    const durationS = ctx.smoke ? 1 : 5;
    const db = await ctx.database();
    const server = await ctx.server(db);
    const own = await seedSessions(ctx, server.url, CLIENTS, 0, 'write own');
    const [one] = await seedSessions(ctx, server.url, 1, 0, 'write one');
    const body = (sessionId: string) =>
      JSON.stringify({
        query: APPEND_ONE,
        variables: { input: { sessionId, messages: [{ role: 'ASSISTANT', text: `append ${FILLER}` }] } },
      });
    const cases = [
      { name: 'own', label: '50 clients, each on its own session', bodies: own.map(body), raw: own },
      { name: 'one', label: '50 clients on one session', bodies: [body(one)], raw: [one] },
    ];
    const measured = new Map<string, Round[]>();
    if (!ctx.smoke) await ctx.load<Round>('http', { url: server.url, connections: CLIENTS, durationS: 2, bodies: cases[0].bodies });
    for (const c of cases) {
      const rounds: Round[] = [];
      for (let r = 0; r < ctx.rounds; r++) {
        const round = await ctx.load<Round>('http', { url: server.url, connections: CLIENTS, durationS, bodies: c.bodies });
        ctx.log(`${c.label} round ${r + 1}: ${round.rps.toFixed(0)} ops/s p99 ${round.p99.toFixed(1)} ms, ${round.failed} failed`);
        if (round.failed) ctx.log(`  first errors: ${round.firstErrors?.join(' | ')}`);
        rounds.push(round);
      }
      measured.set(c.name, rounds);
    }
    await server.stop();
    const rows: Row[] = [];
    for (const c of cases) {
      const sessions = c.raw.map((id) => parseGlobalId(id, 'Session', 'id'));
      const raw: Round[] = [];
      for (let r = 0; r < ctx.rounds; r++) {
        const round = await ctx.load<Round>('raw-writes', {
          databaseUrl: db.url,
          dataDir: db.dataDir,
          sessions,
          clients: CLIENTS,
          durationS,
        });
        ctx.log(`raw, ${c.label} round ${r + 1}: ${round.rps.toFixed(0)} ops/s p99 ${round.p99.toFixed(1)} ms`);
        raw.push(round);
      }
      rows.push(
        ...throughputRows(
          `write.${c.name}`,
          `appendMessages, ${c.label}`,
          'raw driver: locked insert in a transaction, same clients',
          { server: summary(measured.get(c.name)!), baseline: summary(raw) },
          { op: '>=', value: 0.5 },
          'ops/s',
        ),
      );
    }
    return rows;
  },
};

export default write;
