/**
 * What one read replica takes off the primary (#49): the same read-heavy load (a session's page of
 * messages and its counts, by many clients at once) against one server without replicas and one
 * with DATABASE_REPLICA_URLS, each measuring the CPU time the primary's PostgreSQL processes spent
 * (from /proc), the replica's, and the reads per second. Not a runner scenario: it needs
 * `scripts/pg-replica.sh up` (primary 5441, replica 5442) and root to read the postgres processes.
 *
 *   scripts/pg-replica.sh up && npx tsx bench/replica-load.ts [--reads=4000] [--clients=16]
 *
 * On a 2-core machine the server itself and both PostgreSQL clusters share the cores, so reads
 * per second cannot show what a replica on its own machine adds; the primary's CPU per read is the
 * figure that says whether the replica took the reads.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';

const arg = (name: string, fallback: number) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const READS = arg('reads', 4000);
const CLIENTS = arg('clients', 16);
const ROOT = process.env.PG_REPLICA_DIR ?? '/tmp/sg-pg-replica';
const PRIMARY = 'postgres://postgres@127.0.0.1:5441';
const REPLICA = 'postgres://postgres@127.0.0.1:5442';

/** CPU seconds used so far by a cluster's postmaster and all its children (backends, walsender, startup…). */
function clusterCpuSeconds(dataDir: string): number {
  const postmaster = Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
  const tick = 100;
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ppid = Number(fields[1]);
      if (Number(entry) !== postmaster && ppid !== postmaster) continue;
      total += (Number(fields[11]) + Number(fields[12])) / tick;
    } catch {
      // The process ended meanwhile.
    }
  }
  return total;
}

const QUERY = `query Read($id: ID!) { node(id: $id) { ... on Session { title messageCount messages(last: 20) { edges { node { id role text } } } } } }`;

async function measure(label: string, databaseUrl: string, replicaUrls: string[], sessionId: string | null) {
  const config = {
    ...loadConfig({ RATE_LIMIT: '0', LOG_LEVEL: 'silent' }),
    port: 0,
    host: '127.0.0.1',
    databaseUrl,
    databaseReplicaUrls: replicaUrls,
    authRequired: false,
    apiKeys: [],
  };
  const app = await buildApp(config);
  const url = await app.listen(0, '127.0.0.1');
  const post = async (query: string, variables: Record<string, unknown> = {}) => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await response.json()) as { data?: Record<string, { id: string }>; errors?: unknown[] };
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body;
  };
  let id = sessionId;
  if (!id) {
    const created = await post('mutation { createSession(input: { title: "bench" }) { id } }');
    id = created.data!.createSession.id;
    for (let i = 0; i < 10; i++) {
      await post(
        'mutation ($id: ID!) { appendMessages(input: { sessionId: $id, messages: [{ role: USER, text: "a question" }, { role: ASSISTANT, text: "an answer" }] }) { session { id } } }',
        { id },
      );
    }
    // Let the replica replay the seed, so every read can go to it.
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  // Warm-up: connections opened, documents compiled.
  for (let i = 0; i < 200; i++) await post(QUERY, { id });
  const primaryBefore = clusterCpuSeconds(`${ROOT}/primary`);
  const replicaBefore = clusterCpuSeconds(`${ROOT}/replica`);
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next++ < READS) await post(QUERY, { id });
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  const primaryCpu = clusterCpuSeconds(`${ROOT}/primary`) - primaryBefore;
  const replicaCpu = clusterCpuSeconds(`${ROOT}/replica`) - replicaBefore;
  await app.close();
  console.log(
    `| ${label} | ${Math.round(READS / seconds)} | ${primaryCpu.toFixed(2)} | ${((primaryCpu / READS) * 1e6).toFixed(0)} | ${replicaCpu.toFixed(2)} |`,
  );
  return id;
}

const name = `sg_bench_replica_${randomBytes(3).toString('hex')}`;
const admin = new pg.Client({ connectionString: `${PRIMARY}/postgres` });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
try {
  console.log(
    `${READS} reads by ${CLIENTS} clients, ${new Date().toISOString()}, load average ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}\n`,
  );
  console.log('| server | reads/s | primary CPU s | primary CPU µs/read | replica CPU s |');
  console.log('| --- | --- | --- | --- | --- |');
  const id = await measure('primary alone', `${PRIMARY}/${name}`, [], null);
  await measure('primary + 1 replica', `${PRIMARY}/${name}`, [`${REPLICA}/${name}`], id);
  await measure('primary alone (again)', `${PRIMARY}/${name}`, [], id);
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
