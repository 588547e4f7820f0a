/**
 * The ovh_keys table (migrations/0011): a tenant's OVH-style credentials — application key in clear,
 * consumer key as its sha-256, application secret sealed. Every change of a key (created, rotated,
 * deleted) sends NOTIFY dnsplane_tenant with the key's tenant in the same statement, as a change of the
 * tenant's credentials: every replica drops what it cached of that tenant's keys (core/credentials/ovh.ts)
 * when the change commits.
 */
import { AlreadyExistsError, NotFoundError } from './errors.js';
import { PG_FOREIGN_KEY_VIOLATION, PG_UNIQUE_VIOLATION, assertIdString, errorCode, noteUsedAt, type Queryable } from './internal.js';
import { TENANT_CHANNEL } from './notify.js';
import { PREVIOUS_SEALED_COLUMNS, SEALED_COLUMNS, rotateSealedSet, sealedParams, toPreviousSealed, toSealed, type PreviousSealedRow, type SealedRow, type SealedSecret } from './sealed.js';
import { tenantColumns, toTenant, type Tenant, type TenantRow } from './tenants.js';

/** An OVH key as listings show it: never its secret, never its consumer key. */
export interface OvhKeyRow {
  id: string;
  tenantId: string;
  tenantName: string;
  applicationKey: string;
  createdAt: Date;
  rotatedAt: Date | null;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  /** A rotation with a grace: the replaced consumer key and secret are still accepted until then (migrations/0021); null: none. */
  previousValidUntil: Date | null;
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

interface Row {
  ovh_key_id: string;
  ovh_key_tenant_id: string;
  ovh_key_tenant_name: string;
  ovh_key_application_key: string;
  ovh_key_created_at: Date;
  ovh_key_rotated_at: Date | null;
  ovh_key_last_used_at: Date | null;
  ovh_key_expires_at: Date | null;
  ovh_key_previous_valid_until: Date | null;
}

/** The key's columns (prefixed, so that a join with tenants reads both); `k`: the table's alias. */
const KEY_COLUMNS = `k.id::text AS ovh_key_id, k.tenant_id::text AS ovh_key_tenant_id,
  (SELECT t2.name FROM tenants t2 WHERE t2.id = k.tenant_id) AS ovh_key_tenant_name,
  k.application_key AS ovh_key_application_key, k.created_at AS ovh_key_created_at,
  k.rotated_at AS ovh_key_rotated_at, k.last_used_at AS ovh_key_last_used_at, k.expires_at AS ovh_key_expires_at,
  k.previous_valid_until AS ovh_key_previous_valid_until`;

/** With the change's notification, delivered at commit. */
const CHANGED = `${KEY_COLUMNS}, pg_notify('${TENANT_CHANNEL}', (SELECT t3.name FROM tenants t3 WHERE t3.id = k.tenant_id))::text AS notified`;

function toRow(r: Row): OvhKeyRow {
  return {
    id: r.ovh_key_id,
    tenantId: r.ovh_key_tenant_id,
    tenantName: r.ovh_key_tenant_name,
    applicationKey: r.ovh_key_application_key,
    createdAt: r.ovh_key_created_at,
    rotatedAt: r.ovh_key_rotated_at,
    lastUsedAt: r.ovh_key_last_used_at,
    expiresAt: r.ovh_key_expires_at,
    previousValidUntil: r.ovh_key_previous_valid_until,
  };
}

export interface NewOvhKey {
  tenantId: string;
  applicationKey: string;
  consumerKeySha256: Buffer;
  sealed: SealedSecret;
  expiresAt: Date | null;
}

/** AlreadyExistsError when the application or consumer key is taken; NotFoundError when the tenant is gone. */
export async function createOvhKey(q: Queryable, k: NewOvhKey): Promise<OvhKeyRow> {
  assertIdString('tenant id', k.tenantId);
  try {
    const { rows } = await q.query<Row>(
      `INSERT INTO ovh_keys AS k (tenant_id, application_key, consumer_key_sha256, expires_at, ${SEALED_COLUMNS})
       VALUES ($1::bigint, $2, $3, $4, $5, $6, $7, $8)
       RETURNING ${CHANGED}`,
      [k.tenantId, k.applicationKey, k.consumerKeySha256, k.expiresAt, ...sealedParams(k.sealed)],
    );
    return toRow(rows[0] as Row);
  } catch (err) {
    if (errorCode(err) === PG_UNIQUE_VIOLATION) throw new AlreadyExistsError('OVH key', k.applicationKey);
    if (errorCode(err) === PG_FOREIGN_KEY_VIOLATION) throw new NotFoundError('tenant', k.tenantId);
    throw err;
  }
}

/** The key whose consumer key has this sha-256, with its sealed secret and its tenant (disabled or not: the caller decides). */
export async function findOvhKeyForAuth(q: Queryable, consumerKeySha256: Buffer): Promise<OvhKeyForAuth | undefined> {
  const { rows } = await q.query<Row & SealedRow & PreviousSealedRow & TenantRow & { replaced: boolean }>(
    `SELECT ${KEY_COLUMNS}, ${SEALED_COLUMNS}, ${PREVIOUS_SEALED_COLUMNS.split(', ').map((c) => `k.${c}`).join(', ')}, ${tenantColumns('t')},
            k.consumer_key_sha256 <> $1 AS replaced
       FROM ovh_keys k JOIN tenants t ON t.id = k.tenant_id
      WHERE k.consumer_key_sha256 = $1 OR k.previous_consumer_key_sha256 = $1
      ORDER BY replaced LIMIT 1`,
    [consumerKeySha256],
  );
  const r = rows[0];
  if (!r) return undefined;
  const previous = r.replaced ? toPreviousSealed(r) : undefined;
  if (r.replaced && !previous) return undefined;
  return { ...toRow(r), sealed: previous?.sealed ?? toSealed(r), replaced: r.replaced, tenant: toTenant(r) };
}

export async function getOvhKey(q: Queryable, applicationKey: string): Promise<OvhKeyRow | undefined> {
  const { rows } = await q.query<Row>(`SELECT ${KEY_COLUMNS} FROM ovh_keys k WHERE k.application_key = $1`, [applicationKey]);
  return rows[0] ? toRow(rows[0]) : undefined;
}

/** By tenant name, then application key; `tenantId`: only that tenant's. Never reads a secret. */
export async function listOvhKeys(q: Queryable, opts: { tenantId?: string } = {}): Promise<OvhKeyRow[]> {
  if (opts.tenantId !== undefined) assertIdString('tenant id', opts.tenantId);
  const { rows } = await q.query<Row>(
    `SELECT ${KEY_COLUMNS} FROM ovh_keys k
      WHERE ($1::bigint IS NULL OR k.tenant_id = $1::bigint)
      ORDER BY ovh_key_tenant_name, k.application_key`,
    [opts.tenantId ?? null],
  );
  return rows.map(toRow);
}

/**
 * A new sealed secret and consumer key for the key (same application key); with `graceMs` > 0 the
 * replaced consumer key and secret stay accepted that long (a grace from an earlier rotation ends).
 * NotFoundError when no such key.
 */
export async function rotateOvhKey(q: Queryable, applicationKey: string, consumerKeySha256: Buffer, sealed: SealedSecret, graceMs = 0): Promise<OvhKeyRow> {
  const { rows } = await q.query<Row>(
    `UPDATE ovh_keys AS k SET previous_consumer_key_sha256 = CASE WHEN $7::bigint > 0 THEN consumer_key_sha256 END,
            ${rotateSealedSet(3)}, consumer_key_sha256 = $2, rotated_at = now()
      WHERE k.application_key = $1
      RETURNING ${CHANGED}`,
    [applicationKey, consumerKeySha256, ...sealedParams(sealed), Math.round(graceMs)],
  );
  if (!rows[0]) throw new NotFoundError('OVH key', applicationKey);
  return toRow(rows[0]);
}

/** Deletes the key; returns what it was. NotFoundError when no such key. */
export async function deleteOvhKey(q: Queryable, applicationKey: string): Promise<OvhKeyRow> {
  const { rows } = await q.query<Row>(`DELETE FROM ovh_keys AS k WHERE k.application_key = $1 RETURNING ${CHANGED}`, [applicationKey]);
  if (!rows[0]) throw new NotFoundError('OVH key', applicationKey);
  return toRow(rows[0]);
}

/** Records when keys were last used, several at once (core coalesces them). A time never moves back. */
export async function noteOvhKeysUsed(q: Queryable, uses: ReadonlyArray<{ id: string; at: Date }>): Promise<void> {
  await noteUsedAt(q, 'ovh_keys', 'OVH key id', uses);
}
