/**
 * The tables of a tenant's keys with a sealed secret, one module for both kinds: tsig_keys
 * (migrations/0009) and ovh_keys (0011: application key in clear, consumer key as its sha-256,
 * application secret sealed). A kind is a KeyTable (its table, the column naming a key, its own
 * columns, the column a key is found by to authenticate) and one KeyStore over it: created, found,
 * listed, rotated with a grace for the replaced secret (store/sealed.ts), deleted, "last used" noted.
 * Every change of a key sends NOTIFY dnsplane_tenant with the key's tenant in the same statement, as a
 * change of the tenant's credentials: every replica drops what it cached of that tenant's keys when it commits.
 */
import { AlreadyExistsError, NotFoundError } from './errors.js';
import { PG_FOREIGN_KEY_VIOLATION, PG_UNIQUE_VIOLATION, assertIdString, errorCode, noteUsedAt, type Queryable } from './internal.js';
import { TENANT_CHANNEL } from './notify.js';
import {
  PREVIOUS_SEALED_COLUMNS,
  SEALED_COLUMNS,
  rotateSealedSet,
  sealedParams,
  toPreviousSealed,
  toSealed,
  type PreviousSealedRow,
  type SealedRow,
  type SealedSecret,
  type SealedTable,
} from './sealed.js';
import { tenantColumns, toTenant, type Tenant, type TenantRow } from './tenants.js';

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

/** A TSIG key as listings show it. */
export interface TsigKeyRow extends KeyRowBase {
  /** Lowercase, no trailing dot. */
  name: string;
  /** hmac-md5, hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384 or hmac-sha512. */
  algorithm: string;
  acmeOnly: boolean;
}

/** An OVH key as listings show it: never its consumer key either. */
export interface OvhKeyRow extends KeyRowBase {
  applicationKey: string;
  expiresAt: Date | null;
}

/**
 * A key with its sealed secret and its tenant as they are now (disabled or not: the caller decides),
 * for authentication. `replaced`: it was found by the value a rotation with a grace replaced (an OVH
 * consumer key), and `sealed` is the replaced secret; else `previousSealed` is that one, if any. Both
 * are accepted until `previousValidUntil`, which the caller judges.
 */
export type KeyForAuth<R> = R & { sealed: SealedSecret; previousSealed?: SealedSecret; replaced: boolean; tenant: Tenant };

/** One kind's table: `nameColumn` names a key in messages and look-ups; `own`: its other columns (SQL of alias `k` → field). */
interface KeyTable {
  table: Exclude<SealedTable, 'ovh_accounts'>;
  what: string;
  nameColumn: string;
  own: Readonly<Record<string, string>>;
  /** Found by this column to authenticate and replaced by each rotation, its old value kept in previous_<column> during the grace; absent: by the name. */
  authColumn?: string;
}

export interface KeyStore<R extends KeyRowBase> {
  /** AlreadyExistsError when the name (or another unique column) is taken; NotFoundError when the tenant is gone. */
  create(q: Queryable, tenantId: string, values: Readonly<Record<string, unknown>>, sealed: SealedSecret): Promise<R>;
  get(q: Queryable, name: string): Promise<R | undefined>;
  /** By tenant name, then key name; `tenantId`: only that tenant's. Never reads a secret. */
  list(q: Queryable, opts?: { tenantId?: string }): Promise<R[]>;
  /** The key whose name (or auth column, current or replaced) is `value`. */
  findForAuth(q: Queryable, value: string | Buffer): Promise<KeyForAuth<R> | undefined>;
  /**
   * A new sealed secret (and `authValue`, the auth column's new value); with `graceMs` > 0 the replaced
   * ones stay accepted that long (a grace from an earlier rotation ends). NotFoundError when no such key.
   */
  rotate(q: Queryable, name: string, sealed: SealedSecret, graceMs: number, authValue?: unknown): Promise<R>;
  /** Deletes the key; returns what it was. NotFoundError when no such key. */
  remove(q: Queryable, name: string): Promise<R>;
  /** Records when keys were last used, several at once (core coalesces them). A time never moves back; a key deleted meanwhile is skipped. */
  noteUsed(q: Queryable, uses: ReadonlyArray<{ id: string; at: Date }>): Promise<void>;
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

/** The "key.<field>" columns of a row as a key row. */
function toKeyRow<R>(r: object): R {
  return Object.fromEntries(Object.entries(r).flatMap(([c, v]) => (c.startsWith('key.') ? [[c.slice(4), v]] : []))) as R;
}

function keyStore<R extends KeyRowBase>(t: KeyTable): KeyStore<R> {
  // The key's columns, each aliased "key.<field>" so that a join with tenants reads both.
  const columns = Object.entries({ ...COMMON, ...t.own })
    .map(([sql, field]) => `${sql} AS "key.${field}"`)
    .join(', ');
  // With the change's notification, delivered at commit.
  const changed = `${columns}, pg_notify('${TENANT_CHANNEL}', (SELECT t3.name FROM tenants t3 WHERE t3.id = k.tenant_id))::text AS notified`;
  const one = (rows: unknown[], name: string): R => {
    if (!rows[0]) throw new NotFoundError(t.what, name);
    return toKeyRow<R>(rows[0] as object);
  };
  const by = `k.${t.authColumn ?? t.nameColumn}`;
  const replaced = t.authColumn ? `${by} <> $1` : 'false';
  return {
    async create(q, tenantId, values, sealed) {
      assertIdString('tenant id', tenantId);
      const params = [tenantId, ...Object.values(values), ...sealedParams(sealed)];
      try {
        const { rows } = await q.query(
          `INSERT INTO ${t.table} AS k (tenant_id, ${Object.keys(values).join(', ')}, ${SEALED_COLUMNS})
           VALUES ($1::bigint, ${params
             .slice(1)
             .map((_, i) => `$${i + 2}`)
             .join(', ')})
           RETURNING ${changed}`,
          params,
        );
        return toKeyRow<R>(rows[0] as object);
      } catch (err) {
        if (errorCode(err) === PG_UNIQUE_VIOLATION) throw new AlreadyExistsError(t.what, String(values[t.nameColumn]));
        if (errorCode(err) === PG_FOREIGN_KEY_VIOLATION) throw new NotFoundError('tenant', tenantId);
        throw err;
      }
    },
    async get(q, name) {
      const { rows } = await q.query(`SELECT ${columns} FROM ${t.table} k WHERE k.${t.nameColumn} = $1`, [name]);
      return rows[0] ? toKeyRow<R>(rows[0] as object) : undefined;
    },
    async list(q, opts = {}) {
      if (opts.tenantId !== undefined) assertIdString('tenant id', opts.tenantId);
      const { rows } = await q.query(
        `SELECT ${columns} FROM ${t.table} k
          WHERE ($1::bigint IS NULL OR k.tenant_id = $1::bigint)
          ORDER BY "key.tenantName", k.${t.nameColumn}`,
        [opts.tenantId ?? null],
      );
      return rows.map((r) => toKeyRow<R>(r as object));
    },
    async findForAuth(q, value) {
      const previousColumns = PREVIOUS_SEALED_COLUMNS.split(', ').map((c) => `k.${c}`);
      const { rows } = await q.query<SealedRow & PreviousSealedRow & TenantRow & { replaced: boolean }>(
        `SELECT ${columns}, ${SEALED_COLUMNS}, ${previousColumns.join(', ')}, ${tenantColumns('t')}, ${replaced} AS replaced
           FROM ${t.table} k JOIN tenants t ON t.id = k.tenant_id
          WHERE ${by} = $1${t.authColumn ? ` OR k.previous_${t.authColumn} = $1 ORDER BY replaced LIMIT 1` : ''}`,
        [value],
      );
      const r = rows[0];
      const previous = r && toPreviousSealed(r);
      if (!r || (r.replaced && !previous)) return undefined;
      const sealed = r.replaced ? { sealed: previous!.sealed } : { sealed: toSealed(r), ...(previous ? { previousSealed: previous.sealed } : {}) };
      return { ...toKeyRow<R>(r), ...sealed, replaced: r.replaced, tenant: toTenant(r) };
    },
    async rotate(q, name, sealed, graceMs, authValue) {
      const c = t.authColumn;
      const alsoSet = c ? `, previous_${c} = CASE WHEN $6::bigint > 0 THEN ${c} END, ${c} = $7` : '';
      const { rows } = await q.query(
        `UPDATE ${t.table} AS k SET ${rotateSealedSet(2)}${alsoSet}, rotated_at = now()
          WHERE k.${t.nameColumn} = $1
          RETURNING ${changed}`,
        [name, ...sealedParams(sealed), Math.round(graceMs), ...(c ? [authValue] : [])],
      );
      return one(rows, name);
    },
    async remove(q, name) {
      return one((await q.query(`DELETE FROM ${t.table} AS k WHERE k.${t.nameColumn} = $1 RETURNING ${changed}`, [name])).rows, name);
    },
    async noteUsed(q, uses) {
      await noteUsedAt(q, t.table, `${t.what} id`, uses);
    },
  };
}

export const TSIG_KEYS = keyStore<TsigKeyRow>({
  table: 'tsig_keys',
  what: 'TSIG key',
  nameColumn: 'name',
  own: { 'k.name': 'name', 'k.algorithm': 'algorithm', 'k.acme_only': 'acmeOnly' },
});

export const OVH_KEYS = keyStore<OvhKeyRow>({
  table: 'ovh_keys',
  what: 'OVH key',
  nameColumn: 'application_key',
  own: { 'k.application_key': 'applicationKey', 'k.expires_at': 'expiresAt' },
  authColumn: 'consumer_key_sha256',
});

/** The look-ups by name that tools and tests call. */
export const { get: getTsigKey, list: listTsigKeys, findForAuth: findTsigKeyForAuth } = TSIG_KEYS;
export const { get: getOvhKey, list: listOvhKeys, findForAuth: findOvhKeyForAuth } = OVH_KEYS;
