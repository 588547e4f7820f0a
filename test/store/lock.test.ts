import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockTimeoutError, TransactionAbortedError } from '../../src/store/errors.js';
import { tryZoneLock, withZoneLock, ZONE_LOCK_NAMESPACE } from '../../src/store/lock.js';
import { withSnapshot } from '../../src/store/transaction.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { until } from '../helpers/until.js';
import { zoneLocksHeld, zoneLocksWaited } from '../helpers/zone-locks.js';

/** A promise with its resolve exposed. */
function latch(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

describe('withZoneLock', () => {
  let db: TestDatabase;
  let observer: pg.Pool;

  beforeAll(async () => {
    db = await testDatabase({ max: 8 });
    observer = new pg.Pool({ connectionString: db.url, max: 2 });
    observer.on('error', () => undefined);
    await db.pool.query('CREATE TABLE lock_probe (zone text, note text)');
  });
  afterAll(async () => {
    await observer?.end();
    await db?.drop();
  });

  it('serializes two holders of the same zone', async () => {
    const events: string[] = [];
    const aInside = latch();
    const releaseA = latch();
    const a = withZoneLock(db.pool, 'serial.example', { lockTimeoutMs: 10_000 }, async () => {
      events.push('A in');
      aInside.open();
      await releaseA.promise;
      events.push('A out');
    });
    await aInside.promise;
    const b = withZoneLock(db.pool, 'serial.example', { lockTimeoutMs: 10_000 }, async () => {
      events.push('B in');
      events.push('B out');
    });
    // B is provably blocked on the lock (not merely slow): Postgres shows its request ungranted.
    await until('B to wait for the lock', async () => (await zoneLocksWaited(observer)) === 1);
    expect(events).toEqual(['A in']);
    releaseA.open();
    await Promise.all([a, b]);
    expect(events).toEqual(['A in', 'A out', 'B in', 'B out']);
  });

  it('lets different zones run in parallel', async () => {
    const releaseA = latch();
    const aInside = latch();
    const a = withZoneLock(db.pool, 'one.example', { lockTimeoutMs: 10_000 }, async () => {
      aInside.open();
      await releaseA.promise;
      return 'a';
    });
    await aInside.promise;
    // B completes while A still holds its zone.
    const b = await withZoneLock(db.pool, 'two.example', { lockTimeoutMs: 1_000 }, async () => 'b');
    expect(b).toBe('b');
    expect(await zoneLocksHeld(observer)).toBe(1);
    releaseA.open();
    expect(await a).toBe('a');
  });

  it("says a statement's own lock timeout under the zone lock as LockTimeoutError, not as the database's raw error", async () => {
    // Another transaction holds a row fn needs; fn's statement waits for it as long as the lock timeout allows.
    await db.pool.query("INSERT INTO lock_probe VALUES ('row.example', 'held')");
    const holder = await observer.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT * FROM lock_probe WHERE zone = 'row.example' FOR UPDATE");
      const err = await withZoneLock(db.pool, 'row.example', { lockTimeoutMs: 200 }, (tx) =>
        tx.query("UPDATE lock_probe SET note = 'mine' WHERE zone = 'row.example'"),
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LockTimeoutError);
      expect((err as Error).message).toBe(
        'zone "row.example": lock not acquired within 200 ms (held, a statement under it waited that long for a row another transaction holds)',
      );
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    expect((await db.pool.query("SELECT note FROM lock_probe WHERE zone = 'row.example'")).rows).toEqual([{ note: 'held' }]);
  });

  it('throws LockTimeoutError when the zone stays locked', async () => {
    const release = latch();
    const inside = latch();
    const holder = withZoneLock(db.pool, 'busy.example', { lockTimeoutMs: 10_000 }, async () => {
      inside.open();
      await release.promise;
    });
    await inside.promise;
    let ran = false;
    const err: unknown = await withZoneLock(db.pool, 'busy.example', { lockTimeoutMs: 150 }, async () => {
      ran = true;
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockTimeoutError);
    expect((err as LockTimeoutError).zone).toBe('busy.example');
    expect((err as Error).message).toMatch(/busy\.example.*150 ms/);
    expect(ran).toBe(false);
    release.open();
    await holder;
  });

  it('does not report success when a caught SQL error aborted the transaction', async () => {
    const err: unknown = await withZoneLock(db.pool, 'aborted.example', { lockTimeoutMs: 1_000 }, async (tx) => {
      await tx.query("INSERT INTO lock_probe VALUES ('aborted.example', 'lost')");
      await tx.query('SELECT no_such_column FROM lock_probe').catch(() => undefined); // swallowed
      return 'looks fine';
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransactionAbortedError);
    const { rows } = await db.pool.query("SELECT * FROM lock_probe WHERE zone = 'aborted.example'");
    expect(rows).toHaveLength(0);
    expect(await zoneLocksHeld(observer)).toBe(0);
  });

  it('releases the lock and rolls back when fn throws', async () => {
    await expect(
      withZoneLock(db.pool, 'throw.example', { lockTimeoutMs: 1_000 }, async (tx) => {
        await tx.query("INSERT INTO lock_probe VALUES ('throw.example', 'should vanish')");
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const { rows } = await db.pool.query("SELECT * FROM lock_probe WHERE zone = 'throw.example'");
    expect(rows).toHaveLength(0);
    expect(await zoneLocksHeld(observer)).toBe(0);
    expect(await tryZoneLock(db.pool, 'throw.example', async () => 'free')).toBe('free');
  });

  it('commits and releases the lock when fn resolves', async () => {
    const out = await withZoneLock(db.pool, 'commit.example', { lockTimeoutMs: 1_000 }, async (tx) => {
      await tx.query("INSERT INTO lock_probe VALUES ('commit.example', 'kept')");
      return 42;
    });
    expect(out).toBe(42);
    const { rows } = await db.pool.query("SELECT note FROM lock_probe WHERE zone = 'commit.example'");
    expect(rows).toEqual([{ note: 'kept' }]);
    expect(await zoneLocksHeld(observer)).toBe(0);
    expect(await tryZoneLock(db.pool, 'commit.example', async () => 'free')).toBe('free');
  });

  it('keys the lock by (namespace, hashtext(zone)) and sets lock_timeout for the transaction only', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    try {
      await withZoneLock(pool, 'key.example', { lockTimeoutMs: 1234 }, async (tx) => {
        const { rows } = await tx.query<{ classid: string; objid: string; timeout: string; expected: string }>(
          `SELECT l.classid::text AS classid, l.objid::text AS objid, current_setting('lock_timeout') AS timeout,
                  (hashtext('key.example')::bigint & 4294967295)::text AS expected
             FROM pg_locks l
            WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid()`,
        );
        expect(rows).toHaveLength(1);
        expect(rows[0]?.classid).toBe(String(ZONE_LOCK_NAMESPACE));
        expect(rows[0]?.objid).toBe(rows[0]?.expected);
        expect(rows[0]?.timeout).toBe('1234ms');
      });
      // same (only) connection afterwards: the setting did not leak into the session
      const { rows } = await pool.query<{ t: string }>("SELECT current_setting('lock_timeout') AS t");
      expect(rows[0]?.t).toBe('0');
    } finally {
      await pool.end();
    }
  });

  it('always releases the client (a pool of one survives many calls, throwing or not)', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    try {
      for (let i = 0; i < 20; i++) {
        await withZoneLock(pool, 'one-client.example', { lockTimeoutMs: 1_000 }, async () => {
          if (i % 2 === 0) throw new Error(`fail ${i}`);
        }).catch(() => undefined);
        await tryZoneLock(pool, 'one-client.example', async () => undefined);
      }
      expect(pool.totalCount).toBe(1);
      expect(pool.idleCount).toBe(1);
    } finally {
      await pool.end();
    }
  });

  it('destroys a client whose connection broke, and the pool goes on', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    pool.on('error', () => undefined);
    try {
      const err: unknown = await withZoneLock(pool, 'broken.example', { lockTimeoutMs: 1_000 }, async (tx) => {
        const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        await observer.query('SELECT pg_terminate_backend($1)', [rows[0]?.pid]);
        await tx.query('SELECT 1');
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
      expect(rows).toEqual([{ one: 1 }]);
      expect(await tryZoneLock(pool, 'broken.example', async () => 'free')).toBe('free');
    } finally {
      await pool.end();
    }
  });

  it('rejects a non-positive timeout', async () => {
    await expect(withZoneLock(db.pool, 'x.example', { lockTimeoutMs: 0 }, async () => undefined)).rejects.toThrow(RangeError);
  });
});

describe('tryZoneLock', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await testDatabase({ max: 4 });
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('returns undefined without running fn when the zone is held, and runs it when free', async () => {
    const release = latch();
    const inside = latch();
    const holder = withZoneLock(db.pool, 'job.example', { lockTimeoutMs: 1_000 }, async () => {
      inside.open();
      await release.promise;
    });
    await inside.promise;
    let ran = false;
    expect(
      await tryZoneLock(db.pool, 'job.example', async () => {
        ran = true;
        return 'ran';
      }),
    ).toBeUndefined();
    expect(ran).toBe(false);
    expect(await tryZoneLock(db.pool, 'other.example', async () => 'ran')).toBe('ran');
    release.open();
    await holder;
    expect(await tryZoneLock(db.pool, 'job.example', async () => 'ran')).toBe('ran');
  });

  it('holds the lock while fn runs', async () => {
    const release = latch();
    const inside = latch();
    const job = tryZoneLock(db.pool, 'held.example', async () => {
      inside.open();
      await release.promise;
      return 'done';
    });
    await inside.promise;
    await expect(withZoneLock(db.pool, 'held.example', { lockTimeoutMs: 100 }, async () => undefined)).rejects.toBeInstanceOf(LockTimeoutError);
    release.open();
    expect(await job).toBe('done');
  });
});

describe('transactions', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await testDatabase({ max: 4 });
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('sees one snapshot and is read-only', async () => {
    await db.pool.query("INSERT INTO zones (name) VALUES ('snap.example')");
    await withSnapshot(db.pool, async (tx) => {
      const first = await tx.query<{ g: string }>("SELECT generation::text AS g FROM zones WHERE name = 'snap.example'");
      await db.pool.query("UPDATE zones SET generation = generation + 1 WHERE name = 'snap.example'");
      const second = await tx.query<{ g: string }>("SELECT generation::text AS g FROM zones WHERE name = 'snap.example'");
      expect(second.rows).toEqual(first.rows);
      const { rows } = await tx.query<{ ro: string }>("SELECT current_setting('transaction_read_only') AS ro");
      expect(rows[0]?.ro).toBe('on');
    });
    const { rows } = await db.pool.query<{ g: string }>("SELECT generation::text AS g FROM zones WHERE name = 'snap.example'");
    expect(rows).toEqual([{ g: '1' }]);
  });
});
