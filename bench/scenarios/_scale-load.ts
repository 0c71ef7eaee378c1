/**
 * The `scale` scenario's bulk loader: a workspace of `sessions` sessions with their messages, turns
 * and event log, written by a few INSERT … SELECT generate_series statements (no row goes through
 * the app), keeping the invariants the app keeps:
 *   - ids are uuidv7-shaped and time-ordered (a session's id sorts as its createdAt does);
 *   - messages sit at positions 0 … messageCount-1 of the session that wrote them (USER at even
 *     positions, ASSISTANT at odd), with their token counts stored (real o200k / cl100k counts of
 *     the text) and the generated search vector computed by the database;
 *   - a tenth of the sessions are forks, cut at position 2 of a root (lineage, forkIndex,
 *     forkPointMessageId, ancestorIds, depth as forkSession writes them, no message copied), and one
 *     in fifty of the oldest tenth is a sub-agent session run in turn 1 of a root (a feature used
 *     for a while: the newest matches of a filter on it lie far down a newest-first list);
 *   - roots have a COMPLETED turn per USER/ASSISTANT pair (turnCount, Message.turnId);
 *   - every own message has its MESSAGE_ADDED event, sequences 1 … eventSequence without gaps.
 * Texts come from a pool of 4,096 made here from a Zipf-distributed vocabulary (common words are
 * common, as in real text), sized to about 225 tokens per message on average (the context scenario's
 * figure).
 */
import { countTokens } from '../../src/domain/tokens.js';
import { rng as random } from '../../test/unit/assembly/helpers.js';
import type { BenchContext } from '../lib.js';

const POOL = 4_096;
const VOCABULARY = 4_000;
const TOPICS = 100;

const SYLLABLES = [
  'ka',
  'lo',
  'mer',
  'tin',
  'sa',
  're',
  'vol',
  'pan',
  'di',
  'gor',
  'shi',
  'ven',
  'tal',
  'ru',
  'bex',
  'no',
  'cra',
  'fel',
  'um',
  'ast',
];

/** Pseudo-words: never English stop words, so every one of them is searchable. */
export function vocabulary(): string[] {
  const next = random(7);
  const words = new Set<string>();
  while (words.size < VOCABULARY) {
    const n = 2 + Math.floor(next() * 2);
    let word = '';
    for (let i = 0; i < n; i++) word += SYLLABLES[Math.floor(next() * SYLLABLES.length)];
    words.add(word);
  }
  return [...words];
}

/** Word of rank r (0-based) drawn with probability ∝ 1 / (r + 1): Zipf's law. */
function zipf(words: string[], next: () => number) {
  const cumulative: number[] = [];
  let sum = 0;
  for (let r = 0; r < words.length; r++) cumulative.push((sum += 1 / (r + 1)));
  return () => {
    const x = next() * sum;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return words[lo];
  };
}

export interface PoolText {
  text: string;
  o200k: number;
  cl100k: number;
}

/** POOL texts: the first half USER messages (short), the second half ASSISTANT replies (longer). */
export function textPool(words: string[]): { texts: PoolText[]; topics: string[] } {
  const next = random(11);
  const word = zipf(words, next);
  const sentence = (n: number) => {
    const parts: string[] = [];
    for (let i = 0; i < n; i++) parts.push(word());
    const s = parts.join(' ');
    return `${s[0].toUpperCase()}${s.slice(1)}.`;
  };
  const texts: PoolText[] = [];
  for (let i = 0; i < POOL; i++) {
    const user = i < POOL / 2;
    const wordCount = user ? 8 + Math.floor(next() * 50) : 50 + Math.floor(next() * 180);
    const sentences: string[] = [];
    for (let left = wordCount; left > 0; ) {
      const n = Math.min(left, 6 + Math.floor(next() * 14));
      sentences.push(sentence(n));
      left -= n;
    }
    const text = sentences.join(' ');
    texts.push({ text, o200k: countTokens(text, 'O200K_BASE'), cl100k: countTokens(text, 'CL100K_BASE') });
  }
  const topics = Array.from({ length: TOPICS }, (_, i) => `${words[40 + i]} ${words[400 + ((i * 37) % 1000)]}`);
  return { texts, topics };
}

/** A uuidv7-shaped id over SQL expressions: `ms` (bigint milliseconds) and `salt` (text, unique per row). */
function uuidSql(ms: string, salt: string) {
  const hex = `(lpad(to_hex((${ms})::bigint), 12, '0') || '7' || substr(md5(${salt}), 1, 3) || '8' || substr(md5(${salt}), 4, 15))`;
  return `(substr(${hex}, 1, 8) || '-' || substr(${hex}, 9, 4) || '-' || substr(${hex}, 13, 4) || '-' || substr(${hex}, 17, 4) || '-' || substr(${hex}, 21, 12))`;
}

/** The id of plan row `p`'s message at position `pos` (the same expression wherever it is needed). */
const MESSAGE_ID = (p: string, pos: string) => uuidSql(`${p}.created_ms + 10 * ${pos} + 5`, `'m' || ${p}.g || ':' || ${pos}`);
const TURN_ID = (p: string, k: string) => uuidSql(`${p}.created_ms + 20 * (${k} - 1) + 1`, `'t' || ${p}.g || ':' || ${k}`);

export interface Loaded {
  sessions: number;
  messages: number;
  turns: number;
  events: number;
  tokensPerMessage: number;
  seconds: number;
  /** Raw ids of a few sessions to operate on: roots (with ≥ 4 messages) from the middle of the table. */
  roots: string[];
  /** A root that has forks (for the parentId filter). */
  parentWithForks: string;
  /** A word of about 1 % of the titles (for titleContains). */
  titleWord: string;
}

/**
 * Loads `sessions` sessions into `ctx`'s database (its default workspace), then VACUUM ANALYZE on
 * PostgreSQL (ANALYZE on PGlite), as a table in steady use has its statistics and visibility map.
 */
export async function loadScale(ctx: BenchContext, sessions: number, pool: { texts: PoolText[]; topics: string[] }): Promise<Loaded> {
  const prisma = ctx.app.runtime.db.prisma;
  const started = performance.now();
  let lap = performance.now();
  const run = async (sql: string, ...values: unknown[]) => {
    const n = await prisma.$executeRawUnsafe(sql, ...values);
    const now = performance.now();
    if (now - lap > 2_000) ctx.log(`  ${((now - lap) / 1000).toFixed(1)} s: ${sql.trim().split('\n')[0].slice(0, 60)}`);
    lap = now;
    return n;
  };
  await run(
    'CREATE UNLOGGED TABLE bench_pool (i int PRIMARY KEY, text text NOT NULL, parts jsonb NOT NULL, o200k int NOT NULL, cl100k int NOT NULL)',
  );
  await run(
    `INSERT INTO bench_pool SELECT i - 1, t, jsonb_build_array(jsonb_build_object('type', 'text', 'text', t)), o, c
     FROM unnest($1::text[], $2::int[], $3::int[]) WITH ORDINALITY AS x(t, o, c, i)`,
    pool.texts.map((t) => t.text),
    pool.texts.map((t) => t.o200k),
    pool.texts.map((t) => t.cl100k),
  );
  // One row per session: what it is and where it sits. Sessions are a second apart, oldest first,
  // ending a day ago.
  await run(`CREATE UNLOGGED TABLE bench_plan (g int PRIMARY KEY, id text NOT NULL, kind text NOT NULL, parent_g int,
    fork_index int, mc int NOT NULL, created_ms bigint NOT NULL, title text NOT NULL)`);
  await run(
    `INSERT INTO bench_plan
     SELECT g, ${uuidSql('b.ms + 1000 * g', `'s' || g`)}, k.kind, CASE WHEN k.kind = 'FORK' THEN g - 1 END,
       CASE WHEN k.kind = 'FORK' THEN 2 END,
       CASE WHEN k.kind = 'FORK' THEN 6 + g % 5 ELSE 4 + (g * 7) % 15 END,
       b.ms + 1000 * g, ($2::text[])[1 + (g * 31) % ${TOPICS}] || ' #' || g
     FROM (SELECT (extract(epoch FROM now()) * 1000)::bigint - 86400000 - 1000 * $1::bigint AS ms) b,
       generate_series(1, $1::int) AS g,
       LATERAL (SELECT CASE WHEN g % 10 = 0 THEN 'FORK' WHEN g % 50 = 25 AND g <= $1 / 10 THEN 'SUB_AGENT' ELSE 'ROOT' END AS kind) k`,
    sessions,
    pool.topics,
  );
  await run(
    `INSERT INTO "Session" (id, "workspaceId", title, "parentId", "rootId", "ancestorIds", depth, "forkIndex", lineage, kind,
       "agentId", "messageCount", "eventSequence", "turnCount", "createdAt", "updatedAt")
     SELECT p.id, $1, p.title, parent.id, coalesce(parent.id, p.id),
       CASE WHEN parent.id IS NULL THEN '{}'::text[] ELSE ARRAY[parent.id] END,
       CASE WHEN parent.id IS NULL THEN 0 ELSE 1 END, p.fork_index,
       CASE WHEN parent.id IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(jsonb_build_object(
         'sessionId', parent.id, 'start', 0, 'end', p.fork_index, 'compactions', 0, 'transforms', 0)) END,
       p.kind::"SessionKind", CASE WHEN p.kind = 'SUB_AGENT' THEN 'agent' END,
       p.mc, p.mc - coalesce(p.fork_index, 0), CASE WHEN p.kind = 'ROOT' THEN p.mc / 2 ELSE 0 END,
       to_timestamp(p.created_ms / 1000.0), to_timestamp(p.created_ms / 1000.0) + interval '1 second'
     FROM bench_plan p LEFT JOIN bench_plan parent ON parent.g = p.parent_g`,
    ctx.workspaceId,
  );
  // The bulk tables' secondary indexes are built once the rows are in (sorted builds, much cheaper
  // than a million insertions each), from their own definitions, so they are the migrations' indexes.
  const indexes = await prisma.$queryRawUnsafe<{ name: string; definition: string }[]>(
    `SELECT indexname AS name, indexdef AS definition FROM pg_indexes
     WHERE schemaname = current_schema() AND tablename IN ('Message', 'SessionEvent', 'Turn') AND indexname NOT LIKE '%\\_pkey'`,
  );
  for (const index of indexes) await run(`DROP INDEX "${index.name}"`);
  await run(
    `INSERT INTO "Turn" (id, "sessionId", number, status, "initiatorKind", "inputTokens", "outputTokens", "startedAt", "completedAt", "lastActivityAt")
     SELECT ${TURN_ID('p', 'k')}, p.id, k, 'COMPLETED', 'USER', 1000 + k * 200, 250,
       to_timestamp((p.created_ms + 20 * (k - 1)) / 1000.0), to_timestamp((p.created_ms + 20 * k) / 1000.0),
       to_timestamp((p.created_ms + 20 * k) / 1000.0)
     FROM bench_plan p, generate_series(1, p.mc / 2) AS k WHERE p.kind = 'ROOT'`,
  );
  // Messages and their MESSAGE_ADDED events in one statement per slice of sessions (two slices run
  // at once on PostgreSQL: to_tsvector of the generated column is most of the cost).
  const slices = ctx.backend === 'postgres' ? 2 : 1;
  const insertSlice = (lo: number, hi: number) =>
    run(
      `WITH m AS (
         INSERT INTO "Message" (id, "sessionId", position, role, parts, text, "toolCallIds", "toolResultIds", generating,
           "tokensO200k", "tokensCl100k", "turnId", "createdAt", "updatedAt")
         SELECT ${MESSAGE_ID('p', 'pos')}, p.id, pos, (CASE WHEN pos % 2 = 0 THEN 'USER' ELSE 'ASSISTANT' END)::"MessageRole",
           t.parts, t.text, '{}', '{}', false, t.o200k, t.cl100k,
           CASE WHEN p.kind = 'ROOT' AND pos / 2 < p.mc / 2 THEN ${TURN_ID('p', '(pos / 2 + 1)')} END,
           to_timestamp((p.created_ms + 10 * pos + 5) / 1000.0), to_timestamp((p.created_ms + 10 * pos + 5) / 1000.0)
         FROM bench_plan p, generate_series(coalesce(p.fork_index, 0), p.mc - 1) AS pos,
           bench_pool t
         WHERE p.g >= $1 AND p.g < $2 AND t.i = (pos % 2) * ${POOL / 2} + (p.g * 131 + pos * 7) % ${POOL / 2}
         RETURNING id, "sessionId", position, role, "turnId", "createdAt"
       ), f AS (SELECT g, coalesce(fork_index, 0) AS start FROM bench_plan WHERE g >= $1 AND g < $2)
       INSERT INTO "SessionEvent" (id, "sessionId", sequence, type, "turnId", "messageId", payload, "createdAt")
       SELECT ${uuidSql(`(extract(epoch FROM m."createdAt") * 1000)::bigint`, `'e' || m.id`)}, m."sessionId",
         m.position - coalesce(p.fork_index, 0) + 1, 'MESSAGE_ADDED', m."turnId", m.id,
         jsonb_build_object('index', m.position, 'role', m.role, 'generating', false), m."createdAt"
       FROM m JOIN bench_plan p ON p.id = m."sessionId"`,
      lo,
      hi,
    );
  const step = Math.ceil(sessions / slices);
  const bounds = Array.from({ length: slices }, (_, i) => [1 + i * step, 1 + Math.min(sessions, (i + 1) * step)] as const);
  await Promise.all(bounds.map(([lo, hi]) => insertSlice(lo, hi)));
  // Two lanes on PostgreSQL: the GIN index (the longest build) beside the others.
  const build = async (list: typeof indexes) => {
    for (const index of list) {
      await prisma.$transaction(
        async (tx) => {
          await tx.$executeRawUnsafe(`SET LOCAL maintenance_work_mem = '256MB'`);
          await tx.$executeRawUnsafe(index.definition);
        },
        { maxWait: 60_000, timeout: 600_000 },
      );
    }
  };
  const gin = indexes.filter((i) => /USING gin/i.test(i.definition));
  const rest = indexes.filter((i) => !gin.includes(i));
  if (ctx.backend === 'postgres') await Promise.all([build(gin), build(rest)]);
  else await build([...gin, ...rest]);
  ctx.log(`  ${((performance.now() - lap) / 1000).toFixed(1)} s: ${indexes.length} indexes built`);
  lap = performance.now();
  // Fork points and sub-agent parents, now that the messages and turns they name exist.
  await run(
    `UPDATE "Session" s SET "forkPointMessageId" = ${MESSAGE_ID('parent', 'p.fork_index')}
     FROM bench_plan p JOIN bench_plan parent ON parent.g = p.parent_g WHERE s.id = p.id AND p.kind = 'FORK'`,
  );
  await run(
    `UPDATE "Session" s SET "parentTurnId" = ${TURN_ID('parent', '1')}, "parentMessageCount" = 2
     FROM bench_plan p JOIN bench_plan parent ON parent.g = p.g - 1 WHERE s.id = p.id AND p.kind = 'SUB_AGENT'`,
  );
  // From a multiple of ten on: the first fork (g % 10 = 0) has its parent (g - 1) in the range too.
  const mid = Math.floor(sessions / 20) * 10 + 1;
  const picks = await prisma.$queryRawUnsafe<{ id: string; kind: string; g: number }[]>(
    `SELECT id, kind, g FROM bench_plan WHERE g BETWEEN $1 AND $1 + 40 ORDER BY g`,
    mid,
  );
  const roots = picks.filter((p) => p.kind === 'ROOT').map((p) => p.id);
  const forked = picks.find((p) => p.kind === 'FORK')!;
  const parentWithForks = picks.find((p) => p.g === forked.g - 1)!.id;
  await run('DROP TABLE bench_plan');
  await run('DROP TABLE bench_pool');
  if (ctx.backend === 'postgres') await run('VACUUM ANALYZE');
  else await run('ANALYZE');
  const [counts] = await prisma.$queryRawUnsafe<{ sessions: number; messages: number; turns: number; events: number; tokens: number }[]>(
    `SELECT (SELECT count(*) FROM "Session")::int AS sessions, (SELECT count(*) FROM "Message")::int AS messages,
       (SELECT count(*) FROM "Turn")::int AS turns, (SELECT count(*) FROM "SessionEvent")::int AS events,
       (SELECT avg("tokensO200k") FROM "Message")::float AS tokens`,
  );
  return {
    sessions: counts.sessions,
    messages: counts.messages,
    turns: counts.turns,
    events: counts.events,
    tokensPerMessage: counts.tokens,
    seconds: (performance.now() - started) / 1000,
    roots,
    parentWithForks,
    titleWord: pool.topics[7].split(' ')[0],
  };
}
