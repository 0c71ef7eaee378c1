/** Every statement on the `Workspace` and `ApiKey` tables (the server's key check and `npm run keys`). */
import type { ApiKey, PrismaClient, Workspace } from '../../generated/prisma/client.js';

/** A key row with its workspace's name, as `npm run keys -- list` shows it. */
export type ApiKeyWithWorkspace = ApiKey & { workspace: Workspace };

/** The workspace called `name`, created if it does not exist yet. */
export function ensureWorkspace(prisma: PrismaClient, name: string): Promise<Workspace> {
  return prisma.workspace.upsert({ where: { name }, create: { name }, update: {} });
}

/**
 * Stores a key from API_KEYS unless its hash is already stored; returns the stored row. Never
 * un-revokes: a key revoked with `npm run keys -- revoke` stays refused whatever API_KEYS says.
 */
export function storeBootstrapKey(prisma: PrismaClient, data: { workspaceId: string; name: string; keyHash: string }): Promise<ApiKey> {
  return prisma.apiKey.upsert({ where: { keyHash: data.keyHash }, create: data, update: {} });
}

export function insertApiKey(prisma: PrismaClient, data: { workspaceId: string; name: string; keyHash: string }): Promise<ApiKey> {
  return prisma.apiKey.create({ data });
}

export function findApiKeyByHash(prisma: PrismaClient, keyHash: string): Promise<ApiKey | null> {
  return prisma.apiKey.findUnique({ where: { keyHash } });
}

/** Whether any key is not revoked (AUTH_REQUIRED unset: keys are required once one exists). */
export async function anyActiveApiKey(prisma: PrismaClient): Promise<boolean> {
  return (await prisma.apiKey.count({ where: { revokedAt: null } })) > 0;
}

/** Every key, oldest first, with its workspace. */
export function listApiKeys(prisma: PrismaClient): Promise<ApiKeyWithWorkspace[]> {
  return prisma.apiKey.findMany({ include: { workspace: true }, orderBy: { createdAt: 'asc' } });
}

/** Sets `revokedAt` if not set yet (revoking twice keeps the first time); returns the row, or null. */
export async function revokeApiKey(prisma: PrismaClient, id: string, at = new Date()): Promise<ApiKeyWithWorkspace | null> {
  await prisma.apiKey.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: at } });
  return prisma.apiKey.findUnique({ where: { id }, include: { workspace: true } });
}
