/**
 * Transactions on one checked-out client (never pool.query for multi-statement work).
 */
import type pg from 'pg';
import { withClientTransaction, type Queryable } from './internal.js';

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

/** Savepoint names are ours, never input: plain identifiers only. */
function savepointName(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new TypeError(`savepoint name: expected a plain lower-case identifier, got ${JSON.stringify(name)}`);
  return name;
}

/** SAVEPOINT inside the transaction `tx` runs (a name used again moves it). */
export async function savepoint(tx: Queryable, name: string): Promise<void> {
  await tx.query(`SAVEPOINT ${savepointName(name)}`);
}

/** Undoes what the transaction did since the savepoint (which stays set); a transaction aborted since is usable again. */
export async function rollbackToSavepoint(tx: Queryable, name: string): Promise<void> {
  await tx.query(`ROLLBACK TO SAVEPOINT ${savepointName(name)}`);
}

/** Forgets the savepoint, keeping what was done since. */
export async function releaseSavepoint(tx: Queryable, name: string): Promise<void> {
  await tx.query(`RELEASE SAVEPOINT ${savepointName(name)}`);
}
