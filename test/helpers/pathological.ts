import { monitorEventLoopDelay } from 'node:perf_hooks';

/**
 * Requests that once froze the server (issue 11, section 1), shared by the event-loop test (which
 * checks what each answers) and `npm run bench -- pathological` (which reports the longest event
 * loop stall each causes). Variables are JSON text, so inputs JSON.stringify cannot build (nested
 * 5,000 levels) can be sent.
 */
export interface PathologicalInput {
  name: string;
  query: string;
  variables: (sessionId: string) => string;
  /** The code the answer must carry, or null when it must succeed. */
  code: string | null;
  /** Sent as a stream, without a Content-Length (chunked), so only reading the body can find its size. */
  chunked?: boolean;
}

const APPEND = 'mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { tokenCount } } }';

const appendText = (sessionId: string, text: string) => JSON.stringify({ input: { sessionId, messages: [{ role: 'USER', text }] } });

function fragmentBomb(n: number) {
  const fragments = ['fragment F0 on Session { id title }'];
  for (let i = 1; i <= n; i++) fragments.push(`fragment F${i} on Session { ...F${i - 1} ...F${i - 1} }`);
  return `{ sessions(first: 1) { edges { node { ...F${n} } } } } ${fragments.join(' ')}`;
}

/**
 * `fragment F1 on Query { ...F0 }` … `n` deep: linear in size and under the token cap, but
 * graphql-js's validation of it costs time per distinct fragment. `tag` makes distinct documents
 * (each one parsed and judged on its own, none served from a cache).
 */
export function fragmentChain(n: number, tag = '') {
  const fragments = [`fragment ${tag}F0 on Query { __typename }`];
  for (let i = 1; i < n; i++) fragments.push(`fragment ${tag}F${i} on Query { ...${tag}F${i - 1} }`);
  return `{ ...${tag}F${n - 1} } ${fragments.join(' ')}`;
}

/** A deterministic base64 blob of `chars` characters: long pieces of mixed letters and digits. */
export const base64Text = (chars: number) =>
  Buffer.from(Array.from({ length: (chars * 3) / 4 }, (_, i) => (i * 2654435761) >>> 24)).toString('base64');

/** 5 MiB: the size that once stalled the server for minutes (issue 11), now over the string cap. */
export const HUGE_TEXT = 5 * 1024 * 1024;

/** The inputs for a server whose string cap is `cap` (`AppRuntime.caps.stringLength`). */
export function pathologicalInputs(cap: number): PathologicalInput[] {
  return [
    { name: `text: 'x' x ${cap} (the cap)`, query: APPEND, variables: (id) => appendText(id, 'x'.repeat(cap)), code: null },
    { name: `text: base64 of ${cap} chars (the cap)`, query: APPEND, variables: (id) => appendText(id, base64Text(cap)), code: null },
    {
      name: `text: 'x' x ${HUGE_TEXT}`,
      query: APPEND,
      variables: (id) => appendText(id, 'x'.repeat(HUGE_TEXT)),
      code: 'BAD_USER_INPUT',
    },
    {
      name: `text: 'x' x ${HUGE_TEXT}, chunked (no Content-Length)`,
      query: APPEND,
      variables: (id) => appendText(id, 'x'.repeat(HUGE_TEXT)),
      code: 'BAD_USER_INPUT',
      chunked: true,
    },
    {
      name: `text: base64 of ${HUGE_TEXT} chars`,
      query: APPEND,
      variables: (id) => appendText(id, base64Text(HUGE_TEXT)),
      code: 'BAD_USER_INPUT',
    },
    { name: 'fragment bomb, n = 22', query: fragmentBomb(22), variables: () => '{}', code: 'QUERY_TOO_COMPLEX' },
    { name: 'flat fragment chain, 2,000 deep', query: fragmentChain(2_000), variables: () => '{}', code: 'QUERY_TOO_COMPLEX' },
    {
      name: '500 aliased __schema',
      query: `{ ${Array.from({ length: 500 }, (_, i) => `s${i}: __schema { types { name fields { name } } }`).join(' ')} }`,
      variables: () => '{}',
      code: 'QUERY_TOO_COMPLEX',
    },
    {
      name: '10,000 nested selections',
      query: `{ ${'sessions { '.repeat(10_000)}${'}'.repeat(10_000)} }`,
      variables: () => '{}',
      code: 'QUERY_TOO_COMPLEX',
    },
    {
      name: 'settings nested 5,000 levels',
      query: 'mutation($input: CreateSessionInput!) { createSession(input: $input) { id } }',
      variables: () => `{"input":{"settings":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}}`,
      code: 'BAD_USER_INPUT',
    },
  ];
}

/**
 * Sends one input over HTTP to `url` while sampling this process's event loop (the server runs in
 * it), and returns the answer and the longest stall seen, in ms.
 */
export async function sendWhileSampling(url: string, input: PathologicalInput, sessionId: string) {
  // The client's own work (building and encoding a 5 MiB body) happens in this process too: it is
  // done before sampling starts, so the stall measured is the server's.
  const body = Buffer.from(`{"query":${JSON.stringify(input.query)},"variables":${input.variables(sessionId)}}`);
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  const started = performance.now();
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: input.chunked ? inChunks(body) : body,
    ...(input.chunked ? { duplex: 'half' } : {}),
  } as RequestInit);
  const answer = (await response.json()) as {
    data?: { appendMessages: { messages: { tokenCount: number }[] } };
    errors?: { message: string; extensions?: { code?: string } }[];
  };
  const totalMs = performance.now() - started;
  histogram.disable();
  return { status: response.status, body: answer, maxStallMs: histogram.max / 1e6, totalMs };
}

/** `body` as a stream of 64 KiB chunks: fetch then sends it chunked, without a Content-Length. */
function inChunks(body: Buffer): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= body.length) return controller.close();
      controller.enqueue(body.subarray(offset, offset + 65536));
      offset += 65536;
    },
  });
}
