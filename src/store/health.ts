/**
 * Health checks (migration 0020): the owners' checks on their ownership rows, the checker's leases
 * per record set, and each checked target's state. The rules live in core/health/; this module only
 * reads and writes rows. Every write of the checker is fenced in its statement: it acts only while the
 * writer still holds the set's lease.
 */
import { assertIdString, type JsonValue, type Queryable } from './internal.js';

export interface HealthCheckWrite {
  dnsName: string;
  recordType: string;
  /** The check's URL; null: none. */
  check: string | null;
}

/**
 * Sets the tenant's check of each record set on its ownership rows there (every row of its own: the
 * exclusive row, or its targets of a shared set); rows of other tenants are untouched. Returns the
 * record sets whose check changed.
 */
export async function setHealthChecks(
  q: Queryable,
  zone: string,
  tenantId: string,
  checks: readonly HealthCheckWrite[],
): Promise<Array<{ dnsName: string; recordType: string }>> {
  assertIdString('tenant id', tenantId);
  if (checks.length === 0) return [];
  const { rows } = await q.query<{ dns_name: string; record_type: string }>(
    `UPDATE ownership o SET health_check = w.hc
       FROM unnest($3::text[], $4::text[], $5::text[]) AS w (dns_name, record_type, hc)
      WHERE o.zone = $1 AND o.tenant_id = $2::bigint AND o.dns_name = w.dns_name AND o.record_type = w.record_type
        AND o.health_check IS DISTINCT FROM w.hc
  RETURNING o.dns_name, o.record_type`,
    [zone, tenantId, checks.map((c) => c.dnsName), checks.map((c) => c.recordType), checks.map((c) => c.check)],
  );
  const seen = new Map<string, { dnsName: string; recordType: string }>();
  for (const r of rows) seen.set(`${r.dns_name} ${r.record_type}`, { dnsName: r.dns_name, recordType: r.record_type });
  return [...seen.values()];
}

export interface CheckedSet {
  zone: string;
  dnsName: string;
  recordType: string;
}

/**
 * Takes up to `limit` record sets with a check for `holder`, for `leaseMs`: those it holds already and
 * those nobody holds or whose holder's lease lapsed. Sets that lost their last check lose their lease.
 */
export async function claimCheckedSets(q: Queryable, holder: string, leaseMs: number, limit: number): Promise<CheckedSet[]> {
  await q.query(
    `INSERT INTO health_leases (zone, dns_name, record_type, holder, lease_until)
     SELECT DISTINCT zone, dns_name, record_type, '', '-infinity'::timestamptz FROM ownership WHERE health_check IS NOT NULL
     ON CONFLICT DO NOTHING`,
  );
  await q.query(
    `DELETE FROM health_leases l
      WHERE NOT EXISTS (SELECT 1 FROM ownership o WHERE o.zone = l.zone AND o.dns_name = l.dns_name AND o.record_type = l.record_type AND o.health_check IS NOT NULL)`,
  );
  await q.query(
    `DELETE FROM target_health h
      WHERE NOT EXISTS (SELECT 1 FROM ownership o WHERE o.zone = h.zone AND o.dns_name = h.dns_name AND o.record_type = h.record_type AND o.health_check IS NOT NULL)`,
  );
  const { rows } = await q.query<{ zone: string; dns_name: string; record_type: string }>(
    `UPDATE health_leases SET holder = $1, lease_until = clock_timestamp() + $2 * interval '1 millisecond'
      WHERE (zone, dns_name, record_type) IN (
              SELECT zone, dns_name, record_type FROM health_leases
               WHERE holder = $1 OR lease_until < clock_timestamp()
               ORDER BY zone, dns_name, record_type LIMIT $3 FOR UPDATE SKIP LOCKED)
  RETURNING zone, dns_name, record_type`,
    [holder, leaseMs, limit],
  );
  return rows
    .map((r) => ({ zone: r.zone, dnsName: r.dns_name, recordType: r.record_type }))
    .sort((a, b) => (a.zone + a.dnsName + a.recordType < b.zone + b.dnsName + b.recordType ? -1 : 1));
}

/** Ends `holder`'s leases now (a clean stop): another replica takes its sets on its next round. */
export async function releaseCheckedSets(q: Queryable, holder: string): Promise<void> {
  await q.query(`UPDATE health_leases SET lease_until = '-infinity' WHERE holder = $1`, [holder]);
}

/** Who holds each set's lease (tests, the console). */
export async function listHealthLeases(q: Queryable): Promise<Array<CheckedSet & { holder: string; leaseUntil: Date }>> {
  const { rows } = await q.query<{ zone: string; dns_name: string; record_type: string; holder: string; lease_until: Date }>(
    `SELECT zone, dns_name, record_type, holder, lease_until FROM health_leases ORDER BY zone, dns_name, record_type`,
  );
  return rows.map((r) => ({ zone: r.zone, dnsName: r.dns_name, recordType: r.record_type, holder: r.holder, leaseUntil: r.lease_until }));
}

/** One owner's check over its targets of a set: `target` '' for an exclusive owner (every target of the set is its). */
export interface OwnerCheck {
  target: string;
  tenantId: string;
  tenantName: string;
  check: string;
}

/** The checks of one record set, from its ownership rows. */
export async function listSetChecks(q: Queryable, s: CheckedSet): Promise<OwnerCheck[]> {
  const { rows } = await q.query<{ target: string; tenant_id: string; tenant_name: string; health_check: string }>(
    `SELECT o.target, o.tenant_id::text AS tenant_id, t.name AS tenant_name, o.health_check
       FROM ownership o JOIN tenants t ON t.id = o.tenant_id
      WHERE o.zone = $1 AND o.dns_name = $2 AND o.record_type = $3 AND o.health_check IS NOT NULL
      ORDER BY o.target`,
    [s.zone, s.dnsName, s.recordType],
  );
  return rows.map((r) => ({ target: r.target, tenantId: r.tenant_id, tenantName: r.tenant_name, check: r.health_check }));
}

export type TargetHealthState = 'healthy' | 'failing' | 'down';

export interface TargetHealthRow {
  zone: string;
  dnsName: string;
  recordType: string;
  target: string;
  state: TargetHealthState;
  failures: number;
  successes: number;
  flaps: number;
  heldUntil?: Date;
  since: Date;
  checkedAt: Date;
  answers: JsonValue;
}

interface HealthRow {
  zone: string;
  dns_name: string;
  record_type: string;
  target: string;
  state: TargetHealthState;
  failures: number;
  successes: number;
  flaps: number;
  held_until: Date | null;
  since: Date;
  checked_at: Date;
  answers: JsonValue;
}

function toHealth(r: HealthRow): TargetHealthRow {
  return {
    zone: r.zone,
    dnsName: r.dns_name,
    recordType: r.record_type,
    target: r.target,
    state: r.state,
    failures: r.failures,
    successes: r.successes,
    flaps: r.flaps,
    ...(r.held_until ? { heldUntil: r.held_until } : {}),
    since: r.since,
    checkedAt: r.checked_at,
    answers: r.answers,
  };
}

/** The state of the checked targets of a zone (of one set when named). */
export async function listTargetHealth(q: Queryable, zone: string, set?: { dnsName: string; recordType: string }): Promise<TargetHealthRow[]> {
  const { rows } = await q.query<HealthRow>(
    `SELECT * FROM target_health WHERE zone = $1 AND ($2::text IS NULL OR (dns_name = $2 AND record_type = $3))
      ORDER BY dns_name, record_type, target`,
    [zone, set?.dnsName ?? null, set?.recordType ?? null],
  );
  return rows.map(toHealth);
}

/**
 * Writes a set's targets' states (and drops the rows of targets no longer checked), only while
 * `holder` holds the set's lease. Returns whether it still did.
 */
export async function saveTargetHealth(
  q: Queryable,
  holder: string,
  s: CheckedSet,
  states: readonly Omit<TargetHealthRow, 'zone' | 'dnsName' | 'recordType' | 'checkedAt'>[],
): Promise<boolean> {
  const { rows } = await q.query<{ held: boolean }>(
    `WITH lease AS (
       SELECT 1 FROM health_leases WHERE zone = $1 AND dns_name = $2 AND record_type = $3 AND holder = $4 AND lease_until > clock_timestamp()
     ), gone AS (
       DELETE FROM target_health WHERE zone = $1 AND dns_name = $2 AND record_type = $3 AND NOT (target = ANY($5::text[])) AND EXISTS (SELECT 1 FROM lease)
     ), up AS (
       INSERT INTO target_health (zone, dns_name, record_type, target, state, failures, successes, flaps, held_until, since, checked_at, answers)
       SELECT $1, $2, $3, w.target, w.state, w.failures, w.successes, w.flaps, w.held_until, w.since, clock_timestamp(), w.answers
         FROM jsonb_to_recordset($6::jsonb) AS w (target text, state text, failures int, successes int, flaps int, held_until timestamptz, since timestamptz, answers jsonb)
        WHERE EXISTS (SELECT 1 FROM lease)
       ON CONFLICT (zone, dns_name, record_type, target) DO UPDATE
          SET state = EXCLUDED.state, failures = EXCLUDED.failures, successes = EXCLUDED.successes, flaps = EXCLUDED.flaps,
              held_until = EXCLUDED.held_until, since = EXCLUDED.since, checked_at = EXCLUDED.checked_at, answers = EXCLUDED.answers
     )
     SELECT EXISTS (SELECT 1 FROM lease) AS held`,
    [
      s.zone,
      s.dnsName,
      s.recordType,
      holder,
      states.map((t) => t.target),
      JSON.stringify(
        states.map((t) => ({
          target: t.target,
          state: t.state,
          failures: t.failures,
          successes: t.successes,
          flaps: t.flaps,
          held_until: t.heldUntil ?? null,
          since: t.since,
          answers: t.answers,
        })),
      ),
    ],
  );
  return rows[0]?.held === true;
}

/** Every checked target and whether its last check passed (the metrics, at scrape time). */
export async function healthSamples(q: Queryable): Promise<Array<{ zone: string; name: string; target: string; passing: boolean }>> {
  const { rows } = await q.query<{ zone: string; dns_name: string; target: string; passing: boolean }>(
    `SELECT zone, dns_name, target, failures = 0 AS passing FROM target_health ORDER BY zone, dns_name, target`,
  );
  return rows.map((r) => ({ zone: r.zone, name: r.dns_name, target: r.target, passing: r.passing }));
}
