import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A free TCP port on 127.0.0.1 (asked of the kernel, then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** The PostgreSQL server binaries of this machine (Debian layout), or null. */
export const postgresBin: string | null = (() => {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return null;
  const versions = readdirSync(base).sort((a, b) => Number(b) - Number(a));
  const found = versions.map((v) => join(base, v, 'bin')).find((dir) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl')));
  // initdb refuses root: as root, run the server as the `postgres` user.
  return found && (process.getuid?.() !== 0 || existsSync('/usr/sbin/runuser') || existsSync('/usr/bin/su')) ? found : null;
})();

export interface PrivatePostgres {
  url: string;
  /** `pg_ctl stop -m fast`: the outage. */
  stop(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

/**
 * A PostgreSQL server of the test's own (never the machine's shared one), in a temporary folder on
 * a free port, trust auth, connected to as `postgres`.
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  if (!postgresBin) throw new Error('no PostgreSQL binaries');
  const dir = mkdtempSync(join(tmpdir(), 'sg-pg-'));
  const port = await freePort();
  const asPostgres = async (command: string) => {
    if (process.getuid?.() === 0) await run('chown', ['-R', 'postgres', dir]).then(() => run('su', ['postgres', '-c', command]));
    else await run('sh', ['-c', command]);
  };
  await asPostgres(`${postgresBin}/initdb -D ${dir}/data -A trust -U postgres >/dev/null`);
  const pgCtl = (action: string) =>
    asPostgres(
      action === 'start'
        ? `${postgresBin}/pg_ctl -D ${dir}/data -o "-p ${port} -k ${dir} -c listen_addresses=127.0.0.1" -l ${dir}/log -w start >/dev/null`
        : `${postgresBin}/pg_ctl -D ${dir}/data -m fast -w stop >/dev/null`,
    );
  await pgCtl('start');
  let running = true;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      await pgCtl('stop');
      running = false;
    },
    async start() {
      await pgCtl('start');
      running = true;
    },
    async destroy() {
      if (running) await pgCtl('stop').catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface PrivateRedis {
  url: string;
  /** SIGKILL: Redis gone without a goodbye. */
  kill(): Promise<void>;
  /** A new redis-server on the same port. */
  restart(): Promise<void>;
}

export const redisServerAvailable = existsSync('/usr/bin/redis-server') || existsSync('/usr/local/bin/redis-server');

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess;
  const launch = () =>
    new Promise<void>((resolve, reject) => {
      child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let out = '';
      child.stdout!.on('data', (chunk) => {
        out += chunk;
        if (out.includes('Ready to accept connections')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)));
    });
  await launch();
  const kill = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  return { url: `redis://127.0.0.1:${port}`, kill, restart: launch };
}
