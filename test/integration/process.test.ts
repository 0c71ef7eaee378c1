import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { post, root, start, stop } from '../helpers/server-process.js';

// The server process: start-up, data kept across restarts, SIGTERM with a subscription open, a bad
// setting. Stopping under load is process-drain.test.ts. Tagged `program`: run on CI and by
// `npm run test:all`, not by a plain `npm test`.

const dataDir = mkdtempSync(join(tmpdir(), 'sg-process-'));

afterAll(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the server process (npm start)', { tags: ['program'] }, () => {
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
