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
}

const APPEND = 'mutation($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { tokenCount } } }';

const appendText = (sessionId: string, text: string) => JSON.stringify({ input: { sessionId, messages: [{ role: 'USER', text }] } });

function fragmentBomb(n: number) {
  const fragments = ['fragment F0 on Session { id title }'];
  for (let i = 1; i <= n; i++) fragments.push(`fragment F${i} on Session { ...F${i - 1} ...F${i - 1} }`);
  return `{ sessions(first: 1) { edges { node { ...F${n} } } } } ${fragments.join(' ')}`;
}

/** A deterministic base64 blob: long pieces of mixed letters and digits. */
const base64 = (bytes: number) => Buffer.from(Array.from({ length: bytes }, (_, i) => (i * 2654435761) >>> 24)).toString('base64');

export function pathologicalInputs(textBytes: number): PathologicalInput[] {
  return [
    { name: `text: 'x' x ${textBytes}`, query: APPEND, variables: (id) => appendText(id, 'x'.repeat(textBytes)), code: null },
    {
      name: `text: base64 of ${textBytes} chars`,
      query: APPEND,
      variables: (id) => appendText(id, base64((textBytes * 3) / 4)),
      code: null,
    },
    { name: 'fragment bomb, n = 22', query: fragmentBomb(22), variables: () => '{}', code: 'QUERY_TOO_COMPLEX' },
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
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  const started = performance.now();
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: `{"query":${JSON.stringify(input.query)},"variables":${input.variables(sessionId)}}`,
  });
  const body = (await response.json()) as {
    data?: { appendMessages: { messages: { tokenCount: number }[] } };
    errors?: { message: string; extensions?: { code?: string } }[];
  };
  const totalMs = performance.now() - started;
  histogram.disable();
  return { status: response.status, body, maxStallMs: histogram.max / 1e6, totalMs };
}
