/**
 * Ownership rows. A record set (zone, dnsName, recordType) is owned either exclusively — one row,
 * target '' and shared false — or as a shared set — one row per target, shared true, each owned by
 * the tenant that published that target. The schema enforces both forms and forbids mixing them.
 * The rules (who may take what) live in core; this module only reads and writes rows.
 */
import { ConflictError, NotFoundError } from './errors.js';
import { assertIdString, PG_EXCLUSION_VIOLATION, PG_FOREIGN_KEY_VIOLATION, errorCode, pgConstraint, queryInPages, type Queryable } from './internal.js';
import { messageOf } from '../lib/error-message.js';
import { intern } from './intern.js';

export interface OwnershipRow {
  zone: string;
  dnsName: string;
  recordType: string;
  /** '' for the whole set; a target (canonical form) of a shared set otherwise. */
  target: string;
  tenantId: string;
  tenantName: string;
  shared: boolean;
  /**
   * When the row was made (ms since the epoch): a number, not a Date — a zone's base keeps 50,000
   * rows, and a Date is one more object each.
   */
  createdMs: number;
  /** The owner's health check of the set (dns/health-check.ts; migration 0020), when it has one. */
  healthCheck?: string;
}

interface Row {
  zone: string;
  dns_name: string;
  record_type: string;
  target: string;
  tenant_id: string;
  tenant_name: string;
  shared: boolean;
  /** created_at in whole milliseconds since the epoch (what a Date holds): a number is read ~10× faster than a timestamp's text (50,000 rows). */
  created_ms: number;
  health_check: string | null;
}

/** created_at as Row.created_ms, of the table aliased `t`. */
const createdMs = (t: string) => `(extract(epoch from date_trunc('milliseconds', ${t}.created_at)) * 1000)::float8 AS created_ms`;

const SELECT = `
  SELECT o.zone, o.dns_name, o.record_type, o.target, o.tenant_id::text AS tenant_id, t.name AS tenant_name,
         o.shared, ${createdMs('o')}, o.health_check
    FROM ownership o JOIN tenants t ON t.id = o.tenant_id`;
const ORDER = 'ORDER BY o.zone, o.dns_name, o.record_type, o.target';

function toRow(r: Row): OwnershipRow {
  const row: OwnershipRow = {
    zone: intern(r.zone),
    dnsName: r.dns_name,
    recordType: intern(r.record_type),
    target: r.target,
    tenantId: intern(r.tenant_id),
    tenantName: intern(r.tenant_name),
    shared: r.shared,
    createdMs: r.created_ms,
  };
  if (r.health_check) row.healthCheck = intern(r.health_check);
  return row;
}

/** Every ownership row of the zone, with the owner's name. */
export async function listOwnership(q: Queryable, zone: string): Promise<OwnershipRow[]> {
  const { rows } = await q.query<Row>(`${SELECT} WHERE o.zone = $1 ${ORDER}`, [zone]);
  return rows.map(toRow);
}

/** listOwnership a page at a time, each page awaited before the next is read (as store.listRecordsInPages). */
export async function listOwnershipInPages(q: Queryable, zone: string, page: (rows: OwnershipRow[]) => void | Promise<void>): Promise<void> {
  await queryInPages<Row>(q, `${SELECT} WHERE o.zone = $1 ${ORDER}`, [zone], (rows) => page(rows.map(toRow)));
}

/** The ownership rows of the given record sets (dnsName, recordType) of the zone, with the owner's name. */
export async function listOwnershipForSets(q: Queryable, zone: string, sets: ReadonlyArray<{ dnsName: string; recordType: string }>): Promise<OwnershipRow[]> {
  if (sets.length === 0) return [];
  const { rows } = await q.query<Row>(
    `${SELECT} WHERE o.zone = $1 AND (o.dns_name, o.record_type) IN (SELECT * FROM unnest($2::text[], $3::text[])) ${ORDER}`,
    [zone, sets.map((s) => s.dnsName), sets.map((s) => s.recordType)],
  );
  return rows.map(toRow);
}

/** How many record sets (name, type) the tenant owns in the zone, exclusive or a slice of a shared one (core/plan/guard.ts ownedSets). */
export async function countOwnedSets(q: Queryable, zone: string, tenantId: string): Promise<number> {
  assertIdString('tenant id', tenantId);
  const { rows } = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT DISTINCT dns_name, record_type FROM ownership WHERE zone = $1 AND tenant_id = $2::bigint) AS sets`,
    [zone, tenantId],
  );
  return rows[0]?.n ?? 0;
}

export async function listOwnershipForTenant(q: Queryable, tenantId: string, zone?: string): Promise<OwnershipRow[]> {
  assertIdString('tenant id', tenantId);
  const { rows } = await q.query<Row>(`${SELECT} WHERE o.tenant_id = $1::bigint AND ($2::text IS NULL OR o.zone = $2) ${ORDER}`, [tenantId, zone ?? null]);
  return rows.map(toRow);
}

export interface SetOwnerInput {
  zone: string;
  dnsName: string;
  recordType: string;
  tenantId: string;
  /** Default '': the whole set. A non-empty target makes a row of a shared set. */
  target?: string;
  /** Default: target !== ''. Must agree with target. */
  shared?: boolean;
}

/**
 * Upserts one ownership row (a new owner resets created_at). Throws NotFoundError when the zone or
 * tenant does not exist, ConflictError when the set is already owned in the other form
 * (exclusive vs shared).
 */
export async function setOwner(q: Queryable, o: SetOwnerInput): Promise<OwnershipRow> {
  assertIdString('tenant id', o.tenantId);
  const target = o.target ?? '';
  const shared = o.shared ?? target !== '';
  if (shared !== (target !== '')) {
    throw new TypeError(
      shared
        ? 'ownership: a shared set is owned per target (target must not be empty)'
        : 'ownership: an exclusive owner owns the whole set (target must be empty)',
    );
  }
  try {
    const { rows } = await q.query<Row>(
      `WITH up AS (
         INSERT INTO ownership (zone, dns_name, record_type, target, tenant_id, shared)
         VALUES ($1, $2, $3, $4, $5::bigint, $6)
         ON CONFLICT (zone, dns_name, record_type, target) DO UPDATE
            SET tenant_id = EXCLUDED.tenant_id,
                shared = EXCLUDED.shared,
                health_check = CASE WHEN ownership.tenant_id = EXCLUDED.tenant_id THEN ownership.health_check END,
                created_at = CASE WHEN ownership.tenant_id = EXCLUDED.tenant_id THEN ownership.created_at ELSE now() END
         RETURNING *
       )
       SELECT up.zone, up.dns_name, up.record_type, up.target, up.tenant_id::text AS tenant_id, t.name AS tenant_name,
              up.shared, ${createdMs('up')}, up.health_check
         FROM up JOIN tenants t ON t.id = up.tenant_id`,
      [o.zone, o.dnsName, o.recordType, target, o.tenantId, shared],
    );
    return toRow(rows[0] as Row);
  } catch (err) {
    if (errorCode(err) === PG_FOREIGN_KEY_VIOLATION) {
      throw pgConstraint(err) === 'ownership_tenant_id_fkey' ? new NotFoundError('tenant', o.tenantId) : new NotFoundError('zone', o.zone);
    }
    if (errorCode(err) === PG_EXCLUSION_VIOLATION) {
      throw new ConflictError(messageOf(err));
    }
    throw err;
  }
}

/** Rows inserted per statement by adoptOwners (pg serializes a statement's parameters in one go). */
const ADOPT_PER_STATEMENT = 5_000;

/**
 * Makes `tenantId` the exclusive owner of each of these record sets, which the caller judged unowned
 * in its transaction (under the zone lock: store/lock.ts): batches of one INSERT each, not a statement
 * per set (a TXT registry import adopts a zone's 50,000 sets at once).
 */
export async function adoptOwners(q: Queryable, zone: string, sets: ReadonlyArray<{ dnsName: string; recordType: string; tenantId: string }>): Promise<number> {
  // A few tenants own the sets of one import: each id checked once (a check per set of 50,000 is a block of ~10 ms).
  for (const id of new Set(sets.map((s) => s.tenantId))) assertIdString('tenant id', id);
  let inserted = 0;
  for (let i = 0; i < sets.length; i += ADOPT_PER_STATEMENT) {
    const batch = sets.slice(i, i + ADOPT_PER_STATEMENT);
    const { rowCount } = await q.query(
      `INSERT INTO ownership (zone, dns_name, record_type, target, tenant_id, shared)
       SELECT $1, d, t, '', o, false FROM unnest($2::text[], $3::text[], $4::bigint[]) AS u(d, t, o)`,
      [zone, batch.map((s) => s.dnsName), batch.map((s) => s.recordType), batch.map((s) => s.tenantId)],
    );
    inserted += rowCount ?? 0;
  }
  return inserted;
}

export interface RemoveOwnerInput {
  zone: string;
  dnsName: string;
  recordType: string;
  /** Given (even ''): only that row. Omitted: every row of the set (the exclusive row or all targets). */
  target?: string;
  /** Given: only rows owned by this tenant. */
  tenantId?: string;
}

/** Deletes ownership rows; returns how many. */
export async function removeOwner(q: Queryable, o: RemoveOwnerInput): Promise<number> {
  if (o.tenantId !== undefined) assertIdString('tenant id', o.tenantId);
  const { rowCount } = await q.query(
    `DELETE FROM ownership
      WHERE zone = $1 AND dns_name = $2 AND record_type = $3
        AND ($4::text IS NULL OR target = $4)
        AND ($5::bigint IS NULL OR tenant_id = $5::bigint)`,
    [o.zone, o.dnsName, o.recordType, o.target ?? null, o.tenantId ?? null],
  );
  return rowCount ?? 0;
}
