/**
 * Per-tenant write quotas (migration 0026): a token bucket per tenant in Postgres, so every replica
 * spends from one count. tenant_write_take() refills and takes under the row's lock in one call; the
 * rules (what counts, what a refusal says) are core/tenants/write-quota.ts's.
 */
import { NotFoundError } from './errors.js';
import { assertIdString, type Queryable } from './internal.js';
import { tenantColumns, toTenant, type Tenant, type TenantRow } from './tenants.js';
import { TENANT_CHANNEL } from './notify.js';

export interface WriteTake {
  /** False: the tenant has no quota (nothing was counted). */
  quota: boolean;
  ok: boolean;
  /** Tokens left after the take (or, refused, before it). */
  tokens: number;
  perDay: number;
  burst: number;
}

/** Takes `n` writes from the tenant's bucket if it holds them (store docs: the migration's function). */
export async function takeTenantWrites(q: Queryable, tenantId: string, n: number): Promise<WriteTake> {
  assertIdString('tenant id', tenantId);
  const { rows } = await q.query<{ o_quota: boolean; o_ok: boolean; o_tokens: number | null; o_per_day: number | null; o_burst: number | null }>(
    'SELECT * FROM tenant_write_take($1::bigint, $2::int)',
    [tenantId, n],
  );
  const r = rows[0];
  return { quota: r?.o_quota ?? false, ok: r?.o_ok ?? true, tokens: r?.o_tokens ?? 0, perDay: r?.o_per_day ?? 0, burst: r?.o_burst ?? 0 };
}

/** Sets (both numbers) or turns off (both null) the tenant's write quota; off drops its bucket. NotFoundError when no such tenant. */
export async function setTenantWriteQuota(q: Queryable, name: string, perDay: number | null, burst: number | null): Promise<Tenant> {
  const { rows } = await q.query<TenantRow>(
    `UPDATE tenants SET writes_per_day = $2, write_burst = $3 WHERE name = $1
     RETURNING ${tenantColumns()}, pg_notify('${TENANT_CHANNEL}', name)::text AS notified`,
    [name, perDay, burst],
  );
  const r = rows[0];
  if (!r) throw new NotFoundError('tenant', name);
  if (perDay === null) await q.query('DELETE FROM tenant_write_quota WHERE tenant_id = $1::bigint', [r.id]);
  return toTenant(r);
}

export interface WriteQuotaRow {
  tenant: string;
  perDay: number;
  burst: number;
  /** Tokens left now (refilled to this moment, capped at the burst). */
  tokens: number;
  spent: number;
  refused: number;
}

/** Every quota and its bucket as of now (the metrics' source, `tenant list`). */
export async function listWriteQuotas(q: Queryable): Promise<WriteQuotaRow[]> {
  const { rows } = await q.query<{ name: string; writes_per_day: number; write_burst: number; tokens: number; spent: string; refused: string }>(
    `SELECT t.name, t.writes_per_day, t.write_burst,
            coalesce(LEAST(t.write_burst::float8, w.tokens + extract(epoch FROM clock_timestamp() - w.refilled_at) * t.writes_per_day / 86400.0), t.write_burst)::float8 AS tokens,
            coalesce(w.spent_total, 0)::text AS spent, coalesce(w.refused_total, 0)::text AS refused
       FROM tenants t LEFT JOIN tenant_write_quota w ON w.tenant_id = t.id
      WHERE t.writes_per_day IS NOT NULL ORDER BY t.name`,
  );
  return rows.map((r) => ({
    tenant: r.name,
    perDay: r.writes_per_day,
    burst: r.write_burst,
    tokens: r.tokens,
    spent: Number(r.spent),
    refused: Number(r.refused),
  }));
}
