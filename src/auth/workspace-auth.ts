import { createHash } from 'node:crypto';
import { ApiKeyCache, type KeyGrant, type ShareGrant } from '../caches/api-keys.js';
import type { ApiKeyConfig } from '../config.js';
import { DomainError } from '../domain/errors.js';
import { anyActiveApiKey, ensureWorkspace, findApiKeyByHash, storeBootstrapKey } from '../db/stores/api-keys.js';
import { findShareLinkByHash } from '../db/stores/share-links.js';
import { asServiceUnavailable } from '../db/faults.js';
import type { Sql } from '../db/sql.js';

export const DEFAULT_WORKSPACE = 'default';

export const hashApiKey = (key: string) => createHash('sha256').update(key).digest('hex');

/** How a share token begins (`createShareLink`); an API key never does (`sg_`, or API_KEYS, checked at start). */
export const SHARE_TOKEN_PREFIX = 'sgs_';

export interface WorkspaceAuthOptions {
  /** true: every request needs a key; false: requests without one get the default workspace; null: true once a key exists. */
  required: boolean | null;
}

/**
 * API keys select workspaces. Keys live hashed in the ApiKey table (made by `npm run keys`, or from
 * `API_KEYS` at start as a bootstrap); a revoked key (revokedAt set) never comes back, whatever
 * the configuration says.
 * Lookups go through `ApiKeyCache` (src/caches/api-keys.ts), whose TTL is the revocation bound.
 */
export class WorkspaceAuth {
  private defaultWorkspaceId = '';
  constructor(
    private readonly sql: Sql,
    private readonly cache = new ApiKeyCache(),
    private readonly options: WorkspaceAuthOptions = { required: null },
  ) {}

  /** Creates the default workspace and stores the bootstrap keys; returns the ones found revoked. */
  async init(keys: ApiKeyConfig[]): Promise<ApiKeyConfig[]> {
    const fallback = await ensureWorkspace(this.sql, DEFAULT_WORKSPACE);
    this.defaultWorkspaceId = fallback.id;
    const revoked: ApiKeyConfig[] = [];
    for (const config of keys) {
      const ws = await ensureWorkspace(this.sql, config.workspace);
      // Never un-revoked: removing a key from API_KEYS is not how keys are revoked, revoke is.
      const key = await storeBootstrapKey(this.sql, {
        workspaceId: ws.id,
        name: `${config.workspace} (API_KEYS)`,
        keyHash: hashApiKey(config.key),
        scope: config.scope ?? 'FULL',
      });
      if (key.revokedAt) revoked.push(config);
    }
    return revoked;
  }

  /** Whether a request without a key is refused right now. */
  async keysRequired(): Promise<boolean> {
    if (this.options.required !== null) return this.options.required;
    let exist = this.cache.getKeysExist();
    if (exist === undefined) {
      exist = await this.lookup(() => anyActiveApiKey(this.sql.reads));
      this.cache.setKeysExist(exist);
    }
    return exist;
  }

  /**
   * The workspace for an `Authorization` value (header, or `connectionParams` over WebSocket).
   * A key that is sent must be valid, even where keys are optional.
   */
  async workspaceFor(authorization: string | null | undefined): Promise<string> {
    return (await this.grantFor(authorization)).workspaceId;
  }

  /**
   * The workspace and scope an `Authorization` value grants. Without a key where keys are optional:
   * the default workspace, with full scope (whoever can reach a keyless server can do everything).
   */
  async grantFor(authorization: string | null | undefined): Promise<KeyGrant> {
    if (!authorization) {
      if (!(await this.keysRequired())) return { workspaceId: this.defaultWorkspaceId, scope: 'FULL' };
      throw new DomainError('UNAUTHENTICATED', 'Send an API key as `Authorization: Bearer <api key>`.');
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) throw new DomainError('UNAUTHENTICATED', 'The Authorization header must be `Bearer <api key>`.');
    const token = match[1];
    const hash = hashApiKey(token);
    let grant = this.cache.get(hash);
    if (grant === undefined) {
      grant = token.startsWith(SHARE_TOKEN_PREFIX) ? await this.shareGrant(hash) : await this.keyGrant(hash);
      this.cache.set(hash, grant);
    }
    if (!grant) {
      throw new DomainError(
        'UNAUTHENTICATED',
        token.startsWith(SHARE_TOKEN_PREFIX)
          ? 'This share link is not valid (unknown, revoked or expired).'
          : 'This API key is not valid (unknown or revoked).',
      );
    }
    // A cached share grant holds until its expiry exactly, not until the cache's TTL.
    if (grant.share && grant.share.expiresAt !== null && grant.share.expiresAt <= Date.now()) {
      throw new DomainError('UNAUTHENTICATED', 'This share link has expired.');
    }
    return grant;
  }

  /** Forgets what this instance cached of a key or token hash (a share link revoked here refuses at once here). */
  forget(hash: string): void {
    this.cache.forget(hash);
  }

  /**
   * Whether a share grant still holds: not expired, and its token still valid as this instance
   * knows it (its cached lookup, read again once older than the cache's TTL). For streams opened
   * before a revocation (`ShareLinks.watch`).
   */
  async shareHolds(share: ShareGrant): Promise<boolean> {
    if (share.expiresAt !== null && share.expiresAt <= Date.now()) return false;
    let grant = this.cache.get(share.tokenHash);
    if (grant === undefined) {
      grant = await this.shareGrant(share.tokenHash);
      this.cache.set(share.tokenHash, grant);
    }
    return grant?.share?.linkId === share.linkId;
  }

  private async keyGrant(hash: string): Promise<KeyGrant | null> {
    const key = await this.lookup(() => findApiKeyByHash(this.sql.reads, hash));
    return key && !key.revokedAt ? { workspaceId: key.workspaceId, scope: key.scope } : null;
  }

  /** A share token reads one session: READ, and the session it names (refused once revoked or expired). */
  private async shareGrant(hash: string): Promise<KeyGrant | null> {
    const link = await this.lookup(() => findShareLinkByHash(this.sql.reads, hash));
    if (!link || link.revokedAt) return null;
    const expiresAt = link.expiresAt ? link.expiresAt.getTime() : null;
    return {
      workspaceId: link.workspaceId,
      scope: 'READ',
      share: { sessionId: link.sessionId, linkId: link.id, tokenHash: hash, expiresAt },
    };
  }

  /** A database failure while checking a key is the database's outage, not the client's fault. */
  private async lookup<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (error) {
      throw asServiceUnavailable(error) ?? error;
    }
  }
}
