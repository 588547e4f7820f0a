/**
 * What the tables of a tenant's credentials with a sealed secret share (tsig_keys: store/tsig-keys.ts,
 * ovh_keys: store/ovh-keys.ts): the columns every key has, created, found by its name, listed, rotated
 * with a grace for the replaced secret (store/sealed.ts), deleted, "last used" noted. Every change of
 * a key sends NOTIFY dnsplane_tenant with the key's tenant in the same statement, as a change of the
 * tenant's credentials: every replica drops what it cached of that tenant's keys when it commits.
 */
import { AlreadyExistsError, NotFoundError } from './errors.js';
import { PG_FOREIGN_KEY_VIOLATION, PG_UNIQUE_VIOLATION, assertIdString, errorCode, noteUsedAt, type Queryable } from './internal.js';
import { TENANT_CHANNEL } from './notify.js';
import { PREVIOUS_SEALED_COLUMNS, SEALED_COLUMNS, rotateSealedSet, sealedParams, type SealedSecret, type SealedTable } from './sealed.js';
import { tenantColumns } from './tenants.js';

/** What every key shows in listings: never its secret. */
export interface KeyRowBase {
  id: string;
  tenantId: string;
  tenantName: string;
  createdAt: Date;
  rotatedAt: Date | null;
  lastUsedAt: Date | null;
  /** A rotation with a grace: the replaced secret is still accepted until then (migrations/0021); null: none. */
  previousValidUntil: Date | null;
}

/** One kind's table: `nameColumn` names a key in messages and lookups; `own`: its other columns (SQL of alias `k` → field). */
export interface KeyTable {
  table: SealedTable;
  what: string;
  nameColumn: string;
  own: Readonly<Record<string, string>>;
}

const COMMON: Readonly<Record<string, string>> = {
  'k.id::text': 'id',
  'k.tenant_id::text': 'tenantId',
  '(SELECT t2.name FROM tenants t2 WHERE t2.id = k.tenant_id)': 'tenantName',
  'k.created_at': 'createdAt',
  'k.rotated_at': 'rotatedAt',
  'k.last_used_at': 'lastUsedAt',
  'k.previous_valid_until': 'previousValidUntil',
};

/** The key's columns, each aliased "key.<field>" so that a join with tenants reads both. */
function keyColumns(t: KeyTable): string {
  return Object.entries({ ...COMMON, ...t.own })
    .map(([sql, field]) => `${sql} AS "key.${field}"`)
    .join(', ');
}

/** With the change's notification, delivered at commit. */
function changed(t: KeyTable): string {
  return `${keyColumns(t)}, pg_notify('${TENANT_CHANNEL}', (SELECT t3.name FROM tenants t3 WHERE t3.id = k.tenant_id))::text AS notified`;
}

/** The "key.<field>" columns of a row as a key row. */
export function toKeyRow<R>(r: object): R {
  return Object.fromEntries(Object.entries(r).flatMap(([c, v]) => (c.startsWith('key.') ? [[c.slice(4), v]] : []))) as R;
}

/** The SELECT list of a lookup for authentication: the key, its sealed secrets (current, replaced) and its tenant (alias `t`). */
export function authColumns(t: KeyTable): string {
  return `${keyColumns(t)}, ${SEALED_COLUMNS}, ${PREVIOUS_SEALED_COLUMNS.split(', ')
    .map((c) => `k.${c}`)
    .join(', ')}, ${tenantColumns('t')}`;
}

/** AlreadyExistsError when `name` (or another unique column) is taken; NotFoundError when the tenant is gone. */
export async function insertKey<R>(
  q: Queryable,
  t: KeyTable,
  name: string,
  tenantId: string,
  values: Readonly<Record<string, unknown>>,
  sealed: SealedSecret,
): Promise<R> {
  assertIdString('tenant id', tenantId);
  const columns = Object.keys(values);
  const params = [tenantId, ...Object.values(values), ...sealedParams(sealed)];
  try {
    const { rows } = await q.query(
      `INSERT INTO ${t.table} AS k (tenant_id, ${columns.join(', ')}, ${SEALED_COLUMNS})
       VALUES ($1::bigint, ${params
         .slice(1)
         .map((_, i) => `$${i + 2}`)
         .join(', ')})
       RETURNING ${changed(t)}`,
      params,
    );
    return toKeyRow<R>(rows[0] as object);
  } catch (err) {
    if (errorCode(err) === PG_UNIQUE_VIOLATION) throw new AlreadyExistsError(t.what, name);
    if (errorCode(err) === PG_FOREIGN_KEY_VIOLATION) throw new NotFoundError('tenant', tenantId);
    throw err;
  }
}

export async function getKey<R>(q: Queryable, t: KeyTable, name: string): Promise<R | undefined> {
  const { rows } = await q.query(`SELECT ${keyColumns(t)} FROM ${t.table} k WHERE k.${t.nameColumn} = $1`, [name]);
  return rows[0] ? toKeyRow<R>(rows[0] as object) : undefined;
}

/** By tenant name, then key name; `tenantId`: only that tenant's. Never reads a secret. */
export async function listKeys<R>(q: Queryable, t: KeyTable, opts: { tenantId?: string }): Promise<R[]> {
  if (opts.tenantId !== undefined) assertIdString('tenant id', opts.tenantId);
  const { rows } = await q.query(
    `SELECT ${keyColumns(t)} FROM ${t.table} k
      WHERE ($1::bigint IS NULL OR k.tenant_id = $1::bigint)
      ORDER BY "key.tenantName", k.${t.nameColumn}`,
    [opts.tenantId ?? null],
  );
  return rows.map((r) => toKeyRow<R>(r as object));
}

/**
 * A new sealed secret for the key; with `graceMs` > 0 the replaced secret stays accepted that long (a
 * grace from an earlier rotation ends). `also`: another column replaced the same way (its old value
 * kept in `previous_<column>` during the grace). NotFoundError when no such key.
 */
export async function rotateKey<R>(
  q: Queryable,
  t: KeyTable,
  name: string,
  sealed: SealedSecret,
  graceMs: number,
  also?: { column: string; value: unknown },
): Promise<R> {
  const alsoSet = also ? `, previous_${also.column} = CASE WHEN $6::bigint > 0 THEN ${also.column} END, ${also.column} = $7` : '';
  const { rows } = await q.query(
    `UPDATE ${t.table} AS k SET ${rotateSealedSet(2)}${alsoSet}, rotated_at = now()
      WHERE k.${t.nameColumn} = $1
      RETURNING ${changed(t)}`,
    [name, ...sealedParams(sealed), Math.round(graceMs), ...(also ? [also.value] : [])],
  );
  if (!rows[0]) throw new NotFoundError(t.what, name);
  return toKeyRow<R>(rows[0] as object);
}

/** Deletes the key; returns what it was. NotFoundError when no such key. */
export async function deleteKey<R>(q: Queryable, t: KeyTable, name: string): Promise<R> {
  const { rows } = await q.query(`DELETE FROM ${t.table} AS k WHERE k.${t.nameColumn} = $1 RETURNING ${changed(t)}`, [name]);
  if (!rows[0]) throw new NotFoundError(t.what, name);
  return toKeyRow<R>(rows[0] as object);
}

/** Records when keys were last used, several at once (core coalesces them). A time never moves back; a key deleted meanwhile is skipped. */
export async function noteKeysUsed(q: Queryable, t: KeyTable, uses: ReadonlyArray<{ id: string; at: Date }>): Promise<void> {
  await noteUsedAt(q, t.table, `${t.what} id`, uses);
}
