/**
 * Share links: a token that reads one session, read-only, until it expires or is revoked
 * (docs/guide.md, "Share links"). Like an API key, the token is shown once, at creation, and only
 * its SHA-256 is stored; it is checked by `WorkspaceAuth.grantFor`, through the same cache, so a
 * revoked link is refused at once on the instance that revoked it and within API_KEY_CACHE_TTL_MS
 * on every other one. What a share token may read is enforced in the schema (`schema/share-scope.ts`).
 */
import { randomBytes } from 'node:crypto';
import type { ShareLink } from '../generated/prisma/client.js';
import { badInput, notFound } from '../domain/errors.js';
import { visibleSegments } from '../domain/lineage.js';
import type { Sql } from '../db/sql.js';
import { findSessions } from '../db/stores/sessions.js';
import { attachmentVisibleIn, insertShareLink, lockSessionForLinks, revokeShareLink } from '../db/stores/share-links.js';
import type { ShareGrant } from '../caches/api-keys.js';
import { hashApiKey, SHARE_TOKEN_PREFIX, type WorkspaceAuth } from './workspace-auth.js';

/** The longest a link may live: one year from its creation. */
export const SHARE_LINK_MAX_MS = 366 * 24 * 3600 * 1000;
/** A link made without `expiresAt` lives this long: 30 days. */
export const SHARE_LINK_DEFAULT_MS = 30 * 24 * 3600 * 1000;
/** Links in force (neither revoked nor expired) one session may have at once. */
export const SHARE_LINKS_PER_SESSION = 100;

/** A link as created: with its token, which is never shown again. */
export type NewShareLink = ShareLink & { token: string };

/** A share grant followed while a stream of its session is open (`ShareLinks.watch`). */
export interface ShareWatch {
  /** Whether the grant still holds: false from its expiry, and within `recheckMs` of its revocation. */
  holds(): boolean;
  /** Stops the re-checks (the stream ended). */
  stop(): void;
}

export class ShareLinks {
  constructor(
    private readonly sql: Sql,
    private readonly auth: WorkspaceAuth,
    /** How often a watched grant is checked again: the key cache's TTL (API_KEY_CACHE_TTL_MS), at least 1 s. */
    private readonly recheckMs = 5_000,
  ) {}

  /**
   * Follows a share grant for an open stream, so that a subscription made before a revocation
   * delivers nothing after it: expiry is checked on every call of `holds`, revocation every
   * `recheckMs` (through the key cache, so within its TTL, as for a new request). Once refused, for
   * good. The timer never holds the process.
   */
  watch(share: ShareGrant): ShareWatch {
    let refused = false;
    let checking = false;
    const timer = setInterval(
      () => {
        if (checking) return;
        checking = true;
        this.auth.shareHolds(share).then(
          (holds) => {
            checking = false;
            if (!holds) stop();
          },
          // A failed check (the database is down) leaves the grant as it was; the next tick tries again.
          () => {
            checking = false;
          },
        );
      },
      Math.max(1_000, this.recheckMs),
    );
    timer.unref();
    const stop = () => {
      refused = true;
      clearInterval(timer);
    };
    return {
      holds: () => {
        if (!refused && share.expiresAt !== null && share.expiresAt <= Date.now()) stop();
        return !refused;
      },
      stop: () => clearInterval(timer),
    };
  }

  /**
   * A new link to `sessionId` of the workspace. `expiresAt` must be in the future and at most a
   * year away (default: 30 days). Under the session's row lock, so that concurrent creations
   * never pass the cap of links in force.
   */
  async create(workspaceId: string, sessionId: string, expiresAt: Date | null, clientSessionId: string): Promise<NewShareLink> {
    const now = new Date();
    const expires = expiresAt ?? new Date(now.getTime() + SHARE_LINK_DEFAULT_MS);
    if (Number.isNaN(expires.getTime()) || expires.getTime() <= now.getTime()) {
      throw badInput('expiresAt must be in the future (and at most a year away).');
    }
    if (expires.getTime() > now.getTime() + SHARE_LINK_MAX_MS) {
      throw badInput('expiresAt is more than a year away: a share link lives at most 366 days.');
    }
    const token = `${SHARE_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const row = await this.sql.transaction(async (tx) => {
      const live = await lockSessionForLinks(tx, workspaceId, sessionId, now);
      if (live === null) throw notFound('Session', clientSessionId);
      if (live >= SHARE_LINKS_PER_SESSION) {
        throw badInput(
          `Session ${clientSessionId} already has ${live} share links in force (at most ${SHARE_LINKS_PER_SESSION}): revoke one (revokeShareLink) first.`,
        );
      }
      return insertShareLink(tx, { workspaceId, sessionId, tokenHash: hashApiKey(token), expiresAt: expires, createdAt: now });
    });
    return { ...row, token };
  }

  /** Revokes a link of the workspace (again: a no-op that returns it); this instance refuses its token at once. */
  async revoke(workspaceId: string, id: string, clientId: string): Promise<ShareLink> {
    const row = await revokeShareLink(this.sql, workspaceId, id, new Date());
    if (!row) throw notFound('Share link', clientId);
    this.auth.forget(row.tokenHash);
    return row;
  }

  /** Whether a share token of `sessionId` may download attachment `attachmentId`: it is in a message the session shows. */
  async attachmentVisible(workspaceId: string, sessionId: string, attachmentId: string): Promise<boolean> {
    const [session] = await findSessions(this.sql.reads, workspaceId, [sessionId]);
    if (!session) return false;
    return attachmentVisibleIn(this.sql.reads, workspaceId, sessionId, visibleSegments(session), attachmentId);
  }
}
