import DataLoader from 'dataloader';
import type { SqlClient } from '../db/sql.js';
import * as store from '../db/stores/usage-totals.js';
import { zeroUsage, type UsageCounts } from '../domain/turns.js';

/** Usage reported for one model (null for reports that named none). */
export type ModelUsageShape = { model: string | null; usage: UsageCounts };

/** One request's loaders of usage sums: one statement for every turn or session of a page. */
export interface UsageLoaders {
  turnByModel: DataLoader<string, ModelUsageShape[]>;
  sessionByModel: DataLoader<string, ModelUsageShape[]>;
  /** A turn's usage with its sub-sessions' rolled up. */
  turn: DataLoader<string, UsageCounts>;
  /** A session's usage with its sub-sessions' rolled up. */
  session: DataLoader<string, UsageCounts>;
  /** A session's own usage. */
  sessionOwn: DataLoader<string, UsageCounts>;
  /** A fork tree's usage, by root id. */
  tree: DataLoader<string, UsageCounts>;
  /** What the sub-agent sessions a fork inherits spent (none for a session that is not a fork). */
  inherited: DataLoader<string, UsageCounts>;
}

const toCounts = (row: UsageCounts): UsageCounts => ({
  inputTokens: BigInt(row.inputTokens),
  outputTokens: BigInt(row.outputTokens),
  cacheReadTokens: BigInt(row.cacheReadTokens),
  cacheWriteTokens: BigInt(row.cacheWriteTokens),
  cost: Number(row.cost),
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

const summed = <K extends string>(key: K, rows: (UsageCounts & Record<K, string>)[], ids: readonly string[]) => {
  const by = new Map<string, UsageCounts>(rows.map((r) => [r[key] as string, toCounts(r)]));
  return ids.map((id) => by.get(id) ?? zeroUsage());
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
  };
}
