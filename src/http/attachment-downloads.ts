/**
 * `GET /attachments/<id>` (and HEAD): an attachment's content under the same key and workspace
 * rules as /graphql (`Authorization: Bearer <api key>`; another workspace's id is 404, as for
 * everything else; a share token's: 404 unless a message of its session holds it). TEXT and BYTES: the bytes with their type, a strong ETag (the SHA-256), and one
 * byte range per request (RFC 9110: 206 with Content-Range, 416 for a range past the end; several
 * ranges are answered whole). URL: a redirect to the address. PROVIDER_FILE: 404 with why.
 *
 * The bytes are the client's: they are served so that a browser never runs them (nosniff, a
 * sandboxing Content-Security-Policy, and `attachment` disposition for any type that is not an
 * image, a PDF or plain text).
 */
import { decodeGlobalID } from '@pothos/plugin-relay';
import type { Plugin } from 'graphql-yoga';
import type { WorkspaceAuth } from '../auth/workspace-auth.js';
import type { ShareLinks } from '../auth/share-links.js';
import type { ShareGrant } from '../caches/api-keys.js';
import { DomainError } from '../domain/errors.js';
import type { AttachmentDownloads } from '../services/attachment-downloads.js';
import { fastPathCovers } from './fast-path-contract.js';

export const ATTACHMENTS_PATH = '/attachments/';

const INLINE_TYPES = /^(image\/(png|jpeg|gif|webp)|application\/pdf|text\/plain)$/;

const problem = (
  fetchAPI: { Response: typeof Response },
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
) =>
  new fetchAPI.Response(JSON.stringify({ errors: [{ message, extensions: { code } }] }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });

/** The raw id of an `Attachment` global ID, or null. */
function attachmentIdOf(segment: string): string | null {
  try {
    const { typename, id } = decodeGlobalID(decodeURIComponent(segment));
    return typename === 'Attachment' && /^[0-9a-f-]{36}$/i.test(id) ? id : null;
  } catch {
    return null;
  }
}

const dispositionOf = (mimeType: string, name: string) =>
  `${INLINE_TYPES.test(mimeType.split(';')[0].trim().toLowerCase()) ? 'inline' : 'attachment'}; filename*=UTF-8''${encodeURIComponent(name)}`;

export function useAttachmentDownloads(deps: { auth: WorkspaceAuth; downloads: AttachmentDownloads; shareLinks: ShareLinks }): Plugin {
  // The fast path takes only POSTs to the GraphQL endpoint: never this path.
  return fastPathCovers<Plugin>(
    {
      async onRequest({ request, url, fetchAPI, endResponse }) {
        if (!url.pathname.startsWith(ATTACHMENTS_PATH)) return;
        if (request.method !== 'GET' && request.method !== 'HEAD') {
          return endResponse(problem(fetchAPI, 405, 'BAD_USER_INPUT', 'Attachments are read with GET or HEAD.', { allow: 'GET, HEAD' }));
        }
        let workspaceId: string;
        let share: ShareGrant | undefined;
        try {
          ({ workspaceId, share } = await deps.auth.grantFor(request.headers.get('authorization')));
        } catch (error) {
          if (error instanceof DomainError && error.code === 'UNAUTHENTICATED') {
            return endResponse(problem(fetchAPI, 401, 'UNAUTHENTICATED', error.message, { 'www-authenticate': 'Bearer' }));
          }
          throw error;
        }
        const segment = url.pathname.slice(ATTACHMENTS_PATH.length);
        const id = attachmentIdOf(segment);
        const notFound = () => problem(fetchAPI, 404, 'NOT_FOUND', `No attachment "${segment.slice(0, 200)}" in your workspace.`);
        if (!id) return endResponse(notFound());
        // A share token downloads only what its session shows (its own and inherited messages' attachments).
        if (share && !(await deps.shareLinks.attachmentVisible(workspaceId, share.sessionId, id))) return endResponse(notFound());
        const found = await deps.downloads.read(workspaceId, id, request.headers.get('range'));
        if (found === null) return endResponse(notFound());
        if ('unsatisfiable' in found) {
          return endResponse(new fetchAPI.Response(null, { status: 416, headers: { 'content-range': `bytes */${found.total}` } }));
        }
        const { attachment, bytes, range, total } = found;
        if (attachment.kind === 'URL') {
          return endResponse(new fetchAPI.Response(null, { status: 302, headers: { location: attachment.url ?? '' } }));
        }
        if (attachment.kind === 'PROVIDER_FILE') {
          const file = attachment.providerFile;
          return endResponse(
            problem(
              fetchAPI,
              404,
              'NOT_FOUND',
              `This attachment is ${file?.provider ?? 'a provider'}'s file ${file?.fileId ?? ''}: its bytes are at the provider, not here.`,
            ),
          );
        }
        const etag = `"${attachment.sha256}"`;
        const headers: Record<string, string> = {
          'content-type':
            attachment.kind === 'TEXT' && !/charset=/i.test(attachment.mimeType)
              ? `${attachment.mimeType}; charset=utf-8`
              : attachment.mimeType,
          etag,
          'accept-ranges': 'bytes',
          'cache-control': 'private, no-cache',
          'content-disposition': dispositionOf(attachment.mimeType, attachment.name),
          'x-content-type-options': 'nosniff',
          'content-security-policy': "sandbox; default-src 'none'",
        };
        const match = request.headers.get('if-none-match');
        if (match?.split(',').some((tag) => tag.trim() === etag || tag.trim() === '*')) {
          return endResponse(new fetchAPI.Response(null, { status: 304, headers: { etag } }));
        }
        const body = request.method === 'HEAD' ? null : (bytes as Uint8Array<ArrayBuffer>);
        if (range) {
          headers['content-range'] = `bytes ${range.start}-${range.end}/${total}`;
          headers['content-length'] = String(range.end - range.start + 1);
          return endResponse(new fetchAPI.Response(body, { status: 206, headers }));
        }
        headers['content-length'] = String(total);
        return endResponse(new fetchAPI.Response(body, { status: 200, headers }));
      },
    },
    ['onRequest'],
  );
}
