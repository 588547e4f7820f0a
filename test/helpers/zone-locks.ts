/**
 * dnsplane's zone locks in the test's own database, as Postgres sees them (pg_locks): how many are
 * held, and how many sessions wait for one.
 */
import type { Queryable } from '../../src/store/index.js';
import { ZONE_LOCK_NAMESPACE } from '../../src/store/index.js';

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
