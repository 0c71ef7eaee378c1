/**
 * Scenario `read`: session reads (`session { title messageCount messages(first: 20) { … } }`) from
 * autocannon in the load process, 10 and 50 connections, against a bare graphql-yoga `{ hello }`
 * process with the same connections in the same run. Ten sessions of 200 messages, each connection
 * reading one of them. Targets: ≥ 0.40 of bare Yoga on PostgreSQL, ≥ 0.25 on PGlite. On PostgreSQL
 * the full run also reads with the server on `tsx src/main.ts` (10 connections), to show how far
 * the development runtime is from the compiled one.
 */
import type { ProcessScenario, Row } from '../lib.js';
import { round } from '../lib.js';
import { type Round, SESSION_READ, interleaved, seedSessions, summary, throughputRows } from './_shared.js';

const HELLO = JSON.stringify({ query: '{ hello }' });

const read: ProcessScenario = {
  name: 'read',
  mode: 'process',
  description: 'session reads (title, messageCount, 20 messages) by autocannon at 10 and 50 connections vs bare Yoga { hello }',
  async run(ctx) {
    const durationS = ctx.smoke ? 1 : 5;
    const db = await ctx.database();
    const server = await ctx.server(db);
    const bare = await ctx.bareYoga();
    const sessions = await seedSessions(ctx, server.url, ctx.smoke ? 2 : 10, ctx.smoke ? 40 : 200, 'read');
    const bodies = sessions.map((id) => JSON.stringify({ query: SESSION_READ, variables: { id } }));
    const check = await ctx.gql(server.url, SESSION_READ, { id: sessions[0] });
    if (check.session.messages.edges.length !== 20)
      throw new Error(`the session read returned ${check.session.messages.edges.length} messages`);
    const http = (url: string, connections: number, body: string[]) => () =>
      ctx.load<Round>('http', { url, connections, durationS, bodies: body });
    // Warm-up: JIT and caches of both processes.
    if (!ctx.smoke) {
      await http(server.url, 10, bodies)();
      await http(bare.url, 10, [HELLO])();
    }
    const rows: Row[] = [];
    const target = { op: '>=' as const, value: ctx.backend === 'postgres' ? 0.4 : 0.25 };
    for (const connections of ctx.smoke ? [10] : [10, 50]) {
      const result = await interleaved(ctx, `${connections} connections`, {
        server: http(server.url, connections, bodies),
        baseline: http(bare.url, connections, [HELLO]),
      });
      rows.push(
        ...throughputRows(
          `read.${connections}`,
          `session read, ${connections} connections, server on dist/`,
          `bare Yoga { hello }, ${connections} connections`,
          result,
          target,
        ),
      );
    }
    rows.push({ metric: 'read.rss_after', value: round(server.rss() / 2 ** 20, 1), unit: 'MB', note: 'server RSS after the read load' });
    rows.push({
      metric: 'read.baseline.rss_after',
      value: round(bare.rss() / 2 ** 20, 1),
      unit: 'MB',
      note: 'bare Yoga RSS after the same load',
    });
    await server.stop();
    if (ctx.backend === 'postgres' && !ctx.smoke) {
      const dev = await ctx.server(db, { runtime: 'tsx' });
      await http(dev.url, 10, bodies)();
      const rounds: Round[] = [];
      for (let r = 0; r < ctx.rounds; r++) rounds.push(await http(dev.url, 10, bodies)());
      const tsx = summary(rounds);
      rows.push({
        metric: 'read.10.tsx.rps',
        value: round(tsx.rps, 1),
        unit: 'req/s',
        note: 'the same read with the server on tsx src/main.ts (npm run dev)',
      });
      await dev.stop();
    }
    return rows;
  },
};

export default read;
