import { createHash } from 'node:crypto';
import { ApiKeyCache } from './caches/api-keys.js';
import type { ApiKeyConfig } from './config.js';
import { DomainError } from './errors.js';
import type { PrismaClient } from './generated/prisma/client.js';

export const DEFAULT_WORKSPACE = 'default';

export const hashApiKey = (key: string) => createHash('sha256').update(key).digest('hex');

/**
 * API keys select workspaces. Keys from the configuration are stored (hashed) at start. With no
 * key stored at all, every request is served by the default workspace without a key.
 */
export class WorkspaceAuth {
  private open = false;
  private defaultWorkspaceId = '';
  constructor(
    private readonly prisma: PrismaClient,
    private readonly cache = new ApiKeyCache(),
  ) {}

  async init(keys: ApiKeyConfig[]) {
    const fallback = await this.prisma.workspace.upsert({
      where: { name: DEFAULT_WORKSPACE },
      create: { name: DEFAULT_WORKSPACE },
      update: {},
    });
    this.defaultWorkspaceId = fallback.id;
    for (const { workspace, key } of keys) {
      const ws = await this.prisma.workspace.upsert({ where: { name: workspace }, create: { name: workspace }, update: {} });
      await this.prisma.apiKey.upsert({
        where: { keyHash: hashApiKey(key) },
        create: { workspaceId: ws.id, name: `${workspace} (configured)`, keyHash: hashApiKey(key) },
        update: { workspaceId: ws.id, revokedAt: null },
      });
    }
    this.open = (await this.prisma.apiKey.count({ where: { revokedAt: null } })) === 0;
  }

  /** True when no key is configured and the default workspace serves everyone. */
  get keyless() {
    return this.open;
  }

  /** The workspace for an `Authorization` value (header, or `connectionParams` over WebSocket). */
  async workspaceFor(authorization: string | null | undefined): Promise<string> {
    if (!authorization) {
      if (this.open) return this.defaultWorkspaceId;
      throw new DomainError('UNAUTHENTICATED', 'Send an API key as `Authorization: Bearer <api key>`.');
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) throw new DomainError('UNAUTHENTICATED', 'The Authorization header must be `Bearer <api key>`.');
    const hash = hashApiKey(match[1]);
    let workspaceId = this.cache.get(hash);
    if (workspaceId === undefined) {
      const key = await this.prisma.apiKey.findUnique({ where: { keyHash: hash } });
      workspaceId = key && !key.revokedAt ? key.workspaceId : null;
      this.cache.set(hash, workspaceId);
    }
    if (!workspaceId) {
      if (this.open) return this.defaultWorkspaceId;
      throw new DomainError('UNAUTHENTICATED', 'This API key is not valid.');
    }
    return workspaceId;
  }
}
