import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { backend, gqlOk, type TestApp, useTestApp } from '../helpers/app.js';
import { base64Text, fragmentChain, pathologicalInputs, sendWhileSampling } from '../helpers/pathological.js';
import { wsClient } from '../helpers/subscriptions.js';

/**
 * Each input that once froze the server, sent over real HTTP to a listening app: it must be
 * answered (refused with its code, or accepted with exact token counts), not hang the process.
 * The stall each causes is measured by `npm run bench -- pathological` (a timed assertion would
 * be flaky on a shared machine); this test checks the answers.
 */
let app: TestApp;
let url: string;
let sessionId: string;

useTestApp(async (built) => {
  app = built;
  url = await app.listen(0, '127.0.0.1');
  const data = await gqlOk<{ createSession: { id: string } }, unknown>(
    app,
    'mutation { createSession(input: { title: "event loop" }) { id } }',
  );
  sessionId = data.createSession.id;
});

/** The backend's string cap: a max-size string is sent for the backend the test runs on. */
const CAP = backend.caps.stringLength;
// 'x' repeated merges into tokens of a fixed length; the reference finishes on a short run.
const X_TOKENS = CAP / (4096 / encode('x'.repeat(4096)).length);

describe(`pathological inputs over HTTP (${backend.label})`, () => {
  it('runs on an app whose string cap is the one the inputs are built for', () => {
    expect(app.runtime.caps.stringLength).toBe(CAP);
  });

  it.each(pathologicalInputs(CAP).map((input) => [input.name, input] as const))('%s is answered', async (_name, input) => {
    const messagesBefore = await app.runtime.db.prisma.message.count();
    const { body, status } = await sendWhileSampling(url, input, sessionId);
    if (input.code) {
      expect(body.errors?.map((e) => e.extensions?.code)).toEqual([input.code]);
      // A 5 MiB text is refused from the body's Content-Length, naming the caps, before it is read;
      // sent without one, as soon as what was read passes the cap.
      if (input.name.startsWith('text:')) {
        expect(status).toBe(413);
        expect(body.errors?.[0].message).toContain(`more than ${backend.caps.requestBytes}`);
        expect(body.errors?.[0].message).toContain(`at most ${CAP} characters`);
      }
      expect(await app.runtime.db.prisma.message.count()).toBe(messagesBefore);
    } else {
      expect(body.errors).toBeUndefined();
      const [message] = body.data!.appendMessages.messages;
      const expected = input.name.startsWith("text: 'x'") ? X_TOKENS : encode(base64Text(CAP)).length;
      expect(message.tokenCount).toBe(expected);
      expect(await app.runtime.db.prisma.message.count()).toBe(messagesBefore + 1);
    }
  });

  it('refuses four distinct 2,000-fragment chains sent at once without holding up a concurrent { __typename }', async () => {
    const post = (query: string) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
    // The ping's latency right after four small distinct documents, then right after four distinct
    // chains (each refused on its own: no verdict comes from a cache); the difference is what the
    // chains cost the ping. The best of three rounds, as a shared machine's scheduling adds noise
    // to any one. A first round warms the code paths up, as on a server that has run a while.
    const pingAfter = async (queries: string[]) => {
      const sent = queries.map(post);
      const started = performance.now();
      const ping = await (await post('{ __typename }')).json();
      const ms = performance.now() - started;
      expect(ping).toEqual({ data: { __typename: 'Query' } });
      return { ms, answers: await Promise.all(sent) };
    };
    const four = (make: (i: number) => string) => [1, 2, 3, 4].map(make);
    let delay = Number.POSITIVE_INFINITY;
    for (let round = 0; round < 4; round++) {
      const small = await pingAfter(four((i) => `query Small${round}x${i} { __typename }`));
      const chained = await pingAfter(four((i) => fragmentChain(2_000, `R${round}C${i}x`)));
      for (const response of chained.answers) {
        const body = (await response.json()) as { errors?: { message: string; extensions?: { code?: string } }[] };
        expect(body.errors?.map((e) => e.extensions?.code)).toEqual(['QUERY_TOO_COMPLEX']);
        expect(body.errors?.[0].message).toContain('defines 2000 fragments (at most 64)');
      }
      if (round > 0) delay = Math.min(delay, chained.ms - small.ms);
    }
    // Issue 32's bound is 50 ms; a shared, loaded machine gets twice that.
    expect(delay).toBeLessThanOrEqual(100);
  });

  it('refuses a too deep document over WebSocket with its code, keeping the connection', async () => {
    const client = wsClient(url);
    try {
      const run = (query: string) =>
        new Promise<unknown>((resolve) => {
          client.subscribe({ query }, { next: (value) => resolve(value), error: (error) => resolve(error), complete: () => resolve(null) });
        });
      const refused = (await run(`subscription { ${'sessionEvents { '.repeat(10_000)}${'}'.repeat(10_000)} }`)) as {
        extensions?: { code?: string };
      }[];
      expect(refused.map((e) => e.extensions?.code)).toEqual(['QUERY_TOO_COMPLEX']);
      const syntax = (await run('subscription {')) as { extensions?: { code?: string } }[];
      expect(syntax.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
      const invalid = (await run('subscription { nothing }')) as { extensions?: { code?: string } }[];
      expect(invalid.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
    } finally {
      await client.dispose();
    }
  });
});
