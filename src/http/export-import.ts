/**
 * `GET /export/sessions/<id>[?tree=true]` and `POST /import[?from=chatgpt|claude]` (docs/export-format.md),
 * under the key and workspace rules of /graphql (`Authorization: Bearer <api key>`; another
 * workspace's session is 404). An export streams JSON Lines page by page; an import needs a
 * full-scope key, answers `{ sessions: [{ id, sourceId }] }`, and refuses a body it cannot read
 * with 400 `{ line, message }`, having stored nothing.
 */
import { decodeGlobalID } from '@pothos/plugin-relay';
import type { Plugin } from 'graphql-yoga';
import type { WorkspaceAuth } from '../auth/workspace-auth.js';
import type { KeyGrant } from '../caches/api-keys.js';
import { DomainError } from '../domain/errors.js';
import { EXPORT_CONTENT_TYPE, LineError } from '../domain/export-format.js';
import { toGlobalId } from '../domain/global-ids.js';
import { foreignExportLines } from '../domain/importers/index.js';
import { LIMITS } from '../domain/limits.js';
import type { ExportService } from '../services/exports.js';
import type { ImportResult, ImportService } from '../services/imports.js';
import { fastPathCovers } from './fast-path-contract.js';

export const EXPORT_PATH = '/export/sessions/';
export const IMPORT_PATH = '/import';
/** What is read and dropped of a refused body's rest before answering. */
const DRAIN_BYTES = 16 * 1024 * 1024;

type FetchAPI = { Response: typeof Response; ReadableStream: typeof ReadableStream };

const json = (fetchAPI: FetchAPI, status: number, body: unknown, headers: Record<string, string> = {}) =>
  new fetchAPI.Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

const problem = (fetchAPI: FetchAPI, status: number, code: string, message: string, headers: Record<string, string> = {}) =>
  json(fetchAPI, status, { errors: [{ message, extensions: { code } }] }, headers);

/** The raw id of a `Session` global ID (or of a raw id, as export files name them), or null. */
function sessionIdOf(segment: string): string | null {
  const raw = decodeURIComponent(segment);
  if (/^[0-9a-f-]{36}$/i.test(raw)) return raw;
  try {
    const { typename, id } = decodeGlobalID(raw);
    return typename === 'Session' && /^[0-9a-f-]{36}$/i.test(id) ? id : null;
  } catch {
    return null;
  }
}

/** The import's answer: each session's new global ID and its id in the file. */
export const importAnswer = (result: ImportResult) => ({
  sessions: result.sessions.map((s) => ({ id: toGlobalId('Session', s.id), sourceId: s.sourceId })),
});

export function useExportImport(deps: { auth: WorkspaceAuth; exports: ExportService; imports: ImportService }): Plugin {
  // The fast path takes only POSTs to the GraphQL endpoint: never these paths.
  return fastPathCovers<Plugin>(
    {
      async onRequest({ request, url, fetchAPI, endResponse }) {
        const isExport = url.pathname.startsWith(EXPORT_PATH);
        if (!isExport && url.pathname !== IMPORT_PATH) return;
        const method = isExport ? 'GET' : 'POST';
        if (request.method !== method) {
          return endResponse(problem(fetchAPI, 405, 'BAD_USER_INPUT', `${url.pathname} takes ${method}.`, { allow: method }));
        }
        let grant: KeyGrant;
        try {
          grant = await deps.auth.grantFor(request.headers.get('authorization'));
        } catch (error) {
          if (error instanceof DomainError && error.code === 'UNAUTHENTICATED') {
            return endResponse(problem(fetchAPI, 401, 'UNAUTHENTICATED', error.message, { 'www-authenticate': 'Bearer' }));
          }
          throw error;
        }
        // A share token reads its one session through GraphQL only: an export holds a fork's
        // ancestors whole and redacted messages' originals, which a link must not pass on.
        if (grant.share) {
          return endResponse(problem(fetchAPI, 403, 'FORBIDDEN', 'A share link cannot export or import; use an API key of the workspace.'));
        }
        if (isExport) return endResponse(await exportResponse(deps.exports, fetchAPI, grant.workspaceId, url));
        if (grant.scope !== 'FULL')
          return endResponse(problem(fetchAPI, 403, 'FORBIDDEN', 'This API key is read-only; importing needs a full key.'));
        return endResponse(await importResponse(deps.imports, fetchAPI, grant.workspaceId, url, request));
      },
    },
    ['onRequest'],
  );
}

async function exportResponse(exports: ExportService, fetchAPI: FetchAPI, workspaceId: string, url: URL): Promise<Response> {
  const segment = url.pathname.slice(EXPORT_PATH.length);
  const id = sessionIdOf(segment);
  const tree = url.searchParams.get('tree') === 'true';
  const notFound = () => problem(fetchAPI, 404, 'NOT_FOUND', `No session "${segment.slice(0, 200)}" in your workspace.`);
  if (!id) return notFound();
  let sessions: Awaited<ReturnType<ExportService['plan']>>;
  try {
    sessions = await exports.plan(workspaceId, id, tree);
  } catch (error) {
    if (error instanceof DomainError && error.code === 'NOT_FOUND') return notFound();
    throw error;
  }
  const lines = exports.lines(workspaceId, id, tree, sessions);
  const encoder = new TextEncoder();
  // Pulled one page at a time, as the connection takes them: memory holds about one page.
  const body = new fetchAPI.ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await lines.next();
      if (next.done) controller.close();
      else controller.enqueue(encoder.encode(next.value));
    },
    async cancel() {
      await lines.return(undefined);
    },
  });
  return new fetchAPI.Response(body, {
    status: 200,
    headers: {
      'content-type': EXPORT_CONTENT_TYPE,
      'content-disposition': `attachment; filename="session-${id}.jsonl"`,
      'cache-control': 'private, no-store',
      'x-content-type-options': 'nosniff',
    },
  });
}

async function importResponse(
  imports: ImportService,
  fetchAPI: FetchAPI,
  workspaceId: string,
  url: URL,
  request: Request,
): Promise<Response> {
  const from = url.searchParams.get('from');
  const refused = (line: number, message: string) => json(fetchAPI, 400, { line, message, extensions: { code: 'BAD_USER_INPUT' } });
  if (from !== null && from !== 'chatgpt' && from !== 'claude')
    return refused(0, '"from" must be chatgpt or claude (or absent, for export lines).');
  const cap = from === null ? LIMITS.importBytes : LIMITS.foreignExportBytes;
  const declared = Number(request.headers.get('content-length') ?? Number.NaN);
  if (declared > cap) return problem(fetchAPI, 413, 'BAD_USER_INPUT', `The body is larger than ${cap} bytes, the cap on this server.`);
  if (!request.body) return refused(1, 'the body is empty.');
  // The import stops reading at a refused line; the rest is read and dropped (up to DRAIN_BYTES)
  // so that the client, still sending, receives the refusal rather than a closed connection.
  const iterator = (request.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  const body: AsyncIterable<Uint8Array> = { [Symbol.asyncIterator]: () => ({ next: () => iterator.next() }) };
  const drain = async () => {
    let dropped = 0;
    for (let next = await iterator.next(); !next.done && dropped < DRAIN_BYTES; next = await iterator.next()) dropped += next.value.length;
  };
  try {
    if (from === null) return json(fetchAPI, 200, importAnswer(await imports.importBody(workspaceId, body)));
    const text = await readCapped(body, cap);
    if (text === null) return problem(fetchAPI, 413, 'BAD_USER_INPUT', `The body is larger than ${cap} bytes, the cap on this server.`);
    return json(fetchAPI, 200, importAnswer(await imports.importBody(workspaceId, foreignExportLines(from, text))));
  } catch (error) {
    if (error instanceof LineError) {
      await drain();
      return refused(error.line, error.message);
    }
    if (error instanceof DomainError && error.code === 'BAD_USER_INPUT') return refused(0, error.message);
    throw error;
  }
}

/** The body as text, or null once it passes `cap` bytes (read no further). */
async function readCapped(body: AsyncIterable<Uint8Array>, cap: number): Promise<string | null> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of body) {
    total += chunk.length;
    if (total > cap) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
