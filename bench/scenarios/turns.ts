/**
 * Scenario `turns`: a burst of 2,000 reportUsage calls from 50 concurrent clients on one turn
 * (every 10th call a retry of an earlier callId), through GraphQL in process, against a raw
 * driver loop writing the same rows (report upsert + the agent's and the turn's sums, one
 * transaction each) with the same concurrency in the same run. No call may fail (0 conflict
 * errors) and the totals must come out exact.
 */
import pg from 'pg';
import { parseGlobalId } from '../../src/schema/ids.js';
import type { SqlClient } from '../../src/db/sql.js';
import { median, quantile, round, type BenchContext, type Row, type Scenario } from '../lib.js';

const REPORTS = 2_000;
const CLIENTS = 50;
const AGENTS = ['planner', 'coder', 'reviewer', 'tester', 'writer'];
const WARMUP = 50;

const CREATE = `mutation { createSession(input: { title: "turns bench" }) { id } }`;
const START = `mutation ($input: StartTurnInput!) { startTurn(input: $input) { id } }`;
const REPORT = `mutation ($input: ReportUsageInput!) { reportUsage(input: $input) { id status usage { totalTokens } } }`;
const TOTALS = `query ($id: ID!) { node(id: $id) { ... on Turn { usage { inputTokens outputTokens cost } usageByModel { model } } } }`;

interface Report {
  agentId: string;
  callId: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cost: number;
}

/** The burst: REPORTS calls, every 10th repeating the callId of the call before it. */
function burst(prefix: string): Report[] {
  const reports: Report[] = [];
  for (let i = 0; i < REPORTS; i++) {
    const n = i % 10 === 9 ? i - 1 : i;
    reports.push({
      agentId: AGENTS[n % AGENTS.length],
      callId: `${prefix}-${n}`,
      model: n % 3 ? 'model-a' : 'model-b',
      inputTokens: 100 + (n % 17),
      outputTokens: 20 + (n % 5),
      cost: 0.001,
    });
  }
  return reports;
}

function expectedTotals(reports: Report[]) {
  const seen = new Set<string>();
  let input = 0;
  let output = 0;
  for (const r of reports) {
    if (seen.has(r.callId)) continue;
    seen.add(r.callId);
    input += r.inputTokens;
    output += r.outputTokens;
  }
  return { input, output, distinct: seen.size };
}

/** Runs `work` over `items` with `clients` concurrent workers; returns the wall time and each call's latency. */
async function concurrently<T>(items: T[], clients: number, work: (item: T) => Promise<unknown>) {
  let next = 0;
  let errors = 0;
  const firstErrors: string[] = [];
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < items.length) {
        const item = items[next++];
        const t = performance.now();
        try {
          await work(item);
        } catch (error) {
          errors++;
          if (firstErrors.length < 3) firstErrors.push((error as Error).message.slice(0, 300));
        }
        latencies.push(performance.now() - t);
      }
    }),
  );
  return { ms: performance.now() - started, errors, firstErrors, latencies };
}

async function startTurn(ctx: BenchContext) {
  const session = (await ctx.gql<{ createSession: { id: string } }>(CREATE)).createSession.id;
  const turn = await ctx.gql<{ startTurn: { id: string } }>(START, { input: { sessionId: session, agentIds: AGENTS } });
  return turn.startTurn.id;
}

/** The same rows through the driver alone: one transaction per report, as the service writes them. */
function rawReport(query: (sql: string, values: unknown[]) => Promise<unknown>, turnId: string, r: Report, id: number) {
  return query(
    `WITH r AS (
       INSERT INTO "TurnUsageReport" (id, "turnId", "callId", "agentId", model, "inputTokens", "outputTokens", cost)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT ("turnId", "callId") DO NOTHING RETURNING 1
     ), a AS (
       UPDATE "TurnAgent" SET "inputTokens" = "inputTokens" + $6, "outputTokens" = "outputTokens" + $7, cost = cost + $8
       WHERE "turnId" = $2 AND "agentId" = $4 AND EXISTS (SELECT 1 FROM r)
     )
     UPDATE "Turn" SET "inputTokens" = "inputTokens" + $6, "outputTokens" = "outputTokens" + $7, cost = cost + $8
     WHERE id = $2 AND EXISTS (SELECT 1 FROM r)`,
    [`raw-${turnId}-${id}`, turnId, r.callId, r.agentId, r.model, r.inputTokens, r.outputTokens, r.cost],
  );
}

const turns: Scenario = {
  name: 'turns',
  description: 'burst of 2,000 reportUsage over 50 concurrent clients vs a raw driver upsert loop of the same rows',
  async run(ctx) {
    const rows: Row[] = [];

    const warm = await startTurn(ctx);
    await concurrently(burst('warm').slice(0, WARMUP), 10, (r) => ctx.gql(REPORT, { input: { turnId: warm, ...r } }));

    const statements = await ctx.countQueries(() =>
      ctx.gql(REPORT, { input: { turnId: warm, agentId: AGENTS[0], callId: 'counted', inputTokens: 1 } }),
    );
    rows.push({
      metric: 'report.statements',
      value: statements.count,
      unit: 'queries',
      note: 'statements one reportUsage sends, its response included (no transaction)',
    });

    const turnId = await startTurn(ctx);
    const reports = burst('c');
    ctx.collectGarbage();
    const api = await concurrently(reports, CLIENTS, (r) => ctx.gql(REPORT, { input: { turnId, ...r } }));
    if (api.firstErrors.length) ctx.log(`errors: ${api.firstErrors.join(' | ')}`);
    const expected = expectedTotals(reports);
    const read = await ctx.gql<{ node: { usage: { inputTokens: number; outputTokens: number } } }>(TOTALS, { id: turnId });
    const exact = read.node.usage.inputTokens === expected.input && read.node.usage.outputTokens === expected.output;
    if (!exact) ctx.log(`totals ${JSON.stringify(read.node.usage)} != expected ${JSON.stringify(expected)}`);

    // The baseline: a turn of its own, the same rows, the same concurrency, the driver alone.
    const rawTurnId = parseGlobalId(await startTurn(ctx), 'Turn', 'turnId');
    const databaseUrl = ctx.app.runtime.config.databaseUrl;
    let pool: pg.Pool | null = null;
    let query: (sql: string, values: unknown[]) => Promise<unknown>;
    if (databaseUrl) {
      pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
      query = (sql, values) => pool!.query(sql, values);
    } else {
      const sql: SqlClient = ctx.app.runtime.db.sql;
      query = (text, values) => sql.query(text, values);
    }
    ctx.collectGarbage();
    let id = 0;
    const raw = await concurrently(reports, CLIENTS, (r) => rawReport(query, rawTurnId, r, id++));
    await pool?.end();
    const [rawTotals] = await ctx.app.runtime.db.sql.query<{ inputTokens: bigint }>('SELECT "inputTokens" FROM "Turn" WHERE id = $1', [
      rawTurnId,
    ]);
    const rawExact = Number(rawTotals.inputTokens) === expected.input;

    const apiRate = REPORTS / (api.ms / 1000);
    const rawRate = REPORTS / (raw.ms / 1000);
    rows.push(
      {
        metric: 'burst.reports_per_s',
        value: round(apiRate, 1),
        unit: 'reports/s',
        note: `${REPORTS} reportUsage (${expected.distinct} distinct callIds), ${CLIENTS} clients, GraphQL in process`,
      },
      { metric: 'burst.p50_ms', value: round(median(api.latencies), 2), unit: 'ms', note: 'per call, queueing included' },
      { metric: 'burst.p99_ms', value: round(quantile(api.latencies, 0.99), 2), unit: 'ms', note: 'per call, queueing included' },
      { metric: 'burst.errors', value: api.errors, unit: 'errors', target: { op: '<=', value: 0 }, note: 'conflicts or any other failure' },
      {
        metric: 'burst.totals_exact',
        value: exact ? 1 : 0,
        unit: 'bool',
        target: { op: '>=', value: 1 },
        note: 'turn totals = sum over distinct callIds',
      },
      {
        metric: 'baseline.raw_reports_per_s',
        value: round(rawRate, 1),
        unit: 'reports/s',
        note: `same rows, ${databaseUrl ? 'raw pg Pool (max 10)' : "PGlite's driver"}, one upsert statement each, ${raw.errors} errors, totals ${rawExact ? 'exact' : 'WRONG'}`,
      },
      {
        metric: 'burst.vs_raw',
        value: round(rawRate / apiRate, 2),
        unit: 'ratio',
        note: 'raw rate / API rate: the cost of GraphQL, locking and the event log',
      },
    );
    return rows;
  },
};

export default turns;
