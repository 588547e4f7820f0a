/**
 * The ovh_keys table (migrations/0011): a tenant's OVH-style credentials — application key in clear,
 * consumer key as its sha-256, application secret sealed; what every key table shares (its
 * notification of every change included) is store/sealed-keys.ts.
 */
import type { Queryable } from './internal.js';
import { toPreviousSealed, toSealed, type PreviousSealedRow, type SealedRow, type SealedSecret } from './sealed.js';
import { authColumns, deleteKey, getKey, insertKey, listKeys, noteKeysUsed, rotateKey, toKeyRow, type KeyRowBase, type KeyTable } from './sealed-keys.js';
import { toTenant, type Tenant, type TenantRow } from './tenants.js';

/** An OVH key as listings show it: never its secret, never its consumer key. */
export interface OvhKeyRow extends KeyRowBase {
  applicationKey: string;
  expiresAt: Date | null;
}

/**
 * A key with its sealed secret and its tenant as they are now, for authentication. `replaced`: the
 * consumer key asked for is the one a rotation with a grace replaced, `sealed` is the replaced secret,
 * accepted until `previousValidUntil` (the caller judges the time).
 */
export interface OvhKeyForAuth extends OvhKeyRow {
  sealed: SealedSecret;
  replaced: boolean;
  tenant: Tenant;
}

const OVH: KeyTable = {
  table: 'ovh_keys',
  what: 'OVH key',
  nameColumn: 'application_key',
  own: { 'k.application_key': 'applicationKey', 'k.expires_at': 'expiresAt' },
};

export interface NewOvhKey {
  tenantId: string;
  applicationKey: string;
  consumerKeySha256: Buffer;
  sealed: SealedSecret;
  expiresAt: Date | null;
}

/** AlreadyExistsError when the application or consumer key is taken; NotFoundError when the tenant is gone. */
export async function createOvhKey(q: Queryable, k: NewOvhKey): Promise<OvhKeyRow> {
  return insertKey(
    q,
    OVH,
    k.applicationKey,
    k.tenantId,
    { application_key: k.applicationKey, consumer_key_sha256: k.consumerKeySha256, expires_at: k.expiresAt },
    k.sealed,
  );
}

/** The key whose consumer key (or replaced one) has this sha-256, with its sealed secret and its tenant (disabled or not: the caller decides). */
export async function findOvhKeyForAuth(q: Queryable, consumerKeySha256: Buffer): Promise<OvhKeyForAuth | undefined> {
  const { rows } = await q.query<SealedRow & PreviousSealedRow & TenantRow & { replaced: boolean }>(
    `SELECT ${authColumns(OVH)}, k.consumer_key_sha256 <> $1 AS replaced
       FROM ovh_keys k JOIN tenants t ON t.id = k.tenant_id
      WHERE k.consumer_key_sha256 = $1 OR k.previous_consumer_key_sha256 = $1
      ORDER BY replaced LIMIT 1`,
    [consumerKeySha256],
  );
  const r = rows[0];
  if (!r) return undefined;
  const previous = r.replaced ? toPreviousSealed(r) : undefined;
  if (r.replaced && !previous) return undefined;
  return { ...toKeyRow<OvhKeyRow>(r), sealed: previous?.sealed ?? toSealed(r), replaced: r.replaced, tenant: toTenant(r) };
}

export async function getOvhKey(q: Queryable, applicationKey: string): Promise<OvhKeyRow | undefined> {
  return getKey(q, OVH, applicationKey);
}

/** By tenant name, then application key; `tenantId`: only that tenant's. Never reads a secret. */
export async function listOvhKeys(q: Queryable, opts: { tenantId?: string } = {}): Promise<OvhKeyRow[]> {
  return listKeys(q, OVH, opts);
}

/** A new sealed secret and consumer key (same application key); `graceMs` > 0: the replaced ones stay accepted that long. NotFoundError when no such key. */
export async function rotateOvhKey(q: Queryable, applicationKey: string, consumerKeySha256: Buffer, sealed: SealedSecret, graceMs = 0): Promise<OvhKeyRow> {
  return rotateKey(q, OVH, applicationKey, sealed, graceMs, { column: 'consumer_key_sha256', value: consumerKeySha256 });
}

/** Deletes the key; returns what it was. NotFoundError when no such key. */
export async function deleteOvhKey(q: Queryable, applicationKey: string): Promise<OvhKeyRow> {
  return deleteKey(q, OVH, applicationKey);
}

/** Records when keys were last used, several at once (core coalesces them). A time never moves back. */
export async function noteOvhKeysUsed(q: Queryable, uses: ReadonlyArray<{ id: string; at: Date }>): Promise<void> {
  await noteKeysUsed(q, OVH, uses);
}
