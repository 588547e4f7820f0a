/**
 * Per-zone serialization: a transaction-scoped advisory lock keyed (ZONE_LOCK_NAMESPACE,
 * hashtext(zone)), taken on one checked-out client. Everything fn does on `tx` is part of the
 * transaction; the lock goes with COMMIT or ROLLBACK.
 *
 * `zone` must be the normalized zone name: two spellings of one zone would take two locks.
 * lock_timeout is set with SET LOCAL semantics and stays in force for fn's statements too: a timeout
 * while acquiring the zone lock, or a statement of fn that waited as long for a row another
 * transaction holds, becomes LockTimeoutError (retryable: Aborted, never an internal error).
 */
import type pg from 'pg';
import { LockTimeoutError, ZoneLockLostError } from './errors.js';
import { PG_LOCK_NOT_AVAILABLE, errorCode, withClientTransaction, type Queryable } from './internal.js';
import { messageOf } from '../lib/error-message.js';

export { LockTimeoutError, ZoneLockLostError } from './errors.js';

/** First key of every dnsplane zone lock: the bytes of "dnsp" as an int4. */
export const ZONE_LOCK_NAMESPACE = 0x646e7370;

/** Per pool: who is told that a zone lock's transaction of this process ended (onZoneLockEnded). */
const lockEnded = new WeakMap<pg.Pool, Set<(zone: string) => void>>();

/**
 * `fn` is called with the zone each time a zone lock's transaction taken on `pool` by this process
 * ends (committed or not), before its caller goes on: what was changed under it is committed by then.
 * Every generation bump is made under the zone lock, so this is how the replica that changed a zone
 * knows it at once (core/reads/read-cache.ts ZoneStateSource). Returns a function that stops it.
 */
export function onZoneLockEnded(pool: pg.Pool, fn: (zone: string) => void): () => void {
  let fns = lockEnded.get(pool);
  if (!fns) lockEnded.set(pool, (fns = new Set()));
  fns.add(fn);
  return () => void fns.delete(fn);
}

function ended(pool: pg.Pool, zone: string): void {
  for (const fn of lockEnded.get(pool) ?? []) fn(zone);
}

export async function withZoneLock<T>(pool: pg.Pool, zone: string, opts: { lockTimeoutMs: number }, fn: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  const timeoutMs = opts.lockTimeoutMs;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1) {
    throw new RangeError(`lockTimeoutMs: expected a positive integer, got ${timeoutMs}`);
  }
  try {
    return await withClientTransaction(pool, async (tx) => {
      await tx.query("SELECT set_config('lock_timeout', $1, true)", [`${timeoutMs}ms`]);
      try {
        await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [ZONE_LOCK_NAMESPACE, zone]);
      } catch (err) {
        if (errorCode(err) === PG_LOCK_NOT_AVAILABLE) throw new LockTimeoutError(zone, timeoutMs);
        throw err;
      }
      return underLock(fn(tx), zone, timeoutMs);
    });
  } finally {
    ended(pool, zone);
  }
}

/** What fn does under the lock, a statement's own lock timeout (a row another transaction held that long) said as such. */
async function underLock<T>(running: Promise<T>, zone: string, timeoutMs: number): Promise<T> {
  try {
    return await running;
  } catch (err) {
    if (errorCode(err) === PG_LOCK_NOT_AVAILABLE) {
      throw new LockTimeoutError(zone, timeoutMs, 'held, a statement under it waited that long for a row another transaction holds');
    }
    throw err;
  }
}

/**
 * withZoneLock over several zones in one transaction: the locks taken in the zones' sorted order (so
 * two such callers never wait on each other in a circle), each under the same lock_timeout. For an
 * admin change that must be one transaction across zones (a tenant handover, core/admin/handover.ts).
 */
export async function withZoneLocks<T>(
  pool: pg.Pool,
  zones: readonly string[],
  opts: { lockTimeoutMs: number },
  fn: (tx: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const sorted = [...new Set(zones)].sort();
  if (!Number.isInteger(opts.lockTimeoutMs) || opts.lockTimeoutMs < 1) {
    throw new RangeError(`lockTimeoutMs: expected a positive integer, got ${opts.lockTimeoutMs}`);
  }
  try {
    return await withClientTransaction(pool, async (tx) => {
      await tx.query("SELECT set_config('lock_timeout', $1, true)", [`${opts.lockTimeoutMs}ms`]);
      for (const zone of sorted) {
        try {
          await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [ZONE_LOCK_NAMESPACE, zone]);
        } catch (err) {
          if (errorCode(err) === PG_LOCK_NOT_AVAILABLE) throw new LockTimeoutError(zone, opts.lockTimeoutMs);
          throw err;
        }
      }
      return underLock(fn(tx), sorted.join(', '), opts.lockTimeoutMs);
    });
  } finally {
    for (const zone of sorted) ended(pool, zone);
  }
}

/**
 * For background jobs: takes the zone lock only if it is free right now. Returns undefined (and
 * runs nothing) when another transaction holds it.
 */
export async function tryZoneLock<T>(pool: pg.Pool, zone: string, fn: (tx: pg.PoolClient) => Promise<T>): Promise<T | undefined> {
  let locked = false;
  try {
    return await withClientTransaction(pool, async (tx) => {
      const { rows } = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS locked', [ZONE_LOCK_NAMESPACE, zone]);
      if (rows[0]?.locked !== true) return undefined;
      locked = true;
      return fn(tx);
    });
  } finally {
    if (locked) ended(pool, zone);
  }
}

/** The advisory-lock namespace of background jobs that one replica at a time runs ('dnsj'). */
export const JOB_LOCK_NAMESPACE = 0x646e736a;

/**
 * For background jobs that one replica at a time runs (core/withdrawals/liveness.ts): `fn` runs holding the job's
 * lock for the length of a transaction, only if no other replica holds it now; undefined otherwise.
 */
export async function tryJobLock<T>(pool: pg.Pool, job: string, fn: () => Promise<T>): Promise<T | undefined> {
  return withClientTransaction(pool, async (tx) => {
    const { rows } = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS locked', [JOB_LOCK_NAMESPACE, job]);
    if (rows[0]?.locked !== true) return undefined;
    return fn();
  });
}

/**
 * The session that holds a zone lock: its backend pid and start time (microseconds since the epoch).
 * A pid alone could be reused by a new session after a restart; with backend_start it names one
 * session. Journal writes made on another connection on the holder's behalf are fenced on it
 * (lockHeldBy).
 */
export interface LockSession {
  zone: string;
  pid: number;
  backendStartUs: string;
}

/** The identity of the session `tx` runs on (the one that took the zone lock). */
export async function lockSession(tx: Queryable, zone: string): Promise<LockSession> {
  const { rows } = await tx.query<{ pid: number; start: string }>(
    `SELECT pg_backend_pid() AS pid, (extract(epoch FROM backend_start) * 1000000)::bigint::text AS start
       FROM pg_stat_activity WHERE pid = pg_backend_pid()`,
  );
  const r = rows[0];
  if (!r) throw new Error('pg_stat_activity does not show this session');
  return { zone, pid: r.pid, backendStartUs: r.start };
}

/**
 * SQL condition, true while the session `s` still holds its zone lock (granted, in this database).
 * Parameters: $z zone, $p pid, $s backend start (µs). Used by fenced journal writes: an UPDATE made
 * on the journal's own pool on behalf of a lock holder happens only while that holder holds the lock.
 */
export function lockHeldSql(z: string, p: string, s: string): string {
  return `EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
       AND l.classid = ${ZONE_LOCK_NAMESPACE}::oid AND l.objid = hashtext(${z})::oid
       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND l.pid = ${p} AND (extract(epoch FROM a.backend_start) * 1000000)::bigint = ${s}::bigint)`;
}

/**
 * The fence: proves, on the lock's own session, that the zone lock is still held right now. A
 * transaction-scoped advisory lock lives as long as its transaction, and a statement that succeeds on
 * the session proves the transaction is alive (an aborted one answers 25P02). Throws
 * ZoneLockLostError when the session is gone or does not answer within `timeoutMs` (then the
 * connection is destroyed, so that nothing waits on it and the server ends the session).
 */
export async function checkLockHeld(tx: pg.PoolClient, zone: string, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      tx.query('SELECT 1'),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          (tx as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
          reject(new Error(`the lock's session did not answer within ${timeoutMs} ms`));
        }, timeoutMs);
      }),
    ]);
  } catch (e) {
    throw new ZoneLockLostError(zone, messageOf(e));
  } finally {
    clearTimeout(timer);
  }
}
