import { type ChildProcess, spawn } from 'node:child_process';
import { type Agent, request as httpRequest } from 'node:http';
import { expect, onTestFinished } from 'vitest';
import { oneBuildAtATime } from './one-build.js';

// The server as a process of its own, started as `npm start` starts it: process.test.ts and
// process-drain.test.ts (apart, so that the two workers share their minute).

export const root = new URL('../..', import.meta.url).pathname;

export interface Running {
  child: ChildProcess;
  url: string;
  output: () => string;
}

/**
 * Starts the server as `npm start` does (scripts/start.mjs: compile to dist/, then plain node on the
 * compiled JavaScript) and waits for its two start-up lines.
 */
export function start(env: Record<string, string>): Promise<Running> {
  return oneBuildAtATime(() => startOnce(env));
}

async function startOnce(env: Record<string, string>): Promise<Running> {
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    cwd: root,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // A failed test must not leave a server running.
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
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

export function stop(running: Running): Promise<number | null> {
  return new Promise((resolve) => {
    running.child.on('exit', (code) => resolve(code));
    running.child.kill('SIGTERM');
  });
}

export async function post(url: string, query: string, variables?: unknown, key?: string) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the process test reads the untyped response by path
  return (await response.json()) as { data?: Record<string, any>; errors?: unknown[] };
}

export type Answer = { status: number; body: string; reused: boolean; connection?: string; at: number } | { error: string };

/**
 * Sends a POST as a client does (over `agent`'s connection when given, else a new one): `sent`
 * resolves once the whole request is handed to the kernel, `answer` with the full response or
 * the error that ended it (ECONNRESET for a reset).
 */
export function send(url: string, body: string, headers: Record<string, string>, agent?: Agent) {
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
export function expectAllAnswered(results: Answer[]) {
  expect(results.filter((r) => 'error' in r)).toEqual([]);
  for (const result of results as Exclude<Answer, { error: string }>[]) {
    if (result.status === 503) expect(JSON.parse(result.body).errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');
    else {
      expect(result.status).toBe(200);
      expect(JSON.parse(result.body).errors).toBeUndefined();
    }
  }
}
