import { AlreadyExistsError, NotFoundError } from './errors.js';
import { TENANT_CHANNEL } from './notify.js';
import { assertIdString, PG_UNIQUE_VIOLATION, errorCode, pgConstraint, type Queryable } from './internal.js';

/** A tenant as the store returns it. The token hash never leaves the store. */
export interface Tenant {
  /** bigint id, as a decimal string. */
  id: string;
  name: string;
  scopes: string[];
  zones: string[];
  suffixes: string[];
  disabled: boolean;
  createdAt: Date;
  /** When the current token hash was set (creation or last rotation). */
  tokenRotatedAt: Date;
  /** The tenant's own change threshold (0-100); null: the server's default. */
  maxChangePercent: number | null;
  /** Until when the token the last rotation replaced is still accepted (its grace); absent: none. */
  previousTokenValidUntil?: Date;
  /** Silent this long, its targets of shared sets are withdrawn (core/withdrawals/liveness.ts); absent: never. */
  withdrawAfterMs?: number;
  /** Its latest authenticated call as written (coarsely); absent: never seen. */
  lastSeenAt?: Date;
  /** The client address of that call (behind a trusted proxy, the client's); absent: not known. */
  lastSeenFrom?: string;
  /**
   * Its write quota (store/write-quota.ts); absent: none, and its applies cost no query for it. Cached
   * with the tenant: a change sends NOTIFY dnsplane_tenant like any other.
   */
  writeQuota?: { perDay: number; burst: number };
}

export interface NewTenant {
  name: string;
  /** SHA-256 of the bearer token: exactly 32 bytes. */
  tokenSha256: Buffer;
  scopes: string[];
  zones: string[];
  suffixes: string[];
}

export interface TenantRow {
  id: string;
  name: string;
  scopes: string[];
  zones: string[];
  suffixes: string[];
  disabled: boolean;
  created_at: Date;
  token_rotated_at: Date;
  max_change_percent: number | null;
  previous_token_valid_until: Date | null;
  withdraw_after_ms: string | null;
  last_seen_at: Date | null;
  last_seen_from: string | null;
  writes_per_day: number | null;
  write_burst: number | null;
}

/** A tenant's columns as toTenant reads them; `alias`: the tenants table's alias in a join (store/sealed-keys.ts). */
export function tenantColumns(alias?: string): string {
  const t = alias ? `${alias}.` : '';
  return `${t}id::text AS id, ${t}name, ${t}scopes, ${t}zones, ${t}suffixes, ${t}disabled, ${t}created_at, ${t}token_rotated_at, ${t}max_change_percent, ${t}previous_token_valid_until, (extract(epoch FROM ${t}withdraw_after) * 1000)::bigint::text AS withdraw_after_ms, ${t}last_seen_at, ${t}last_seen_from, ${t}writes_per_day, ${t}write_burst`;
}

const COLUMNS = tenantColumns();

/** A row of tenantColumns() as a Tenant. */
export function toTenant(r: TenantRow): Tenant {
  return {
    id: r.id,
    name: r.name,
    scopes: r.scopes,
    zones: r.zones,
    suffixes: r.suffixes,
    disabled: r.disabled,
    createdAt: r.created_at,
    tokenRotatedAt: r.token_rotated_at,
    maxChangePercent: r.max_change_percent,
    ...(r.previous_token_valid_until ? { previousTokenValidUntil: r.previous_token_valid_until } : {}),
    ...(r.withdraw_after_ms !== null && r.withdraw_after_ms !== undefined ? { withdrawAfterMs: Number(r.withdraw_after_ms) } : {}),
    ...(r.last_seen_at ? { lastSeenAt: r.last_seen_at } : {}),
    ...(r.last_seen_from ? { lastSeenFrom: r.last_seen_from } : {}),
    ...(r.writes_per_day !== null && r.write_burst !== null ? { writeQuota: { perDay: r.writes_per_day, burst: r.write_burst } } : {}),
  };
}

function assertHash(hash: Buffer): void {
  if (!Buffer.isBuffer(hash) || hash.length !== 32) {
    throw new TypeError('tokenSha256: expected the 32-byte SHA-256 of the token');
  }
}

function uniqueViolation(err: unknown, name: string): unknown {
  if (errorCode(err) !== PG_UNIQUE_VIOLATION) return err;
  if (pgConstraint(err) === 'tenants_token_sha256_key') return new AlreadyExistsError('tenant token hash', name);
  return new AlreadyExistsError('tenant', name);
}

/**
 * Throws AlreadyExistsError when the name (or, improbably, the token hash) is taken. NOTIFY
 * dnsplane_tenant as for a change: every replica's token cache then learns the new token.
 */
export async function createTenant(q: Queryable, t: NewTenant): Promise<Tenant> {
  assertHash(t.tokenSha256);
  try {
    const { rows } = await q.query<TenantRow>(
      `INSERT INTO tenants (name, token_sha256, scopes, zones, suffixes)
       VALUES ($1, $2, $3::text[], $4::text[], $5::text[])
       RETURNING ${COLUMNS}, pg_notify('${TENANT_CHANNEL}', name)::text AS notified`,
      [t.name, t.tokenSha256, t.scopes, t.zones, t.suffixes],
    );
    return toTenant(rows[0] as TenantRow);
  } catch (err) {
    throw uniqueViolation(err, t.name);
  }
}

/** The tenant whose token hashes to `hash`, disabled or not (the caller decides). */
export async function findTenantByTokenHash(q: Queryable, hash: Buffer): Promise<Tenant | undefined> {
  const { rows } = await q.query<TenantRow>(`SELECT ${COLUMNS} FROM tenants WHERE token_sha256 = $1`, [hash]);
  return rows[0] ? toTenant(rows[0]) : undefined;
}

/**
 * The tenant a token hash authenticates: its current token, or the one its last rotation replaced while
 * that one's grace runs (`validUntil` then says until when). Disabled or not: the caller decides.
 */
export async function findTenantForToken(q: Queryable, hash: Buffer): Promise<{ tenant: Tenant; validUntil?: Date } | undefined> {
  const { rows } = await q.query<TenantRow & { via_previous: boolean }>(
    `SELECT ${COLUMNS}, token_sha256 <> $1 AS via_previous FROM tenants
      WHERE token_sha256 = $1 OR (previous_token_sha256 = $1 AND previous_token_valid_until > now())`,
    [hash],
  );
  const r = rows[0];
  if (!r) return undefined;
  const tenant = toTenant(r);
  return r.via_previous && tenant.previousTokenValidUntil ? { tenant, validUntil: tenant.previousTokenValidUntil } : { tenant };
}

export async function getTenantByName(q: Queryable, name: string): Promise<Tenant | undefined> {
  const { rows } = await q.query<TenantRow>(`SELECT ${COLUMNS} FROM tenants WHERE name = $1`, [name]);
  return rows[0] ? toTenant(rows[0]) : undefined;
}

export async function getTenantById(q: Queryable, id: string): Promise<Tenant | undefined> {
  assertIdString('tenant id', id);
  const { rows } = await q.query<TenantRow>(`SELECT ${COLUMNS} FROM tenants WHERE id = $1::bigint`, [id]);
  return rows[0] ? toTenant(rows[0]) : undefined;
}

/** A tenant's valid token hashes: its current one, and the one its last rotation replaced while that one's grace runs. */
export interface TenantTokens {
  tenant: Tenant;
  current: Buffer;
  previous?: { hash: Buffer; validUntil: Date };
}

/**
 * Every enabled tenant's valid token hashes (or those of the tenant named), the most recently seen
 * first, at most `limit` tenants: what the token cache is filled with (core/tenants/token-warmth.ts).
 * The hashes go no further than that cache's keys.
 */
export async function listTenantTokens(q: Queryable, opts: { name?: string; limit: number }): Promise<TenantTokens[]> {
  const { rows } = await q.query<TenantRow & { token_sha256: Buffer; previous_sha256: Buffer | null }>(
    `SELECT ${COLUMNS}, token_sha256,
            CASE WHEN previous_token_valid_until > now() THEN previous_token_sha256 END AS previous_sha256
       FROM tenants
      WHERE NOT disabled AND ($1::text IS NULL OR name = $1)
      ORDER BY last_seen_at DESC NULLS LAST, id
      LIMIT $2`,
    [opts.name ?? null, opts.limit],
  );
  return rows.map((r) => {
    const tenant = toTenant(r);
    return {
      tenant,
      current: r.token_sha256,
      ...(r.previous_sha256 && tenant.previousTokenValidUntil ? { previous: { hash: r.previous_sha256, validUntil: tenant.previousTokenValidUntil } } : {}),
    };
  });
}

/** All tenants, by name. */
export async function listTenants(q: Queryable): Promise<Tenant[]> {
  const { rows } = await q.query<TenantRow>(`SELECT ${COLUMNS} FROM tenants ORDER BY name`);
  return rows.map(toTenant);
}

/**
 * What a change of a tenant's credentials returns: its columns, and NOTIFY dnsplane_tenant with its
 * name in the same statement, delivered at commit, so every replica drops what it cached of the
 * tenant's token (core/tenants/tenants.ts TokenCache).
 */
const CHANGED = `${COLUMNS}, pg_notify('${TENANT_CHANNEL}', name)::text AS notified`;

/**
 * Rotates the token: stores the new hash and the rotation time; with `graceMs` > 0 the replaced token
 * stays valid that long (a grace running from an earlier rotation ends). NotFoundError when no such tenant.
 */
export async function setTokenHash(q: Queryable, name: string, hash: Buffer, graceMs = 0): Promise<Tenant> {
  assertHash(hash);
  try {
    const { rows } = await q.query<TenantRow>(
      `UPDATE tenants SET token_sha256 = $2, token_rotated_at = now(),
              previous_token_sha256 = CASE WHEN $3::bigint > 0 THEN token_sha256 END,
              previous_token_valid_until = CASE WHEN $3::bigint > 0 THEN now() + $3::bigint * interval '1 millisecond' END
        WHERE name = $1 RETURNING ${CHANGED}`,
      [name, hash, Math.round(graceMs)],
    );
    if (!rows[0]) throw new NotFoundError('tenant', name);
    return toTenant(rows[0]);
  } catch (err) {
    throw uniqueViolation(err, name);
  }
}

/** NotFoundError when no such tenant. */
export async function setDisabled(q: Queryable, name: string, disabled: boolean): Promise<Tenant> {
  const { rows } = await q.query<TenantRow>(`UPDATE tenants SET disabled = $2 WHERE name = $1 RETURNING ${CHANGED}`, [name, disabled]);
  if (!rows[0]) throw new NotFoundError('tenant', name);
  return toTenant(rows[0]);
}

/** Sets (or, with null, clears) the tenant's own change threshold. NotFoundError when no such tenant. */
export async function setMaxChangePercent(q: Queryable, name: string, percent: number | null): Promise<Tenant> {
  const { rows } = await q.query<TenantRow>(`UPDATE tenants SET max_change_percent = $2 WHERE name = $1 RETURNING ${COLUMNS}`, [name, percent]);
  if (!rows[0]) throw new NotFoundError('tenant', name);
  return toTenant(rows[0]);
}

/** The tenant's own change threshold, read fresh (under a zone lock at apply time); null: the default. */
export async function getTenantMaxChangePercent(q: Queryable, id: string): Promise<number | null> {
  assertIdString('tenant id', id);
  const { rows } = await q.query<{ max_change_percent: number | null }>('SELECT max_change_percent FROM tenants WHERE id = $1::bigint', [id]);
  return rows[0]?.max_change_percent ?? null;
}

/**
 * Sets (or, with null, clears) how long the tenant may be silent before its targets of shared sets are
 * withdrawn (core/withdrawals/liveness.ts). A tenant never seen counts as seen now, so that turning it on withdraws
 * nothing at once. NotFoundError when no such tenant.
 */
export async function setWithdrawAfter(q: Queryable, name: string, ms: number | null): Promise<Tenant> {
  const { rows } = await q.query<TenantRow>(
    `UPDATE tenants SET withdraw_after = CASE WHEN $2::bigint IS NULL THEN NULL ELSE $2::bigint * interval '1 millisecond' END,
            last_seen_at = coalesce(last_seen_at, now())
      WHERE name = $1 RETURNING ${COLUMNS}`,
    [name, ms === null ? null : Math.round(ms)],
  );
  if (!rows[0]) throw new NotFoundError('tenant', name);
  return toTenant(rows[0]);
}

/**
 * Records the tenants' latest calls (never moving one back); answers the ids of those among them that
 * have targets withdrawn for their silence (store/withdrawals.ts): they are back, restore them.
 */
export async function noteTenantsSeen(q: Queryable, uses: ReadonlyArray<{ id: string; at: Date; from?: string }>): Promise<string[]> {
  if (uses.length === 0) return [];
  for (const u of uses) assertIdString('tenant id', u.id);
  const { rows } = await q.query<{ id: string }>(
    `WITH seen AS (
       UPDATE tenants t SET last_seen_at = greatest(coalesce(t.last_seen_at, u.at), u.at),
                            last_seen_from = CASE WHEN t.last_seen_at IS NULL OR u.at >= t.last_seen_at THEN coalesce(u.from_address, t.last_seen_from) ELSE t.last_seen_from END
         FROM unnest($1::bigint[], $2::timestamptz[], $3::text[]) AS u(id, at, from_address)
        WHERE t.id = u.id
        RETURNING t.id
     )
     SELECT seen.id::text AS id FROM seen
      WHERE EXISTS (SELECT 1 FROM target_withdrawals w WHERE w.tenant_id = seen.id AND w.reason = 'silent')`,
    [uses.map((u) => u.id), uses.map((u) => u.at), uses.map((u) => u.from ?? null)],
  );
  return rows.map((r) => r.id);
}

/** A tenant silent past its withdraw_after (plus `slackMs`: how late a sign of life may be written) that has published targets of shared sets. */
export interface SilentTenant {
  id: string;
  name: string;
  lastSeenAt: Date;
}

export async function listSilentTenants(q: Queryable, slackMs: number): Promise<SilentTenant[]> {
  const { rows } = await q.query<{ id: string; name: string; last_seen_at: Date }>(
    `SELECT t.id::text AS id, t.name, t.last_seen_at FROM tenants t
      WHERE t.withdraw_after IS NOT NULL AND NOT t.disabled AND t.last_seen_at IS NOT NULL
        AND t.last_seen_at < now() - t.withdraw_after - $1::bigint * interval '1 millisecond'
        AND EXISTS (
          SELECT 1 FROM ownership o
           WHERE o.tenant_id = t.id AND o.shared
             AND NOT EXISTS (SELECT 1 FROM target_withdrawals w
                              WHERE w.zone = o.zone AND w.dns_name = o.dns_name AND w.record_type = o.record_type AND w.target = o.target AND w.reason = 'silent'))
      ORDER BY t.name`,
    [Math.round(slackMs)],
  );
  return rows.map((r) => ({ id: r.id, name: r.name, lastSeenAt: r.last_seen_at }));
}

/** Seconds since each tenant's latest call, as written (dnsplane_tenant_last_seen_seconds); tenants never seen are left out. */
export async function listTenantsLastSeen(q: Queryable): Promise<Array<{ tenant: string; seconds: number }>> {
  const { rows } = await q.query<{ name: string; seconds: number }>(
    `SELECT name, extract(epoch FROM now() - last_seen_at)::float8 AS seconds FROM tenants WHERE last_seen_at IS NOT NULL ORDER BY name`,
  );
  return rows.map((r) => ({ tenant: r.name, seconds: Math.max(0, r.seconds) }));
}

/**
 * Tenants with targets withdrawn for their silence that are no longer silent (a call was written since,
 * or withdraw_after was turned off): what the silent-tenant check restores when no call did it.
 */
export async function listTenantsBack(q: Queryable, slackMs: number): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(
    `SELECT t.id::text AS id FROM tenants t
      WHERE EXISTS (SELECT 1 FROM target_withdrawals w WHERE w.tenant_id = t.id AND w.reason = 'silent')
        AND (t.withdraw_after IS NULL OR t.disabled IS FALSE AND t.last_seen_at >= now() - t.withdraw_after - $1::bigint * interval '1 millisecond')
      ORDER BY t.name`,
    [Math.round(slackMs)],
  );
  return rows.map((r) => r.id);
}
