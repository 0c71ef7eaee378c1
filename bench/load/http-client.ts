/**
 * The load's GraphQL requests, on kept-alive connections through `node:http`: undici's `fetch` adds
 * time of its own to each paced request's median and p99 (bench/README.md, How it measures), time
 * that belongs to the client, not to the server it measures.
 */
import { Agent, request as httpRequest } from 'node:http';

const agent = new Agent({ keepAlive: true });

/** One POST of a JSON body over a kept-alive connection: the status and the body's text. */
export function post(url: string, body: string): Promise<{ status: number; text: string }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/** A response that carries GraphQL errors or no data; `code` is the first error's `extensions.code`. */
export class GraphQLCallError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/**
 * One GraphQL operation; resolves with its `data`. Rejects with a plain Error when the body is not
 * JSON (the message shows the status and the body's start), with a `GraphQLCallError` when it has
 * errors or no data.
 */
export async function gql(url: string, query: string, variables?: Record<string, unknown>): Promise<unknown> {
  const response = await post(url, JSON.stringify({ query, variables }));
  const { text } = response;
  let body: { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] };
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`HTTP ${response.status}: ${text.slice(0, 200)}`);
  }
  if (body.errors?.length || !body.data) {
    throw new GraphQLCallError(`GraphQL error: ${JSON.stringify(body.errors ?? body).slice(0, 300)}`, body.errors?.[0]?.extensions?.code);
  }
  return body.data;
}
