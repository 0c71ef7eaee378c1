import { Agent } from 'node:http';
import { describe, expect, it } from 'vitest';
import { type Answer, expectAllAnswered, post, send, start, stop } from '../helpers/server-process.js';
import { subscribeWs, wsClient } from '../helpers/subscriptions.js';

// The server process stopped (SIGTERM) while busy: every request answered, none reset. Tagged
// `program`: run on CI and by `npm run test:all`, not by a plain `npm test`.

describe('the server process (npm start) stopped while busy', { tags: ['program'] }, () => {
  it('on SIGTERM 20 ms after 30 requests sent to a busy server, answers every one (none reset), completes subscriptions and exits 0', async () => {
    const key = 'deploy-key-0123456789abcdef';
    const running = await start({ DATA_DIR: 'memory://', NODE_ENV: 'production', API_KEYS: `deploy:${key}`, SHUTDOWN_GRACE_MS: '10000' });
    const authorization = `Bearer ${key}`;
    const created = await post(
      running.url,
      'mutation { createSession(input: {title: "deploy", messages: [{role: USER, text: "x"}]}) { id } }',
      undefined,
      key,
    );
    const sessionId = created.data!.createSession.id as string;
    const events = 'subscription ($id: ID!) { sessionEvents(sessionId: $id, afterSequence: 0) { sequence } }';
    const client = wsClient(running.url, { Authorization: authorization });
    const wsClosed = new Promise<number>((resolve) => client.on('closed', (event) => resolve((event as { code: number }).code)));
    const ws = subscribeWs(client, events, { id: sessionId }, (d) => d);
    await ws.collector.until((e) => e.length >= 1);
    const sse = await fetch(running.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization },
      body: JSON.stringify({ query: events, variables: { id: sessionId } }),
    });
    const sseText = new Response(sse.body).text();

    // Each request on a connection of its own, sent in one burst: appends of a long text (the
    // server counts its tokens) keep the server busy, so most are still unread when SIGTERM lands.
    const text = 'lorem ipsum dolor sit amet '.repeat(8_000);
    const body = JSON.stringify({
      query: 'mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { index } } }',
      variables: { input: { sessionId, messages: [{ role: 'USER', text }] } },
    });
    const requests = Array.from({ length: 30 }, () => send(running.url, body, { authorization }));
    await Promise.all(requests.map((r) => r.sent));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const exited = stop(running);
    expectAllAnswered(await Promise.all(requests.map((r) => r.answer)));
    expect(await sseText).toContain('event: complete');
    expect(await wsClosed).toBe(1001);
    await client.dispose();
    expect(await exited).toBe(0);
  }, 300_000);

  it('on SIGTERM 20 ms after a request on each of 30 idle keep-alive connections of a busy server, answers every one (none reset) and exits 0', async () => {
    const running = await start({ DATA_DIR: 'memory://', SHUTDOWN_GRACE_MS: '10000' });
    const created = await post(running.url, 'mutation { createSession(input: {title: "keep-alive"}) { id } }');
    const sessionId = created.data!.createSession.id as string;
    // One connection per agent, each carrying a first request, then idle in its agent's pool.
    const agents = Array.from({ length: 30 }, () => new Agent({ keepAlive: true, maxSockets: 1 }));
    try {
      const first = await Promise.all(agents.map((agent) => send(running.url, '{"query":"{ __typename }"}', {}, agent).answer));
      expectAllAnswered(first);

      // The second request on each, in one burst, on connections idle until then: appends of a
      // long text keep the server busy, so SIGTERM lands while it works through them.
      const text = 'lorem ipsum dolor sit amet '.repeat(8_000);
      const body = JSON.stringify({
        query: 'mutation ($input: AppendMessagesInput!) { appendMessages(input: $input) { messages { index } } }',
        variables: { input: { sessionId, messages: [{ role: 'USER', text }] } },
      });
      const requests = agents.map((agent) => send(running.url, body, {}, agent));
      await Promise.all(requests.map((r) => r.sent));
      await new Promise((resolve) => setTimeout(resolve, 20));
      const exited = stop(running);
      const results = await Promise.all(requests.map((r) => r.answer));
      expectAllAnswered(results);
      const answers = results as Exclude<Answer, { error: string }>[];
      expect(answers.every((answer) => answer.reused)).toBe(true);
      // The last answer was written well after the stop (30 appends take the server far longer
      // than 20 ms), so it closes its connection rather than inviting another request on it.
      const last = answers.reduce((latest, answer) => (answer.at > latest.at ? answer : latest));
      expect(last.connection).toBe('close');
      expect(await exited).toBe(0);
    } finally {
      for (const agent of agents) agent.destroy();
    }
  }, 300_000);
});
