import { decodeGlobalID, encodeGlobalID } from '@pothos/plugin-relay';
import type { ShareLink as ShareLinkRow } from '../generated/prisma/client.js';
import { UUID_PATTERN } from '../db/ids.js';
import { badInput, notFound } from '../domain/errors.js';
import { builder } from './builder.js';
import { parseGlobalId } from './ids.js';
import { Session } from './refs.js';

/** A link as the mutations return it: with its token only in createShareLink's answer. */
type ShareLinkShape = ShareLinkRow & { token?: string };

/** The explorer's read-only view of a session, opened with a share token (explorer/src/main.ts reads the fragment). */
const explorerUrl = (row: ShareLinkShape, token: string) =>
  `/explorer#share=${encodeURIComponent(token)}&session=${encodeURIComponent(encodeGlobalID('Session', row.sessionId))}`;

export const ShareLink = builder.prismaObject('ShareLink', {
  description:
    'A read-only link to one session. Its token, sent as `Authorization: Bearer <token>`, reads that session (its inherited messages included) and nothing else, until expiresAt or until it is revoked.',
  fields: (t) => ({
    id: t.field({
      type: 'ID',
      description: 'Opaque ID (what revokeShareLink takes).',
      resolve: (l) => encodeGlobalID('ShareLink', l.id),
    }),
    token: t.string({
      nullable: true,
      description:
        'The token (`sgs_…`): in the answer of createShareLink only, never again (only its SHA-256 is stored). Send it as `Authorization: Bearer <token>`.',
      resolve: (l) => (l as ShareLinkShape).token ?? null,
    }),
    url: t.string({
      nullable: true,
      description:
        "The explorer's read-only view of the session with the token in the URL fragment (a path on this server: prefix its origin). In createShareLink's answer only, like token.",
      resolve: (l) => {
        const token = (l as ShareLinkShape).token;
        return token ? explorerUrl(l, token) : null;
      },
    }),
    sessionId: t.field({
      type: 'ID',
      description: 'The session the link reads (its opaque ID).',
      resolve: (l) => encodeGlobalID('Session', l.sessionId),
    }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', nullable: true, description: 'When the link stops working.' }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true, description: 'When it was revoked; null while it is not.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was created.' }),
    active: t.boolean({
      description:
        'Whether the token works now: neither revoked nor expired (another instance may accept a revoked one for up to API_KEY_CACHE_TTL_MS).',
      resolve: (l) => l.revokedAt === null && (l.expiresAt === null || l.expiresAt.getTime() > Date.now()),
    }),
  }),
});

builder.prismaObjectField(Session, 'shareLinks', (t) =>
  t.relatedConnection(
    'shareLinks',
    {
      description: 'Share links made for this session, newest first, revoked and expired ones included (never their tokens).',
      cursor: 'id',
      query: () => ({ orderBy: { id: 'desc' } }),
      totalCount: true,
    },
    { description: 'A page of share links.' },
    { description: 'A share link and its cursor.' },
  ),
);

const CreateShareLinkInput = builder.inputType('CreateShareLinkInput', {
  description: 'A read-only link to one session.',
  fields: (t) => ({
    sessionId: t.id({ required: true, description: 'The session to share.' }),
    expiresAt: t.field({
      type: 'DateTime',
      required: false,
      description: 'When the link stops working: in the future, at most 366 days away. Default: 30 days from now.',
    }),
  }),
});

builder.mutationField('createShareLink', (t) =>
  t.field({
    type: ShareLink,
    description:
      'Makes a read-only link to a session (a key with scope FULL). The answer holds the token and url, shown this once. At most 100 links in force per session.',
    args: { input: t.arg({ type: CreateShareLinkInput, required: true }) },
    resolve: (_, { input }, ctx) => {
      const raw = String(input.sessionId);
      return ctx.shareLinks.create(ctx.workspaceId, parseGlobalId(raw, 'Session', 'sessionId'), input.expiresAt ?? null, raw);
    },
  }),
);

const RevokeShareLinkInput = builder.inputType('RevokeShareLinkInput', {
  description: 'The link to revoke.',
  fields: (t) => ({ id: t.id({ required: true, description: 'The ShareLink.id.' }) }),
});

/** The raw id of a ShareLink ID: a string that is no ID at all is bad input, any other unknown one not found. */
function shareLinkIdOf(raw: string): string {
  let decoded: { typename: string; id: string };
  try {
    decoded = decodeGlobalID(raw);
  } catch {
    throw badInput(`id "${raw.slice(0, 80)}" is not a valid ShareLink ID.`);
  }
  if (decoded.typename !== 'ShareLink' || !UUID_PATTERN.test(decoded.id)) throw notFound('Share link', raw);
  return decoded.id;
}

builder.mutationField('revokeShareLink', (t) =>
  t.field({
    type: ShareLink,
    description:
      'Revokes a share link: its token is refused at once on this server instance and within API_KEY_CACHE_TTL_MS (5 s by default) on every other. Revoking again is a no-op that returns the link (revokedAt keeps the first time).',
    args: { input: t.arg({ type: RevokeShareLinkInput, required: true }) },
    resolve: (_, { input }, ctx) => ctx.shareLinks.revoke(ctx.workspaceId, shareLinkIdOf(String(input.id)), String(input.id)),
  }),
);
