import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { oneBuildAtATime } from '../helpers/one-build.js';
import { subscribeWs, wsClient } from '../helpers/subscriptions.js';

const root = new URL('../..', import.meta.url).pathname;
const dataDir = mkdtempSync(join(tmpdir(), 'sg-process-'));

const children = new Set<ChildProcess>();

afterAll(() => {
  // A failed test must not leave a server running.
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

interface Running {
  child: ChildProcess;
  url: string;
  output: () => string;
}

/**
 * Starts the server as `npm start` does (scripts/start.mjs: compile to dist/, then plain node on the
 * compiled JavaScript) and waits for its two start-up lines.
 */
function start(env: Record<string, string>): Promise<Running> {
  return oneBuildAtATime(() => startOnce(env));
}

async function startOnce(env: Record<string, string>): Promise<Running> {
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    cwd: root,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const url = await new Promise<string>((resolve, reject) => {
    // The first start compiles the tree (tsc), which takes a while on a loaded machine.
    const timer = setTimeout(() => reject(new Error(`no start-up line within 150 s:\n${output}`)), 150_000);
    child.stdout!.on('data', () => {
      const match = /listening on (http:\/\/\S+\/graphql)[\s\S]*storage: .*\n/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.on('exit', (code) => reject(new Error(`exited with ${code} before listening:\n${output}`)));
  });
  return { child, url, output: () => output };
}

function stop(running: Running): Promise<number | null> {
  return new Promise((resolve) => {
    running.child.on('exit', (code) => resolve(code));
    running.child.kill('SIGTERM');
  });
}

async function post(url: string, query: string, variables?: unknown, key?: string) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the process test reads the untyped response by path
  return (await response.json()) as { data?: Record<string, any>; errors?: unknown[] };
}

type Answer = { status: number; body: string; reused: boolean; connection?: string; at: number } | { error: string };

/**
 * Sends a POST as a client does (over `agent`'s connection when given, else a new one): `sent`
 * resolves once the whole request is handed to the kernel, `answer` with the full response or
 * the error that ended it (ECONNRESET for a reset).
 */
function send(url: string, body: string, headers: Record<string, string>, agent?: Agent) {
  let sent!: Promise<void>;
  const answer = new Promise<Answer>((resolve) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        agent: agent ?? false,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            body: text,
            reused: req.reusedSocket,
            connection: res.headers.connection,
            at: performance.now(),
          }),
        );
        res.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
    sent = new Promise((done) => req.once('finish', done));
    req.end(body);
  });
  return { sent, answer };
}

/** Every answer whole: 200 without errors, or 503 with a SERVICE_UNAVAILABLE body; none reset. */
function expectAllAnswered(results: Answer[]) {
  expect(results.filter((r) => 'error' in r)).toEqual([]);
  for (const result of results as Exclude<Answer, { error: string }>[]) {
    if (result.status === 503) expect(JSON.parse(result.body).errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');
    else {
      expect(result.status).toBe(200);
      expect(JSON.parse(result.body).errors).toBeUndefined();
    }
  }
}

describe('the server process (npm start)', () => {
  it('says where it listens and what it uses, keeps data across restarts, and exits cleanly on SIGTERM', async () => {
    const first = await start({ DATA_DIR: dataDir });
    expect(first.output()).toContain(`storage: PGlite in ${dataDir}`);
    expect(first.output()).toContain('pub/sub: in-memory');
    const created = await post(
      first.url,
      'mutation { createSession(input: {title: "kept", messages: [{role: USER, text: "remember me"}]}) { id } }',
    );
    const id = created.data!.createSession.id as string;
    expect(await stop(first)).toBe(0);

    const second = await start({ DATA_DIR: dataDir });
    const read = await post(second.url, 'query ($id: ID!) { session(id: $id) { title messages { edges { node { text } } } } }', { id });
    expect(read.data!.session).toEqual({ title: 'kept', messages: { edges: [{ node: { text: 'remember me' } }] } });
    expect(await stop(second)).toBe(0);
  }, 300_000);

  it('on SIGTERM completes an open SSE subscription and exits 0; a retired variable is warned of, not read', async () => {
    const running = await start({ DATA_DIR: 'memory://', IDLE_GC: 'true' });
    expect(running.output()).toContain('IDLE_GC is no longer read');
    const created = await post(
      running.url,
      'mutation { createSession(input: {title: "sse", messages: [{role: USER, text: "x"}]}) { id } }',
    );
    const response = await fetch(running.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({
        query: 'subscription ($id: ID!) { sessionEvents(sessionId: $id, afterSequence: 0) { sequence } }',
        variables: { id: created.data!.createSession.id },
      }),
    });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let stream = '';
    while (!stream.includes('"sequence":1')) stream += decoder.decode((await reader.read()).value, { stream: true });
    const exited = stop(running);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      stream += decoder.decode(value, { stream: true });
    }
    expect(stream).toContain('event: complete');
    expect(await exited).toBe(0);
  }, 300_000);

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

  it('refuses to start on a bad setting, naming the variable (through tsx, as `npm run dev`)', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: root,
      env: { ...process.env, PORT: 'not-a-port' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stderr!.on('data', (chunk) => (output += chunk));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(2);
    expect(output).toContain('PORT');
  }, 60_000);
});
