import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { parseLsn, type Replica, ReplicaSet } from '../../src/db/replicas.js';

const replica = (index: number, replayed: bigint, problem: string | null = null): Replica => ({
  index,
  pool: null as unknown as pg.Pool,
  sql: { query: async () => [] },
  replayed,
  problem,
});

/** A set whose replicas are as given (no poll: the choice alone). */
function setOf(...replicas: Replica[]) {
  const set = new ReplicaSet(null as unknown as pg.Pool, replicas, 5_000);
  // The constructor marks them unpolled; the test says what each poll found.
  for (const r of replicas) r.problem = null;
  return set;
}

describe('read replicas: positions and the choice of a replica', () => {
  it('reads a WAL position as pg_lsn writes it, in its order, and refuses anything else', () => {
    expect(parseLsn('0/0')).toBe(0n);
    expect(parseLsn('16/B374D848')).toBe((0x16n << 32n) | 0xb374d848n);
    expect(parseLsn('1/0')! > parseLsn('0/FFFFFFFF')!).toBe(true);
    for (const bad of ['', '0', '0/', '/1', '0/1/2', 'G/1', '123456789/0', ' 0/1', '0x1/2', '-1/2']) expect(parseLsn(bad)).toBeNull();
  });

  it('takes the replicas in turn, only those serving and past the position; else the primary', () => {
    const a = replica(0, 100n);
    const b = replica(1, 200n);
    const set = setOf(a, b);
    const chosen = (position: bigint) => set.onReplica(position, () => set.current()?.index ?? 'primary');
    expect([chosen(0n), chosen(0n), chosen(0n), chosen(0n)]).toEqual([0, 1, 0, 1]);
    expect([chosen(150n), chosen(150n)]).toEqual([1, 1]);
    expect(chosen(201n)).toBe('primary');
    b.problem = 'lagging';
    expect([chosen(0n), chosen(0n)]).toEqual([0, 0]);
    expect(chosen(150n)).toBe('primary');
    a.problem = 'down: connection refused';
    expect(chosen(0n)).toBe('primary');
    expect(set.onPrimary(() => set.current())).toBeNull();
    expect(set.current()).toBeNull();
    expect(set.status()).toEqual({
      ok: false,
      replicas: [
        { replica: 0, status: 'down: connection refused', replayed: '0/64' },
        { replica: 1, status: 'lagging', replayed: '0/C8' },
      ],
    });
  });
});
