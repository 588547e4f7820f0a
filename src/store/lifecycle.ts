/**
 * A tenant's life (issue 46): its ownership handed to another tenant in one statement per table
 * (core/admin/handover.ts judges what moves; this module only moves the rows it is given).
 */
import { assertIdString, type Queryable } from './internal.js';

/** One ownership row by its key: target '' is an exclusive set's row, a target a shared set's. */
export interface OwnedKey {
  zone: string;
  dnsName: string;
  recordType: string;
  target: string;
}

/**
 * Moves the ownership rows named from tenant `from` to tenant `to` (a row no longer `from`'s is left
 * as it is), with the withdrawal rows that hang on them; created_at and the health check stay, the
 * set did not change. Returns the keys moved. Run under the zones' locks (store/lock.ts withZoneLocks).
 */
export async function moveOwnership(q: Queryable, from: string, to: string, keys: readonly OwnedKey[]): Promise<OwnedKey[]> {
  assertIdString('tenant id', from);
  assertIdString('tenant id', to);
  if (keys.length === 0) return [];
  const args = [from, to, keys.map((k) => k.zone), keys.map((k) => k.dnsName), keys.map((k) => k.recordType), keys.map((k) => k.target)];
  const { rows } = await q.query<{ zone: string; dns_name: string; record_type: string; target: string }>(
    `UPDATE ownership SET tenant_id = $2::bigint
      WHERE tenant_id = $1::bigint
        AND (zone, dns_name, record_type, target) IN (SELECT * FROM unnest($3::text[], $4::text[], $5::text[], $6::text[]))
      RETURNING zone, dns_name, record_type, target`,
    args,
  );
  await q.query(
    `UPDATE target_withdrawals SET tenant_id = $2::bigint
      WHERE tenant_id = $1::bigint
        AND (zone, dns_name, record_type, owner_target) IN (SELECT * FROM unnest($3::text[], $4::text[], $5::text[], $6::text[]))`,
    args,
  );
  return rows
    .map((r) => ({ zone: r.zone, dnsName: r.dns_name, recordType: r.record_type, target: r.target }))
    .sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
}

function keyOf(k: OwnedKey): string {
  return `${k.zone} ${k.dnsName} ${k.recordType} ${k.target}`;
}

/** Marks a tenant retired (now); its disabling is the caller's (store/tenants.ts setDisabled). */
export async function markTenantRetired(q: Queryable, tenantId: string): Promise<void> {
  assertIdString('tenant id', tenantId);
  await q.query('UPDATE tenants SET retired_at = now() WHERE id = $1::bigint', [tenantId]);
}

export interface OrphanRow extends OwnedKey {
  tenant: string;
  /** disabled: its owner is disabled; silent: its owner made no call for longer than the bound. */
  reason: 'disabled' | 'silent';
  /** Seconds since its owner's latest call (never seen: since the row was made). */
  ageSeconds: number;
}

/**
 * Ownership rows nobody will write again: owned by a disabled tenant, or by one silent (no
 * authenticated call; never seen: since it was created) for longer than `silentForMs`; of one zone or all.
 */
export async function listOrphanedOwnership(q: Queryable, silentForMs: number, zone?: string): Promise<OrphanRow[]> {
  const { rows } = await q.query<{
    zone: string;
    dns_name: string;
    record_type: string;
    target: string;
    tenant: string;
    reason: 'disabled' | 'silent';
    age: number;
  }>(
    `SELECT o.zone, o.dns_name, o.record_type, o.target, t.name AS tenant,
            CASE WHEN t.disabled THEN 'disabled' ELSE 'silent' END AS reason,
            extract(epoch FROM now() - coalesce(t.last_seen_at, o.created_at))::float8 AS age
       FROM ownership o JOIN tenants t ON t.id = o.tenant_id
      WHERE (t.disabled OR coalesce(t.last_seen_at, t.created_at) < now() - $1::bigint * interval '1 millisecond')
        AND ($2::text IS NULL OR o.zone = $2)
      ORDER BY o.zone, o.dns_name, o.record_type, o.target`,
    [Math.round(silentForMs), zone ?? null],
  );
  return rows.map((r) => ({
    zone: r.zone,
    dnsName: r.dns_name,
    recordType: r.record_type,
    target: r.target,
    tenant: r.tenant,
    reason: r.reason,
    ageSeconds: Math.max(0, Math.floor(r.age)),
  }));
}

/** How many record sets each orphan reason holds (the metric dnsplane_orphaned_record_sets). */
export async function countOrphanedSets(q: Queryable, silentForMs: number): Promise<Array<{ reason: string; sets: number }>> {
  const { rows } = await q.query<{ reason: string; sets: number }>(
    `SELECT reason, count(*)::int AS sets FROM (
       SELECT DISTINCT o.zone, o.dns_name, o.record_type, CASE WHEN t.disabled THEN 'disabled' ELSE 'silent' END AS reason
         FROM ownership o JOIN tenants t ON t.id = o.tenant_id
        WHERE t.disabled OR coalesce(t.last_seen_at, t.created_at) < now() - $1::bigint * interval '1 millisecond') s
      GROUP BY reason ORDER BY reason`,
    [Math.round(silentForMs)],
  );
  return rows;
}
