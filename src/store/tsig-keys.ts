/**
 * The tsig_keys table (migrations/0009): a tenant's TSIG keys, their secrets sealed; what every key
 * table shares (its notification of every change included) is store/sealed-keys.ts.
 */
import type { Queryable } from './internal.js';
import { toPreviousSealed, toSealed, type PreviousSealedRow, type SealedRow, type SealedSecret } from './sealed.js';
import { authColumns, deleteKey, getKey, insertKey, listKeys, noteKeysUsed, rotateKey, toKeyRow, type KeyRowBase, type KeyTable } from './sealed-keys.js';
import { toTenant, type Tenant, type TenantRow } from './tenants.js';

/** A TSIG key as listings show it: never its secret. */
export interface TsigKeyRow extends KeyRowBase {
  /** Lowercase, no trailing dot. */
  name: string;
  /** hmac-md5, hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384 or hmac-sha512. */
  algorithm: string;
  acmeOnly: boolean;
}

/** A key with its sealed secret and its tenant as they are now, for authentication. */
export interface TsigKeyForAuth extends TsigKeyRow {
  sealed: SealedSecret;
  /** The secret a rotation with a grace replaced, accepted until `previousValidUntil` (the caller judges the time). */
  previousSealed?: SealedSecret;
  tenant: Tenant;
}

const TSIG: KeyTable = {
  table: 'tsig_keys',
  what: 'TSIG key',
  nameColumn: 'name',
  own: { 'k.name': 'name', 'k.algorithm': 'algorithm', 'k.acme_only': 'acmeOnly' },
};

export interface NewTsigKey {
  tenantId: string;
  name: string;
  algorithm: string;
  acmeOnly: boolean;
  sealed: SealedSecret;
}

/** AlreadyExistsError when the name is taken (by any tenant); NotFoundError when the tenant is gone. */
export async function createTsigKey(q: Queryable, k: NewTsigKey): Promise<TsigKeyRow> {
  return insertKey(q, TSIG, k.name, k.tenantId, { name: k.name, algorithm: k.algorithm, acme_only: k.acmeOnly }, k.sealed);
}

/** The key named so, with its sealed secret and its tenant (disabled or not: the caller decides). */
export async function findTsigKeyForAuth(q: Queryable, name: string): Promise<TsigKeyForAuth | undefined> {
  const { rows } = await q.query<SealedRow & PreviousSealedRow & TenantRow>(
    `SELECT ${authColumns(TSIG)} FROM tsig_keys k JOIN tenants t ON t.id = k.tenant_id WHERE k.name = $1`,
    [name],
  );
  const r = rows[0];
  if (!r) return undefined;
  const previous = toPreviousSealed(r);
  return { ...toKeyRow<TsigKeyRow>(r), sealed: toSealed(r), ...(previous ? { previousSealed: previous.sealed } : {}), tenant: toTenant(r) };
}

export async function getTsigKey(q: Queryable, name: string): Promise<TsigKeyRow | undefined> {
  return getKey(q, TSIG, name);
}

/** By tenant name, then key name; `tenantId`: only that tenant's. Never reads a secret. */
export async function listTsigKeys(q: Queryable, opts: { tenantId?: string } = {}): Promise<TsigKeyRow[]> {
  return listKeys(q, TSIG, opts);
}

/** A new sealed secret (same name, algorithm and scope); `graceMs` > 0: the replaced one stays accepted that long. NotFoundError when no such key. */
export async function rotateTsigKey(q: Queryable, name: string, sealed: SealedSecret, graceMs = 0): Promise<TsigKeyRow> {
  return rotateKey(q, TSIG, name, sealed, graceMs);
}

/** Deletes the key; returns what it was. NotFoundError when no such key. */
export async function deleteTsigKey(q: Queryable, name: string): Promise<TsigKeyRow> {
  return deleteKey(q, TSIG, name);
}

/** Records when keys were last used, several at once (core/credentials/tsig.ts coalesces them). */
export async function noteTsigKeysUsed(q: Queryable, uses: ReadonlyArray<{ id: string; at: Date }>): Promise<void> {
  await noteKeysUsed(q, TSIG, uses);
}
