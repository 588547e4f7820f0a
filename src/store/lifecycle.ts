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
