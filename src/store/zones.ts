import { NotFoundError } from './errors.js';
import { toBigInt, toBigIntOrNull, type Queryable } from './internal.js';
import { notifyZoneChanged } from './notify.js';

export type ZoneState = 'unsynced' | 'synced';

export interface Zone {
  name: string;
  /** Cache version: +1 on every change of the cached content. */
  generation: bigint;
  state: ZoneState;
  lastSync: Date | null;
  soaSerial: bigint | null;
}

/** What the drift checks of a zone found (core/drift/drift.ts writes it through markVerified). */
export interface ZoneDrift {
  /** End of the last drift check; null: never checked. */
  checkedAt: Date | null;
  /** When a check last found records changed outside dnsplane; null: never. */
  foundAt: Date | null;
  /** What the check at foundAt found. */
  added: number;
  removed: number;
  updated: number;
}

/** A zone with the rows of its records cache, counted at read time (listZones). */
export interface ZoneWithCount extends Zone {
  recordCount: number;
  drift: ZoneDrift;
  /** Journal rows of this zone still in_flight (applies that died and wait for their rollback). */
  inFlight: number;
}

interface ZoneRow {
  name: string;
  generation: string;
  state: ZoneState;
  last_sync: Date | null;
  soa_serial: string | null;
}

const ZONE_COLUMNS = `z.name, z.generation::text AS generation, z.state, z.last_sync, z.soa_serial::text AS soa_serial`;

function toZone(r: ZoneRow): Zone {
  return {
    name: r.name,
    generation: toBigInt(r.generation),
    state: r.state,
    lastSync: r.last_sync,
    soaSerial: toBigIntOrNull(r.soa_serial),
  };
}

/**
 * Inserts the zones that do not exist yet, as unsynced with generation 0 (NOTIFY dnsplane_zone for
 * each: at commit, inside a transaction). Idempotent, and safe
 * when several callers insert overlapping sets at once (sorted to avoid lock-order deadlocks).
 */
export async function ensureZones(q: Queryable, names: string[]): Promise<void> {
  const unique = [...new Set(names)].sort();
  if (unique.length === 0) return;
  const { rows } = await q.query<{ name: string }>(
    `INSERT INTO zones (name) SELECT n FROM unnest($1::text[]) AS n ORDER BY n ON CONFLICT (name) DO NOTHING RETURNING name`,
    [unique],
  );
  // Every replica learns of a new zone (core/reads/read-cache.ts keeps the zones' states while it listens).
  for (const r of rows) await notifyZoneChanged(q, r.name, 0n);
}

/** One zone, without counting its records: this is on every request's path. */
export async function getZone(q: Queryable, name: string): Promise<Zone | undefined> {
  const { rows } = await q.query<ZoneRow>(`SELECT ${ZONE_COLUMNS} FROM zones z WHERE z.name = $1`, [name]);
  return rows[0] ? toZone(rows[0]) : undefined;
}

interface DriftRow {
  record_count: string;
  in_flight: number;
  drift_checked_at: Date | null;
  drift_found_at: Date | null;
  drift_added: number;
  drift_removed: number;
  drift_updated: number;
}

/** The zones named (those that exist), or all zones; by name, with record counts and drift state. */
export async function listZones(q: Queryable, names?: string[]): Promise<ZoneWithCount[]> {
  const { rows } = await q.query<ZoneRow & DriftRow>(
    `SELECT ${ZONE_COLUMNS}, (SELECT count(*) FROM records r WHERE r.zone = z.name)::text AS record_count,
            (SELECT count(*) FROM journal j WHERE j.zone = z.name AND j.state = 'in_flight')::int AS in_flight,
            z.drift_checked_at, z.drift_found_at, z.drift_added, z.drift_removed, z.drift_updated
       FROM zones z WHERE $1::text[] IS NULL OR z.name = ANY($1::text[]) ORDER BY z.name`,
    [names ?? null],
  );
  return rows.map((r) => ({
    ...toZone(r),
    recordCount: Number(r.record_count),
    inFlight: r.in_flight,
    drift: { checkedAt: r.drift_checked_at, foundAt: r.drift_found_at, added: r.drift_added, removed: r.drift_removed, updated: r.drift_updated },
  }));
}

/** What every Records call needs of a zone (core/reads/read-cache.ts). */
export type ZoneGeneration = Pick<Zone, 'name' | 'generation' | 'state'>;

/**
 * Every zone dnsplane knows, by name: its generation and state only (no dates, no serial, no record
 * count), the cheapest read for the hot path that shares it among concurrent Records calls.
 */
export async function listZoneStates(q: Queryable): Promise<ZoneGeneration[]> {
  const { rows } = await q.query<Pick<ZoneRow, 'name' | 'generation' | 'state'>>('SELECT name, generation::text AS generation, state FROM zones ORDER BY name');
  return rows.map((r) => ({ name: r.name, generation: toBigInt(r.generation), state: r.state }));
}

/** The names of the zones dnsplane knows, sorted; no record counts (for hot paths). */
export async function listZoneNames(q: Queryable): Promise<string[]> {
  const { rows } = await q.query<{ name: string }>('SELECT name FROM zones ORDER BY name');
  return rows.map((r) => r.name);
}

/** zone -> generation for the zones that exist among `names`. */
export async function getGenerations(q: Queryable, names: string[]): Promise<Map<string, bigint>> {
  const out = new Map<string, bigint>();
  if (names.length === 0) return out;
  const { rows } = await q.query<{ name: string; generation: string }>('SELECT name, generation::text AS generation FROM zones WHERE name = ANY($1::text[])', [
    names,
  ]);
  for (const r of rows) out.set(r.name, toBigInt(r.generation));
  return out;
}

/**
 * Records the end of a full sync: state synced, last_sync now(); the SOA serial when given
 * (otherwise the previous one is kept). Does not touch the generation: use bumpGeneration.
 */
export async function markSynced(q: Queryable, zone: string, opts: { soaSerial?: bigint | number } = {}): Promise<void> {
  const serial = opts.soaSerial === undefined ? null : opts.soaSerial.toString();
  const { rowCount } = await q.query(`UPDATE zones SET state = 'synced', last_sync = now(), soa_serial = COALESCE($2::bigint, soa_serial) WHERE name = $1`, [
    zone,
    serial,
  ]);
  if (rowCount === 0) throw new NotFoundError('zone', zone);
}

/** The cache must be refilled from OVH before it is served again. */
export async function markUnsynced(q: Queryable, zone: string): Promise<void> {
  const { rowCount } = await q.query(`UPDATE zones SET state = 'unsynced' WHERE name = $1`, [zone]);
  if (rowCount === 0) throw new NotFoundError('zone', zone);
}

/** generation + 1; returns the new generation. Call inside the zone's lock transaction. */
export async function bumpGeneration(q: Queryable, zone: string): Promise<bigint> {
  const { rows } = await q.query<{ generation: string }>(
    'UPDATE zones SET generation = generation + 1 WHERE name = $1 RETURNING generation::text AS generation',
    [zone],
  );
  if (!rows[0]) throw new NotFoundError('zone', zone);
  return toBigInt(rows[0].generation);
}

/**
 * Records that the cache was just checked against OVH (a drift check): last_sync = now() and the SOA
 * serial seen. last_sync thus means "the cache was last known to match OVH at", whether by a full sync
 * or by a drift check. Also the zone's drift state: drift_checked_at = now(), and with `found` (the
 * check read changes made outside dnsplane) drift_found_at = now() and what it found. Does not touch
 * the generation.
 */
export async function markVerified(
  q: Queryable,
  zone: string,
  opts: { soaSerial: bigint | number; found?: { added: number; removed: number; updated: number } },
): Promise<void> {
  const f = opts.found;
  const { rowCount } = await q.query(
    `UPDATE zones SET last_sync = now(), soa_serial = $2::bigint, drift_checked_at = now(),
            drift_found_at = CASE WHEN $3 THEN now() ELSE drift_found_at END,
            drift_added = CASE WHEN $3 THEN $4::int ELSE drift_added END,
            drift_removed = CASE WHEN $3 THEN $5::int ELSE drift_removed END,
            drift_updated = CASE WHEN $3 THEN $6::int ELSE drift_updated END
      WHERE name = $1`,
    [zone, opts.soaSerial.toString(), f !== undefined, f?.added ?? 0, f?.removed ?? 0, f?.updated ?? 0],
  );
  if (rowCount === 0) throw new NotFoundError('zone', zone);
}

/** Whether the zone was synced or checked against OVH less than `ms` ago (by the database's clock). */
export async function verifiedWithin(q: Queryable, zone: string, ms: number): Promise<boolean> {
  const { rows } = await q.query<{ recent: boolean | null }>(
    `SELECT last_sync > now() - make_interval(secs => $2::double precision / 1000) AS recent FROM zones WHERE name = $1`,
    [zone, ms],
  );
  return rows[0]?.recent === true;
}
