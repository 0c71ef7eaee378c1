import DataLoader from 'dataloader';
import type { SqlClient } from '../db/sql.js';
import * as store from '../db/stores/usage-totals.js';
import { zeroUsage, type CostSource, type UsageCounts } from '../domain/turns.js';

/** Summed usage and the weakest source of its cost (null: no report). */
export type SummedUsageCounts = UsageCounts & { costSource: CostSource | null };

/** Usage reported for one model (null for reports that named none). */
export type ModelUsageShape = { model: string | null; usage: SummedUsageCounts };

/** One request's loaders of usage sums: one statement for every turn or session of a page. */
export interface UsageLoaders {
  turnByModel: DataLoader<string, ModelUsageShape[]>;
  sessionByModel: DataLoader<string, ModelUsageShape[]>;
  /** A turn's usage with its sub-sessions' rolled up. */
  turn: DataLoader<string, SummedUsageCounts>;
  /** A session's usage with its sub-sessions' rolled up. */
  session: DataLoader<string, SummedUsageCounts>;
  /** A session's own usage. */
  sessionOwn: DataLoader<string, SummedUsageCounts>;
  /** A fork tree's usage, by root id. */
  tree: DataLoader<string, SummedUsageCounts>;
  /** What the sub-agent sessions a fork inherits spent (none for a session that is not a fork). */
  inherited: DataLoader<string, SummedUsageCounts>;
  /** The weakest cost source of a turn's own reports, by agent (an agent without reports is absent). */
  costSources: DataLoader<string, ReadonlyMap<string, CostSource>>;
}

const toCounts = (row: store.SummedUsage): SummedUsageCounts => ({
  inputTokens: BigInt(row.inputTokens),
  outputTokens: BigInt(row.outputTokens),
  cacheReadTokens: BigInt(row.cacheReadTokens),
  cacheWriteTokens: BigInt(row.cacheWriteTokens),
  cost: Number(row.cost),
  costSource: row.costSource ?? null,
});

const grouped = <K extends string>(key: K, rows: (store.ModelUsage & Record<K, string>)[], ids: readonly string[]) => {
  const by = new Map<string, ModelUsageShape[]>();
  for (const row of rows) {
    const list = by.get(row[key]) ?? [];
    list.push({ model: row.model, usage: toCounts(row) });
    by.set(row[key], list);
  }
  return ids.map((id) => by.get(id) ?? []);
};

const summed = <K extends string>(key: K, rows: (store.SummedUsage & Record<K, string>)[], ids: readonly string[]) => {
  const by = new Map<string, SummedUsageCounts>(rows.map((r) => [r[key] as string, toCounts(r)]));
  return ids.map((id) => by.get(id) ?? { ...zeroUsage(), costSource: null });
};

const byAgent = (rows: { turnId: string; agentId: string; costSource: CostSource }[], ids: readonly string[]) => {
  const by = new Map<string, Map<string, CostSource>>();
  for (const row of rows) {
    let agents = by.get(row.turnId);
    if (!agents) by.set(row.turnId, (agents = new Map()));
    agents.set(row.agentId, row.costSource);
  }
  return ids.map((id) => by.get(id) ?? new Map<string, CostSource>());
};

export function createUsageLoaders(sql: SqlClient): UsageLoaders {
  return {
    turnByModel: new DataLoader(async (ids) => grouped('turnId', await store.usageByModelForTurns(sql, ids), ids)),
    sessionByModel: new DataLoader(async (ids) => grouped('sessionId', await store.usageByModelForSessions(sql, ids), ids)),
    turn: new DataLoader(async (ids) => summed('turnId', await store.rolledUpUsageForTurns(sql, ids), ids)),
    session: new DataLoader(async (ids) => summed('sessionId', await store.rolledUpUsageForSessions(sql, ids), ids)),
    sessionOwn: new DataLoader(async (ids) => summed('sessionId', await store.usageForSessions(sql, ids), ids)),
    tree: new DataLoader(async (ids) => summed('rootId', await store.rolledUpUsageForTrees(sql, ids), ids)),
    inherited: new DataLoader(async (ids) => summed('sessionId', await store.inheritedUsageForSessions(sql, ids), ids)),
    costSources: new DataLoader(async (ids) => byAgent(await store.costSourcesOfTurns(sql, ids), ids)),
  };
}
