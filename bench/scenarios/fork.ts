/**
 * Scenario `fork`: forkSession must cost the same at any parent length (copy-on-write), and a fork
 * nested 20 deep must read its first and last page of 50 messages in at most 3 SQL statements.
 */
import { median, p95, round, type BenchContext, type Row, type Scenario } from '../lib.js';

const WARMUP = 5;
const ITERATIONS = 30;
const NESTED_DEPTH = 20;
const PAGE_READS = 20;
const WIDE_TREE = 2_000;
const WIDE_FORKS = 30;

const FORK = `mutation ($input: ForkSessionInput!) {
  forkSession(input: $input) { session { id title messageCount } excludedMessage { id index role } }
}`;

const APPEND = `mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { session { messageCount } } }`;

const PAGE = `query ($id: ID!, $first: Int, $last: Int) {
  session(id: $id) { id messageCount messages(first: $first, last: $last) { edges { node { id index role text } } pageInfo { hasNextPage hasPreviousPage } } }
}`;

interface ForkResult {
  forkSession: {
    session: { id: string; title: string; messageCount: number };
    excludedMessage: { id: string; index: number; role: string };
  };
}

async function forkOnce(ctx: BenchContext, sessionId: string, messageIndex: number) {
  const { ms, result } = await ctx.time(() => ctx.gql<ForkResult>(FORK, { input: { sessionId, messageIndex } }));
  const fork = result.forkSession;
  if (fork.session.messageCount !== messageIndex || fork.excludedMessage.index !== messageIndex || fork.excludedMessage.role !== 'USER') {
    throw new Error(`unexpected fork result: ${JSON.stringify(fork)}`);
  }
  return { ms, id: fork.session.id };
}

const fork: Scenario = {
  name: 'fork',
  description: 'forkSession latency at 10 vs 100,000 messages; reads of a fork nested 20 deep',
  async run(ctx) {
    const rows: Row[] = [];
    const seedStarted = performance.now();
    const small = await ctx.seedSession({ title: 'bench 10', messages: 10, analyze: false });
    const large = await ctx.seedSession({ title: 'bench 100k', messages: 100_000, analyze: false });
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    ctx.log(`seeded 10 + 100,000 messages in ${seedSeconds.toFixed(1)} s`);
    rows.push({ metric: 'seed.100k', value: round(seedSeconds, 2), unit: 's', note: 'one INSERT … SELECT generate_series' });

    // A USER message near the end (USER sits at even positions).
    const cut = (n: number) => n - 2;

    // Right after a bulk load the planner has no statistics for the new rows yet: a query plan that
    // depends on them shows here as a cost growing with length (reported, no target).
    const fresh = { small: [] as number[], large: [] as number[] };
    for (let i = 0; i < 3 + 10; i++) {
      const a = await forkOnce(ctx, small.id, cut(small.messageCount));
      const b = await forkOnce(ctx, large.id, cut(large.messageCount));
      if (i >= 3) {
        fresh.small.push(a.ms);
        fresh.large.push(b.ms);
      }
    }
    rows.push(
      { metric: 'fork.median.100k.no-stats', value: round(median(fresh.large)), unit: 'ms', note: 'before ANALYZE, 10 forks' },
      {
        metric: 'fork.ratio.no-stats',
        value: round(median(fresh.large) / median(fresh.small)),
        unit: 'ratio',
        note: "before ANALYZE: >1.5 means a plan scans the parent's messages",
      },
    );
    await ctx.app.runtime.db.prisma.$executeRawUnsafe('ANALYZE "Message"');
    const samples = { small: [] as number[], large: [] as number[] };
    ctx.collectGarbage();
    for (let i = 0; i < WARMUP + ITERATIONS; i++) {
      // Interleaved, so drift (caches, JIT, autovacuum) hits both lengths alike.
      const a = await forkOnce(ctx, small.id, cut(small.messageCount));
      const b = await forkOnce(ctx, large.id, cut(large.messageCount));
      if (i >= WARMUP) {
        samples.small.push(a.ms);
        samples.large.push(b.ms);
      }
    }
    const smallMedian = median(samples.small);
    const largeMedian = median(samples.large);
    const latencyTarget = ctx.backend === 'postgres' ? { op: '<' as const, value: 10 } : null;
    const n = `${ITERATIONS} forks after ${WARMUP} warm-up`;
    rows.push(
      { metric: 'fork.median.10', value: round(smallMedian), unit: 'ms', target: latencyTarget, note: n },
      { metric: 'fork.p95.10', value: round(p95(samples.small)), unit: 'ms' },
      { metric: 'fork.median.100k', value: round(largeMedian), unit: 'ms', target: latencyTarget, note: n },
      { metric: 'fork.p95.100k', value: round(p95(samples.large)), unit: 'ms' },
      {
        metric: 'fork.ratio.100k/10',
        value: round(largeMedian / smallMedian),
        unit: 'ratio',
        target: { op: '<', value: 1.5 },
        note: 'median(100k) / median(10)',
      },
    );

    // SQL statements per fork: the same at both lengths.
    const smallQueries = await ctx.countQueries(() => forkOnce(ctx, small.id, cut(small.messageCount)));
    const largeQueries = await ctx.countQueries(() => forkOnce(ctx, large.id, cut(large.messageCount)));
    rows.push(
      { metric: 'fork.statements.10', value: smallQueries.count, unit: 'queries', note: 'BEGIN/COMMIT not counted' },
      { metric: 'fork.statements.100k', value: largeQueries.count, unit: 'queries', target: { op: '<=', value: smallQueries.count } },
    );
    const rowsBefore = await ctx.app.runtime.db.prisma.message.count();
    await forkOnce(ctx, large.id, cut(large.messageCount));
    const rowsAfter = await ctx.app.runtime.db.prisma.message.count();
    rows.push({ metric: 'fork.rows.copied', value: rowsAfter - rowsBefore, unit: 'rows', target: { op: '<=', value: 0 } });

    // A fork nested 20 deep on the 100k session: each level cuts 2 before its parent's end and adds 6.
    let id = large.id;
    let count = large.messageCount;
    for (let level = 1; level <= NESTED_DEPTH; level++) {
      const at = cut(count);
      id = (await forkOnce(ctx, id, at)).id;
      const messages = Array.from({ length: 6 }, (_, i) => ({
        role: (at + i) % 2 === 0 ? 'USER' : 'ASSISTANT',
        text: `level ${level} #${at + i}`,
      }));
      await ctx.gql(APPEND, { input: { sessionId: id, messages } });
      count = at + 6;
    }
    for (const [label, vars] of [
      ['first', { id, first: 50 }],
      ['last', { id, last: 50 }],
    ] as const) {
      const measured = await ctx.countQueries(() =>
        ctx.gql<{ session: { messageCount: number; messages: { edges: { node: { index: number } }[] } } }>(PAGE, vars),
      );
      const edges = measured.result.session.messages.edges;
      const expectedStart = label === 'first' ? 0 : count - 50;
      if (edges.length !== 50 || edges.some((e, i) => e.node.index !== expectedStart + i)) {
        throw new Error(`nested ${label} page is wrong: ${edges.map((e) => e.node.index).join(',')}`);
      }
      if (measured.count > 3) ctx.log(`${label} page statements:\n    ${measured.statements.map((s) => s.slice(0, 200)).join('\n    ')}`);
      const times: number[] = [];
      for (let i = 0; i < PAGE_READS; i++) times.push((await ctx.time(() => ctx.gql(PAGE, vars))).ms);
      rows.push(
        {
          metric: `nested20.${label}50.statements`,
          value: measured.count,
          unit: 'queries',
          target: { op: '<=', value: 3 },
          note: `depth ${NESTED_DEPTH} over a 100k root, ${count} messages`,
        },
        { metric: `nested20.${label}50.median`, value: round(median(times)), unit: 'ms', note: `${PAGE_READS} reads` },
      );
    }
    // Forking the deep fork costs what forking a root costs.
    const deepSamples: number[] = [];
    for (let i = 0; i < WARMUP + 10; i++) {
      const { ms } = await forkOnce(ctx, id, cut(count));
      if (i >= WARMUP) deepSamples.push(ms);
    }
    rows.push({ metric: 'fork.median.nested20', value: round(median(deepSamples)), unit: 'ms', note: '10 forks of the depth-20 fork' });
    const prisma = ctx.app.runtime.db.prisma;

    // A wide tree: the fork number is one more than the highest in the whole tree (an index seek,
    // not a read of the tree's titles). 2,000 existing forks (inserted directly) vs a small tree of
    // the same shape, forked in turn with it, so drift over the run (the load of a shared machine,
    // the heap the 100k session left) weighs on both alike.
    const wide = await ctx.seedSession({ title: 'bench wide', messages: 10 });
    const narrow = await ctx.seedSession({ title: 'bench narrow', messages: 10 });
    await prisma.$executeRaw`
      INSERT INTO "Session" (id, "workspaceId", title, "parentId", "rootId", "ancestorIds", depth, "forkIndex",
                             "forkPointMessageId", lineage, "messageCount", "updatedAt")
      SELECT gen_random_uuid()::text, r."workspaceId", r.title || ' (fork ' || g || ')', r.id, r.id, ARRAY[r.id], 1, 8, m.id,
             jsonb_build_array(jsonb_build_object('sessionId', r.id, 'start', 0, 'end', 8, 'compactions', 0)), 8, now()
      FROM "Session" r JOIN "Message" m ON m."sessionId" = r.id AND m.position = 8, generate_series(1, ${WIDE_TREE}::int) AS g
      WHERE r.id = ${wide.rawId}`;
    await prisma.$executeRawUnsafe('ANALYZE "Session"');
    const wideSamples: number[] = [];
    const narrowSamples: number[] = [];
    ctx.collectGarbage();
    for (let i = 0; i < WARMUP + WIDE_FORKS; i++) {
      const a = await forkOnce(ctx, wide.id, 8);
      const b = await forkOnce(ctx, narrow.id, 8);
      if (i >= WARMUP) {
        wideSamples.push(a.ms);
        narrowSamples.push(b.ms);
      }
    }
    rows.push(
      {
        metric: `fork.median.tree${WIDE_TREE}`,
        value: round(median(wideSamples)),
        unit: 'ms',
        note: `${WIDE_FORKS} forks of a root that has ${WIDE_TREE} forks`,
      },
      {
        metric: 'fork.median.tree-small',
        value: round(median(narrowSamples)),
        unit: 'ms',
        note: `${WIDE_FORKS} forks of a 10-message root with at most ${WARMUP + WIDE_FORKS} forks, in turn with the wide tree's`,
      },
      {
        metric: `fork.ratio.tree${WIDE_TREE}/10`,
        value: round(median(wideSamples) / median(narrowSamples)),
        unit: 'ratio',
        target: { op: '<=', value: 1.2 },
        note: 'median(wide tree) / median(small tree), forked in turn',
      },
    );

    // The floor under any write here: a transaction updating one row (Prisma + commit).
    const floor: number[] = [];
    for (let i = 0; i < WARMUP + ITERATIONS; i++) {
      const { ms } = await ctx.time(() =>
        prisma.$transaction((tx) => tx.$executeRaw`UPDATE "Session" SET "turnCount" = "turnCount" WHERE id = ${small.rawId}`),
      );
      if (i >= WARMUP) floor.push(ms);
    }
    rows.push({
      metric: 'floor.write-tx.median',
      value: round(median(floor)),
      unit: 'ms',
      note: 'one-row UPDATE in a Prisma transaction: commit cost on this machine',
    });
    return rows;
  },
};

export default fork;
