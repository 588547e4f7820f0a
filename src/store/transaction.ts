/**
 * Transactions on one checked-out client (never pool.query for multi-statement work).
 */
import type pg from 'pg';
import { withClientTransaction } from './internal.js';

/** BEGIN … COMMIT on one client; ROLLBACK and rethrow when fn throws. */
export async function withTransaction<T>(pool: pg.Pool, fn: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  return withClientTransaction(pool, fn);
}

/**
 * A consistent read-only view: REPEATABLE READ, READ ONLY. Every query fn runs sees the same
 * snapshot (e.g. a zone's generation, its records and its ownership as of one instant). Takes no
 * lock and never waits for writers.
 */
export async function withSnapshot<T>(pool: pg.Pool, fn: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  return withClientTransaction(pool, fn, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
}

/** Whether the database answers (for /readyz). */
export async function ping(pool: pg.Pool): Promise<void> {
  await pool.query('SELECT 1');
}
