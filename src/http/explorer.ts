import { readFile } from 'node:fs/promises';
import type { Plugin } from 'graphql-yoga';
import { fastPathCovers } from './fast-path-contract.js';

/** Where `npm run build` (scripts/build-explorer.mjs) writes the page: dist/explorer/, from src/http/ and from dist/http/ alike. */
const BUILT = new URL('../../dist/explorer/', import.meta.url);

const FILES: Record<string, { file: string; type: string }> = {
  '/explorer': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/explorer/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/explorer/explorer.js': { file: 'explorer.js', type: 'text/javascript; charset=utf-8' },
  '/explorer/explorer.css': { file: 'explorer.css', type: 'text/css; charset=utf-8' },
};

/** The page talks to this origin only: scripts, styles and connections (fetch, WebSocket) included. */
const POLICY =
  "default-src 'self'; img-src 'self' data: blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The explorer page (explorer/, docs/guide.md "Explorer") at `/explorer`: static files built beforehand,
 * read from disk once each and kept; everything the page shows comes from the public GraphQL
 * endpoint. A GET for a file not built answers 404 saying how to build it.
 */
export function useExplorer(): Plugin {
  const loaded = new Map<string, Promise<Buffer | null>>();
  const load = (file: string) => {
    let content = loaded.get(file);
    if (!content) {
      content = readFile(new URL(file, BUILT)).catch(() => null);
      loaded.set(file, content);
    }
    return content;
  };
  // The fast path takes only POSTs to the GraphQL endpoint: never a page.
  return fastPathCovers<Plugin>(
    {
      async onRequest({ url, request, fetchAPI, endResponse }) {
        if (url.pathname !== '/explorer' && !url.pathname.startsWith('/explorer/')) return;
        const entry = FILES[url.pathname];
        if (request.method !== 'GET' && request.method !== 'HEAD') {
          return endResponse(new fetchAPI.Response('Method not allowed', { status: 405, headers: { allow: 'GET, HEAD' } }));
        }
        const content = entry ? await load(entry.file) : null;
        if (!entry || !content) {
          const body = entry ? 'The explorer is not built: run `npm run build`.' : 'Not found';
          return endResponse(new fetchAPI.Response(body, { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' } }));
        }
        endResponse(
          new fetchAPI.Response(request.method === 'HEAD' ? null : new Uint8Array(content), {
            status: 200,
            headers: {
              'content-type': entry.type,
              'cache-control': 'no-cache',
              'content-security-policy': POLICY,
              'x-content-type-options': 'nosniff',
            },
          }),
        );
      },
    },
    ['onRequest'],
  );
}
