import { randomBytes } from 'node:crypto';
import type { KeyScope } from '../config.js';
import { hashApiKey } from './workspace-auth.js';
import * as store from '../db/stores/api-keys.js';
import type { PrismaClient } from '../generated/prisma/client.js';

/** What `list` shows of a key: never the key, which only its creator ever sees. */
export interface ApiKeyInfo {
  id: string;
  workspace: string;
  name: string;
  /** READ: queries and subscriptions only; FULL: mutations too. */
  scope: KeyScope;
  createdAt: Date;
  revokedAt: Date | null;
}

/** A new key (`sg_` + 32 random bytes, base64url); only its SHA-256 is stored. Creates the workspace if needed. */
export async function createApiKey(
  prisma: PrismaClient,
  input: { workspace: string; name?: string; scope?: KeyScope },
): Promise<ApiKeyInfo & { key: string }> {
  const key = `sg_${randomBytes(32).toString('base64url')}`;
  const workspace = await store.ensureWorkspace(prisma, input.workspace);
  const row = await store.insertApiKey(prisma, {
    workspaceId: workspace.id,
    name: input.name ?? input.workspace,
    keyHash: hashApiKey(key),
    scope: input.scope ?? 'FULL',
  });
  return { id: row.id, workspace: workspace.name, name: row.name, scope: row.scope, createdAt: row.createdAt, revokedAt: null, key };
}

const info = (row: store.ApiKeyWithWorkspace): ApiKeyInfo => ({
  id: row.id,
  workspace: row.workspace.name,
  name: row.name,
  scope: row.scope,
  createdAt: row.createdAt,
  revokedAt: row.revokedAt,
});

export async function listApiKeys(prisma: PrismaClient): Promise<ApiKeyInfo[]> {
  return (await store.listApiKeys(prisma)).map(info);
}

/**
 * Marks a key revoked (once: revoking again keeps the first time). Every server instance refuses it
 * within its API_KEY_CACHE_TTL_MS (src/caches/api-keys.ts). Returns null for an unknown id.
 */
export async function revokeApiKey(prisma: PrismaClient, id: string): Promise<ApiKeyInfo | null> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return null;
  const row = await store.revokeApiKey(prisma, id);
  return row && info(row);
}
