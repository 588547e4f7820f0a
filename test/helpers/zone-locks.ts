/**
 * dnsplane's zone locks in the test's own database, as Postgres sees them (pg_locks): how many are
 * held, and how many sessions wait for one; and a zone's lock held by the test until it lets go.
 */
import type pg from 'pg';
import type { Queryable } from '../../src/store/index.js';
import { withZoneLock, ZONE_LOCK_NAMESPACE } from '../../src/store/index.js';

async function zoneLocks(q: Queryable, granted: boolean): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_locks
      WHERE locktype = 'advisory' AND classid = $1 AND objsubid = 2 AND granted = $2
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [ZONE_LOCK_NAMESPACE, granted],
  );
  return rows[0]?.n ?? 0;
}

/** Zone locks held in this database right now. */
export function zoneLocksHeld(q: Queryable): Promise<number> {
  return zoneLocks(q, true);
}

/** Sessions of this database waiting for a zone lock right now. */
export function zoneLocksWaited(q: Queryable): Promise<number> {
  return zoneLocks(q, false);
}

/** Takes `zone`'s lock as an apply does (outside any server) and holds it until release() (which resolves once it is let go). */
export async function holdZoneLock(pool: pg.Pool, zone: string): Promise<{ release(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let holding!: () => void;
  const held = new Promise<void>((r) => (holding = r));
  const holder = withZoneLock(pool, zone, { lockTimeoutMs: 60_000 }, async () => {
    holding();
    await released;
  });
  await Promise.race([held, holder]);
  return {
    async release() {
      release();
      await holder;
    },
  };
}
