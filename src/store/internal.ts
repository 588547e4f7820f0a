/**
 * Helpers shared by the store modules. Not re-exported from index.ts.
 */
import pg from 'pg';
import { TransactionAbortedError } from './errors.js';

/** Where the store's modules log (never given secrets): a message and its fields. */
export type LogFn = (msg: string, fields?: Record<string, unknown>) => void;

/** Something that runs a query: a Pool, or a client checked out of it (possibly inside a transaction). */
export type Queryable = { query: pg.PoolClient['query'] };

/** The code a thrown error carries, if any: a SQLSTATE from pg, an errno name (ENOENT, EEXIST…) from Node. */
export function errorCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err as { code: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** Name of the constraint a driver error reports, if any. */
export function pgConstraint(err: unknown): string | undefined {
  if (err instanceof pg.DatabaseError) return err.constraint;
  return undefined;
}

export const PG_UNIQUE_VIOLATION = '23505';
export const PG_FOREIGN_KEY_VIOLATION = '23503';
export const PG_EXCLUSION_VIOLATION = '23P01';
export const PG_LOCK_NOT_AVAILABLE = '55P03';

/** A decimal int8 value as returned by pg (string) -> bigint. */
export function toBigInt(value: string | number | bigint): bigint {
  return typeof value === 'bigint' ? value : BigInt(value);
}

export function toBigIntOrNull(value: string | number | bigint | null): bigint | null {
  return value === null ? null : toBigInt(value);
}

const INT8_DECIMAL = /^[0-9]{1,19}$/;

/** Validates an id given as a decimal string (OVH record ids, tenant ids, journal ids). */
export function assertIdString(what: string, value: string): void {
  if (!INT8_DECIMAL.test(value) || BigInt(value) > 9223372036854775807n) {
    throw new TypeError(`${what}: expected a decimal integer string, got ${JSON.stringify(value)}`);
  }
}

/**
 * Sets `last_used_at` of credential rows (a table with `id` and `last_used_at`: TSIG keys, OVH keys) to
 * the times given, several rows in one statement. A time never moves back; a row deleted meanwhile is
 * skipped. `table` is one of ours, never input.
 */
export async function noteUsedAt(q: Queryable, table: 'tsig_keys' | 'ovh_keys', what: string, uses: ReadonlyArray<{ id: string; at: Date }>): Promise<void> {
  if (uses.length === 0) return;
  for (const u of uses) assertIdString(what, u.id);
  await q.query(
    `UPDATE ${table} k SET last_used_at = GREATEST(k.last_used_at, u.at)
       FROM unnest($1::bigint[], $2::timestamptz[]) AS u(id, at)
      WHERE k.id = u.id`,
    [uses.map((u) => u.id), uses.map((u) => u.at)],
  );
}

export function assertLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) {
    throw new RangeError(`limit: expected an integer in 1..10000, got ${limit}`);
  }
}

/**
 * Checks out one client for fn and releases it afterwards. A client whose connection broke — an
 * 'error' event while it was out, or fn calling `broken()` (e.g. a ROLLBACK that failed) — is
 * destroyed instead of pooled.
 */
export async function withClient<T>(pool: pg.Pool, fn: (client: pg.PoolClient, broken: () => void) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  // pg-pool removes its own 'error' listener while a client is checked out: without ours, a
  // connection dying mid-transaction would be an unhandled 'error' event and crash the process.
  const onError = (): void => {
    broken = true;
  };
  client.on('error', onError);
  try {
    return await fn(client, onError);
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}

/**
 * Checks out one client, runs fn inside BEGIN … COMMIT (ROLLBACK and rethrow when fn throws) and
 * releases the client; a client whose connection broke is destroyed instead of pooled.
 */
export async function withClientTransaction<T>(pool: pg.Pool, fn: (tx: pg.PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
  return withClient(pool, async (client, broken) => {
    try {
      await client.query(begin);
      const result = await fn(client);
      const commit = await client.query('COMMIT');
      if (commit.command === 'ROLLBACK') {
        // Postgres answers COMMIT of a transaction aborted by an earlier (caught) error with a
        // silent ROLLBACK: nothing was written, so this must not look like success.
        throw new TransactionAbortedError();
      }
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(broken); // failed: the connection is gone or unusable
      throw err;
    }
  });
}

/**
 * Runs fn in a transaction when given a Pool. When given a client, runs fn on it as is: the
 * caller owns the transaction (or deliberately has none).
 */
export async function inTransaction<T>(q: Queryable, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  if (q instanceof pg.Pool) return withClientTransaction(q, fn);
  return fn(q);
}

/** JSON text for a jsonb parameter. Always stringify: pg would turn a JS array into a Postgres array. */
export function jsonParam(value: unknown, what: string): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError(`${what}: not representable as JSON`);
  return text;
}

/** A JSON value as read back from a jsonb column. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Rows one FETCH of queryInPages reads: 2,000 records are ~0.25 MB on the wire, parsed in a few ms. */
export const ROWS_PER_PAGE = 2_000;

let cursors = 0;

/**
 * The rows of `sql`, `ROWS_PER_PAGE` at a time, each page handed to `page` (awaited) before the next
 * is fetched: a big result (a zone of 50,000 records) is never parsed in one block, since pg parses
 * everything that arrived on the socket at once, and libuv reads up to 2 MB per turn of the loop.
 * Inside a transaction (a snapshot) through a cursor, so the pages are of one read; on a Pool (no
 * transaction to hold a cursor) one query, one page.
 */
export async function queryInPages<R extends pg.QueryResultRow>(
  q: Queryable,
  sql: string,
  params: unknown[],
  page: (rows: R[]) => void | Promise<void>,
  rowsPerPage = ROWS_PER_PAGE,
): Promise<void> {
  if (q instanceof pg.Pool) return page((await q.query<R>(sql, params)).rows);
  const cursor = `dnsplane_pages_${++cursors}`;
  await q.query(`DECLARE ${cursor} NO SCROLL CURSOR FOR ${sql}`, params);
  for (;;) {
    const { rows } = await q.query<R>(`FETCH FORWARD ${rowsPerPage} FROM ${cursor}`);
    if (rows.length > 0) await page(rows);
    if (rows.length < rowsPerPage) break;
  }
  await q.query(`CLOSE ${cursor}`);
}
