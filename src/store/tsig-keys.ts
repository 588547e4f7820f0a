/**
 * The tsig_keys table (migrations/0009): a tenant's TSIG keys, their secrets sealed. Every change of a
 * key (created, rotated, deleted) sends NOTIFY dnsplane_tenant with the key's tenant in the same
 * statement, as a change of the tenant's credentials: every replica drops what it cached of that
 * tenant's keys (core/credentials/tsig.ts) when the change commits.
 */
import { AlreadyExistsError, NotFoundError } from './errors.js';
import { PG_FOREIGN_KEY_VIOLATION, PG_UNIQUE_VIOLATION, assertIdString, errorCode, noteUsedAt, type Queryable } from './internal.js';
import { TENANT_CHANNEL } from './notify.js';
import { PREVIOUS_SEALED_COLUMNS, SEALED_COLUMNS, rotateSealedSet, sealedParams, toPreviousSealed, toSealed, type PreviousSealedRow, type SealedRow, type SealedSecret } from './sealed.js';
import { tenantColumns, toTenant, type Tenant, type TenantRow } from './tenants.js';

/** A TSIG key as listings show it: never its secret. */
export interface TsigKeyRow {
  id: string;
  tenantId: string;
  tenantName: string;
  /** Lowercase, no trailing dot. */
  name: string;
  /** hmac-md5, hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384 or hmac-sha512. */
  algorithm: string;
  acmeOnly: boolean;
  createdAt: Date;
  rotatedAt: Date | null;
  lastUsedAt: Date | null;
  /** A rotation with a grace: the replaced secret is still accepted until then (migrations/0021); null: none. */
  previousValidUntil: Date | null;
}

/** A key with its sealed secret and its tenant as they are now, for authentication. */
export interface TsigKeyForAuth extends TsigKeyRow {
  sealed: SealedSecret;
  /** The secret a rotation with a grace replaced, accepted until `previousValidUntil` (the caller judges the time). */
  previousSealed?: SealedSecret;
  tenant: Tenant;
}

interface Row {
  key_row_id: string;
  key_tenant_id: string;
  key_tenant_name: string;
  key_name: string;
  key_algorithm: string;
  key_acme_only: boolean;
  key_created_at: Date;
  key_rotated_at: Date | null;
  key_last_used_at: Date | null;
  key_previous_valid_until: Date | null;
}

/** The key's columns (prefixed, so that a join with tenants reads both); `k`: the table's alias. */
const KEY_COLUMNS = `k.id::text AS key_row_id, k.tenant_id::text AS key_tenant_id,
  (SELECT t2.name FROM tenants t2 WHERE t2.id = k.tenant_id) AS key_tenant_name,
  k.name AS key_name, k.algorithm AS key_algorithm, k.acme_only AS key_acme_only,
  k.created_at AS key_created_at, k.rotated_at AS key_rotated_at, k.last_used_at AS key_last_used_at,
  k.previous_valid_until AS key_previous_valid_until`;

/** With the change's notification, delivered at commit. */
const CHANGED = `${KEY_COLUMNS}, pg_notify('${TENANT_CHANNEL}', (SELECT t3.name FROM tenants t3 WHERE t3.id = k.tenant_id))::text AS notified`;

function toRow(r: Row): TsigKeyRow {
  return {
    id: r.key_row_id,
    tenantId: r.key_tenant_id,
    tenantName: r.key_tenant_name,
    name: r.key_name,
    algorithm: r.key_algorithm,
    acmeOnly: r.key_acme_only,
    createdAt: r.key_created_at,
    rotatedAt: r.key_rotated_at,
    lastUsedAt: r.key_last_used_at,
    previousValidUntil: r.key_previous_valid_until,
  };
}

export interface NewTsigKey {
  tenantId: string;
  name: string;
  algorithm: string;
  acmeOnly: boolean;
  sealed: SealedSecret;
}

/** AlreadyExistsError when the name is taken (by any tenant); NotFoundError when the tenant is gone. */
export async function createTsigKey(q: Queryable, k: NewTsigKey): Promise<TsigKeyRow> {
  assertIdString('tenant id', k.tenantId);
  try {
    const { rows } = await q.query<Row>(
      `INSERT INTO tsig_keys AS k (tenant_id, name, algorithm, acme_only, ${SEALED_COLUMNS})
       VALUES ($1::bigint, $2, $3, $4, $5, $6, $7, $8)
       RETURNING ${CHANGED}`,
      [k.tenantId, k.name, k.algorithm, k.acmeOnly, ...sealedParams(k.sealed)],
    );
    return toRow(rows[0] as Row);
  } catch (err) {
    if (errorCode(err) === PG_UNIQUE_VIOLATION) throw new AlreadyExistsError('TSIG key', k.name);
    if (errorCode(err) === PG_FOREIGN_KEY_VIOLATION) throw new NotFoundError('tenant', k.tenantId);
    throw err;
  }
}

/** The key named so, with its sealed secret and its tenant (disabled or not: the caller decides). */
export async function findTsigKeyForAuth(q: Queryable, name: string): Promise<TsigKeyForAuth | undefined> {
  const { rows } = await q.query<Row & SealedRow & PreviousSealedRow & TenantRow>(
    `SELECT ${KEY_COLUMNS}, ${SEALED_COLUMNS}, ${PREVIOUS_SEALED_COLUMNS.split(', ').map((c) => `k.${c}`).join(', ')}, ${tenantColumns('t')}
       FROM tsig_keys k JOIN tenants t ON t.id = k.tenant_id
      WHERE k.name = $1`,
    [name],
  );
  const r = rows[0];
  if (!r) return undefined;
  const previous = toPreviousSealed(r);
  return { ...toRow(r), sealed: toSealed(r), ...(previous ? { previousSealed: previous.sealed } : {}), tenant: toTenant(r) };
}

export async function getTsigKey(q: Queryable, name: string): Promise<TsigKeyRow | undefined> {
  const { rows } = await q.query<Row>(`SELECT ${KEY_COLUMNS} FROM tsig_keys k WHERE k.name = $1`, [name]);
  return rows[0] ? toRow(rows[0]) : undefined;
}

/** By tenant name, then key name; `tenantId`: only that tenant's. Never reads a secret. */
export async function listTsigKeys(q: Queryable, opts: { tenantId?: string } = {}): Promise<TsigKeyRow[]> {
  if (opts.tenantId !== undefined) assertIdString('tenant id', opts.tenantId);
  const { rows } = await q.query<Row>(
    `SELECT ${KEY_COLUMNS} FROM tsig_keys k
      WHERE ($1::bigint IS NULL OR k.tenant_id = $1::bigint)
      ORDER BY key_tenant_name, k.name`,
    [opts.tenantId ?? null],
  );
  return rows.map(toRow);
}

/**
 * A new sealed secret for the key (same name, algorithm and scope); with `graceMs` > 0 the replaced
 * secret stays accepted that long (a grace from an earlier rotation ends). NotFoundError when no such key.
 */
export async function rotateTsigKey(q: Queryable, name: string, sealed: SealedSecret, graceMs = 0): Promise<TsigKeyRow> {
  const { rows } = await q.query<Row>(
    `UPDATE tsig_keys AS k SET ${rotateSealedSet(2)}, rotated_at = now()
      WHERE k.name = $1
      RETURNING ${CHANGED}`,
    [name, ...sealedParams(sealed), Math.round(graceMs)],
  );
  if (!rows[0]) throw new NotFoundError('TSIG key', name);
  return toRow(rows[0]);
}

/** Deletes the key; returns what it was. NotFoundError when no such key. */
export async function deleteTsigKey(q: Queryable, name: string): Promise<TsigKeyRow> {
  const { rows } = await q.query<Row>(`DELETE FROM tsig_keys AS k WHERE k.name = $1 RETURNING ${CHANGED}`, [name]);
  if (!rows[0]) throw new NotFoundError('TSIG key', name);
  return toRow(rows[0]);
}

/**
 * Records when keys were last used, several at once (core/credentials/tsig.ts coalesces them). A time never
 * moves back; a key deleted meanwhile is skipped.
 */
export async function noteTsigKeysUsed(q: Queryable, uses: ReadonlyArray<{ id: string; at: Date }>): Promise<void> {
  await noteUsedAt(q, 'tsig_keys', 'TSIG key id', uses);
}
