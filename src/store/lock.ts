/**
 * Per-zone serialization: a transaction-scoped advisory lock keyed (ZONE_LOCK_NAMESPACE,
 * hashtext(zone)), taken on one checked-out client. Everything fn does on `tx` is part of the
 * transaction; the lock goes with COMMIT or ROLLBACK.
 *
 * `zone` must be the normalized zone name: two spellings of one zone would take two locks.
 * lock_timeout is set with SET LOCAL semantics and stays in force for fn's statements too; only a
 * timeout while acquiring the zone lock becomes LockTimeoutError.
 */
import type pg from 'pg';
import { LockTimeoutError } from './errors.js';
import { PG_LOCK_NOT_AVAILABLE, pgCode, withClientTransaction } from './internal.js';

export { LockTimeoutError } from './errors.js';

/** First key of every dnsplane zone lock: the bytes of "dnsp" as an int4. */
export const ZONE_LOCK_NAMESPACE = 0x646e7370;

export async function withZoneLock<T>(
  pool: pg.Pool,
  zone: string,
  opts: { lockTimeoutMs: number },
  fn: (tx: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const timeoutMs = opts.lockTimeoutMs;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1) {
    throw new RangeError(`lockTimeoutMs: expected a positive integer, got ${timeoutMs}`);
  }
  return withClientTransaction(pool, async (tx) => {
    await tx.query("SELECT set_config('lock_timeout', $1, true)", [`${timeoutMs}ms`]);
    try {
      await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [ZONE_LOCK_NAMESPACE, zone]);
    } catch (err) {
      if (pgCode(err) === PG_LOCK_NOT_AVAILABLE) throw new LockTimeoutError(zone, timeoutMs);
      throw err;
    }
    return fn(tx);
  });
}

/**
 * For background jobs: takes the zone lock only if it is free right now. Returns undefined (and
 * runs nothing) when another transaction holds it.
 */
export async function tryZoneLock<T>(
  pool: pg.Pool,
  zone: string,
  fn: (tx: pg.PoolClient) => Promise<T>,
): Promise<T | undefined> {
  return withClientTransaction(pool, async (tx) => {
    const { rows } = await tx.query<{ locked: boolean }>(
      'SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS locked',
      [ZONE_LOCK_NAMESPACE, zone],
    );
    if (rows[0]?.locked !== true) return undefined;
    return fn(tx);
  });
}
