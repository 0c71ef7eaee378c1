/**
 * Processes for the scenarios that measure over real sockets (`mode: 'process'`): the server under
 * test (compiled `dist/main.js`, as `npm start` runs it, or `tsx src/main.ts`), the baselines in
 * bench/servers/, and the load process bench/load/main.ts. Each runs apart from the runner; the
 * runner only starts them, reads their RSS from /proc and collects the load process's JSON result.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface Proc {
  pid: number;
  /** The URL the process printed when it was ready (GraphQL endpoint, or the baseline's root). */
  url: string;
  /** Milliseconds from spawn to the "listening" line. */
  readyMs: number;
  /** Resident set size now, in bytes (0 once it has exited). */
  rss(): number;
  stop(): Promise<void>;
}

/** Children still running; killed if the runner exits without stopping them (a crash, ^C). */
const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});
function watch(child: ChildProcess) {
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

export function rssOf(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * CPU time (user + system) a process has used so far, in ms, from /proc (clock ticks of 10 ms, the
 * kernel's USER_HZ on Linux); 0 when it cannot be read.
 */
export function cpuMsOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

/** Spawns `node …argv` and waits for a stdout line with "listening on URL". */
export function startProcess(name: string, argv: string[], env: Record<string, string>, timeoutMs = 120_000): Promise<Proc> {
  const started = performance.now();
  const child = watch(
    spawn(process.execPath, argv, {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise<Proc>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not start within ${timeoutMs} ms: ${stderr}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on (\S+)/.exec(out);
      if (!match) return;
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stdout?.resume();
      const readyMs = performance.now() - started;
      resolve({
        pid: child.pid!,
        url: match[1],
        readyMs,
        rss: () => (child.exitCode === null ? rssOf(child.pid!) : 0),
        stop: () => stopChild(child, exited),
      });
    };
    child.stdout?.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with code ${code} before it was ready: ${stderr}`));
    });
  });
}

async function stopChild(child: ChildProcess, exited: Promise<number | null>) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** The load process: runs one mode to its end and returns its JSON result. */
export function runLoad<T>(mode: string, args: unknown): Promise<T> {
  const child = watch(
    spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/load/main.ts'), mode], {
      cwd: ROOT,
      env: { ...process.env, BENCH_LOAD_ARGS: JSON.stringify(args) },
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  return new Promise<T>((resolve, reject) => {
    child.once('exit', (code) => {
      const last = out.trim().split('\n').pop() ?? '';
      if (code !== 0) return reject(new Error(`load process (${mode}) exited with code ${code}`));
      try {
        resolve(JSON.parse(last) as T);
      } catch {
        reject(new Error(`load process (${mode}) printed no result: ${out.slice(-500)}`));
      }
    });
  });
}

/** A load process that holds its sockets open until `release()` (mode `hold`). */
export async function holdLoad(args: unknown): Promise<{ ready: unknown; release(): Promise<unknown> }> {
  const child = watch(
    spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/load/main.ts'), 'hold'], {
      cwd: ROOT,
      env: { ...process.env, BENCH_LOAD_ARGS: JSON.stringify(args) },
      stdio: ['pipe', 'pipe', 'inherit'],
    }),
  );
  const lines: string[] = [];
  let buffer = '';
  let wake: (() => void) | null = null;
  child.stdout?.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let nl = buffer.indexOf('\n');
    while (nl >= 0) {
      lines.push(buffer.slice(0, nl));
      buffer = buffer.slice(nl + 1);
      nl = buffer.indexOf('\n');
    }
    wake?.();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const next = async () => {
    while (!lines.length) {
      const code = await Promise.race([exited, new Promise<'line'>((resolve) => (wake = () => resolve('line')))]);
      if (code !== 'line' && !lines.length) throw new Error(`load process (hold) exited with code ${code}`);
    }
    return JSON.parse(lines.shift()!) as unknown;
  };
  const ready = await next();
  return {
    ready,
    async release() {
      child.stdin?.end();
      const result = await next();
      await exited;
      return result;
    },
  };
}
