/**
 * Withdrawn targets (migrations 0019, 0022): a target its owner still owns and desires, kept off OVH
 * for one or more reasons (a target of an exclusive set: for health only). One row per (zone, name, type, target, reason); the rules (never
 * the last, owned targets only) live in core/withdrawals/withdrawals.ts.
 */
import { assertIdString, type Queryable } from './internal.js';

export type WithdrawalReason = 'silent' | 'health' | 'drained';

export interface WithdrawalRow {
  zone: string;
  dnsName: string;
  recordType: string;
  /** Canonical, as ownership rows hold it. */
  target: string;
  reason: WithdrawalReason;
  tenantId: string;
  tenantName: string;
  /** {detail: string, evidence?: unknown} */
  detail: { detail?: string; evidence?: unknown };
  /** What a restore POSTs back. */
  subDomain: string;
  fieldType: string;
  ovhTarget: string;
  ttl: number;
  withdrawnAt: Date;
  journalId: string | null;
}

interface Row {
  zone: string;
  dns_name: string;
  record_type: string;
  target: string;
  reason: WithdrawalReason;
  tenant_id: string;
  tenant_name: string;
  detail: { detail?: string; evidence?: unknown };
  sub_domain: string;
  field_type: string;
  ovh_target: string;
  ttl: number;
  withdrawn_at: Date;
  journal_id: string | null;
}

const SELECT = `
  SELECT w.zone, w.dns_name, w.record_type, w.target, w.reason, w.tenant_id::text AS tenant_id, t.name AS tenant_name,
         w.detail, w.sub_domain, w.field_type, w.ovh_target, w.ttl, w.withdrawn_at, w.journal_id::text AS journal_id
    FROM target_withdrawals w JOIN tenants t ON t.id = w.tenant_id`;
const ORDER = 'ORDER BY w.zone, w.dns_name, w.record_type, w.target, w.reason';

function toRow(r: Row): WithdrawalRow {
  return {
    zone: r.zone,
    dnsName: r.dns_name,
    recordType: r.record_type,
    target: r.target,
    reason: r.reason,
    tenantId: r.tenant_id,
    tenantName: r.tenant_name,
    detail: r.detail,
    subDomain: r.sub_domain,
    fieldType: r.field_type,
    ovhTarget: r.ovh_target,
    ttl: r.ttl,
    withdrawnAt: r.withdrawn_at,
    journalId: r.journal_id,
  };
}

/** Every withdrawal row of the zone. */
export async function listWithdrawals(q: Queryable, zone: string): Promise<WithdrawalRow[]> {
  const { rows } = await q.query<Row>(`${SELECT} WHERE w.zone = $1 ${ORDER}`, [zone]);
  return rows.map(toRow);
}

/** The withdrawal rows of the given record sets of the zone. */
export async function listWithdrawalsForSets(
  q: Queryable,
  zone: string,
  sets: ReadonlyArray<{ dnsName: string; recordType: string }>,
): Promise<WithdrawalRow[]> {
  if (sets.length === 0) return [];
  const { rows } = await q.query<Row>(
    `${SELECT} WHERE w.zone = $1 AND (w.dns_name, w.record_type) IN (SELECT * FROM unnest($2::text[], $3::text[])) ${ORDER}`,
    [zone, sets.map((s) => s.dnsName), sets.map((s) => s.recordType)],
  );
  return rows.map(toRow);
}

/** A tenant's withdrawal rows of one reason, every zone (the zones first: what a restore on its next call reads). */
export async function listWithdrawalsOfTenant(q: Queryable, tenantId: string, reason?: WithdrawalReason): Promise<WithdrawalRow[]> {
  assertIdString('tenant id', tenantId);
  const { rows } = await q.query<Row>(`${SELECT} WHERE w.tenant_id = $1::bigint AND ($2::text IS NULL OR w.reason = $2) ${ORDER}`, [tenantId, reason ?? null]);
  return rows.map(toRow);
}

export type NewWithdrawal = Omit<WithdrawalRow, 'tenantName' | 'withdrawnAt' | 'zone'> & { withdrawnAt?: Date };

/**
 * Inserts withdrawal rows (a row already there for the same reason is kept as it was), each hung on
 * its ownership row by migrations/0022's trigger (owner_target): the target's own in a shared set, the
 * set's ('') in an exclusive one.
 */
export async function insertWithdrawals(q: Queryable, zone: string, rows: readonly NewWithdrawal[]): Promise<void> {
  for (const w of rows) {
    assertIdString('tenant id', w.tenantId);
    await q.query(
      `INSERT INTO target_withdrawals (zone, dns_name, record_type, target, reason, tenant_id, detail, sub_domain, field_type, ovh_target, ttl, withdrawn_at, journal_id)
       VALUES ($1, $2, $3, $4, $5, $6::bigint, $7::jsonb, $8, $9, $10, $11, coalesce($12, now()), $13::bigint)
       ON CONFLICT (zone, dns_name, record_type, target, reason) DO NOTHING`,
      [
        zone,
        w.dnsName,
        w.recordType,
        w.target,
        w.reason,
        w.tenantId,
        JSON.stringify(w.detail),
        w.subDomain,
        w.fieldType,
        w.ovhTarget,
        w.ttl,
        w.withdrawnAt ?? null,
        w.journalId,
      ],
    );
  }
}

/** Deletes the rows of the given targets for one reason; returns how many. */
export async function deleteWithdrawals(
  q: Queryable,
  zone: string,
  reason: WithdrawalReason,
  targets: ReadonlyArray<{ dnsName: string; recordType: string; target: string }>,
): Promise<number> {
  if (targets.length === 0) return 0;
  const { rowCount } = await q.query(
    `DELETE FROM target_withdrawals
      WHERE zone = $1 AND reason = $2 AND (dns_name, record_type, target) IN (SELECT * FROM unnest($3::text[], $4::text[], $5::text[]))`,
    [zone, reason, targets.map((t) => t.dnsName), targets.map((t) => t.recordType), targets.map((t) => t.target)],
  );
  return rowCount ?? 0;
}

/** Deletes the rows of an exclusive set's withdrawn targets its owner no longer desires (not in `targets`); returns how many. */
export async function keepExclusiveWithdrawals(
  q: Queryable,
  zone: string,
  set: { dnsName: string; recordType: string },
  targets: readonly string[],
): Promise<number> {
  const { rowCount } = await q.query(
    `DELETE FROM target_withdrawals WHERE zone = $1 AND dns_name = $2 AND record_type = $3 AND owner_target = '' AND NOT (target = ANY($4::text[]))`,
    [zone, set.dnsName, set.recordType, targets],
  );
  return rowCount ?? 0;
}

/** The TTL of a tenant's withdrawn targets of one set as it now desires it (posted back on restore). */
export async function setWithdrawnTtl(
  q: Queryable,
  zone: string,
  set: { dnsName: string; recordType: string; tenantId: string },
  targets: readonly string[],
  ttl: number,
): Promise<void> {
  assertIdString('tenant id', set.tenantId);
  if (targets.length === 0) return;
  await q.query(
    `UPDATE target_withdrawals SET ttl = $6
      WHERE zone = $1 AND dns_name = $2 AND record_type = $3 AND tenant_id = $4::bigint AND target = ANY($5::text[]) AND ttl <> $6`,
    [zone, set.dnsName, set.recordType, set.tenantId, targets, ttl],
  );
}

/** The zones where the tenant has withdrawal rows of this reason. */
export async function zonesWithWithdrawals(q: Queryable, tenantId: string, reason: WithdrawalReason): Promise<string[]> {
  assertIdString('tenant id', tenantId);
  const { rows } = await q.query<{ zone: string }>(`SELECT DISTINCT zone FROM target_withdrawals WHERE tenant_id = $1::bigint AND reason = $2 ORDER BY zone`, [
    tenantId,
    reason,
  ]);
  return rows.map((r) => r.zone);
}
