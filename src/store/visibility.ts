/**
 * Visibility (migrations/0013): per journal row, whether what it published is answered by the zone's
 * authoritative servers; the probes that find out (one per refresh), claimed with a lease so that
 * another replica takes over the probes of one that died. A row's visibility reaching a final state
 * sends NOTIFY dnsplane_visibility (its id); a probe recorded sends NOTIFY dnsplane_probe (its id),
 * both delivered at COMMIT.
 */
import { assertIdString, jsonParam, type JsonValue, type Queryable } from './internal.js';
import { PROBE_CHANNEL, VISIBILITY_CHANNEL } from './notify.js';

export type VisibilityStateRow = 'published' | 'visible' | 'not_visible' | 'unverified' | 'superseded';

/** A record set a probe checks: what it must answer; targets null: deleted (NXDOMAIN or NODATA). */
export interface ProbeSetInit {
  name: string;
  type: string;
  targets: string[] | null;
}

export interface ProbeSet extends ProbeSetInit {
  journalId: string;
  /** A later apply changed the same set before this one was seen. */
  supersededBy: string | null;
}

export interface ProbeRow {
  id: string;
  zone: string;
  publishedAt: Date;
  deadline: Date;
  nextAt: Date;
  rounds: number;
}

export interface JournalVisibilityRow {
  id: string;
  zone: string;
  state: VisibilityStateRow | null;
  publishedAt: Date | null;
  visibleAt: Date | null;
  servers: JsonValue | null;
  reason: string | null;
  supersededBy: string | null;
  journalState: string;
}

/**
 * In the apply's transaction, right after its refresh: the journal rows become `published` at
 * `publishedAt`, and one probe is recorded for them with the sets each changed, held by `holder` for
 * `leaseMs`. The same sets of older probes not yet seen are marked superseded by the row that changed
 * them now. Returns the probe's id (NOTIFY dnsplane_probe at COMMIT).
 */
export async function recordProbe(
  tx: Queryable,
  p: {
    zone: string;
    publishedAt: Date;
    timeoutMs: number;
    holder: string;
    leaseMs: number;
    journals: ReadonlyArray<{ journalId: string; sets: readonly ProbeSetInit[] }>;
  },
): Promise<string> {
  const ids = p.journals.map((j) => j.journalId);
  for (const id of ids) assertIdString('journal id', id);
  await tx.query(`UPDATE journal SET published_at = $2, visibility = 'published' WHERE id = ANY($1::bigint[])`, [ids, p.publishedAt]);
  const { rows } = await tx.query<{ id: string }>(
    `INSERT INTO probes (zone, published_at, deadline, next_at, holder, lease_until)
     VALUES ($1, $2, $2::timestamptz + $3 * interval '1 millisecond', clock_timestamp(), $4, clock_timestamp() + $5 * interval '1 millisecond')
     RETURNING id::text AS id, pg_notify('${PROBE_CHANNEL}', id::text)::text AS notified`,
    [p.zone, p.publishedAt, p.timeoutMs, p.holder, p.leaseMs],
  );
  const probeId = rows[0]!.id;
  const sets = p.journals.flatMap((j) => j.sets.map((s) => ({ journal_id: j.journalId, name: s.name, type: s.type, targets: s.targets })));
  if (sets.length > 0) {
    await tx.query(
      `INSERT INTO probe_sets (probe_id, journal_id, zone, name, type, targets)
       SELECT $1::bigint, s.journal_id::bigint, $2, s.name, s.type,
              CASE WHEN s.targets IS NULL OR jsonb_typeof(s.targets) = 'null' THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text(s.targets)) END
         FROM jsonb_to_recordset($3::jsonb) AS s(journal_id text, name text, type text, targets jsonb)`,
      [probeId, p.zone, jsonParam(sets, 'probe sets')],
    );
    await tx.query(
      `UPDATE probe_sets old SET superseded_by = new.journal_id
         FROM probe_sets new
        WHERE new.probe_id = $1::bigint AND old.zone = new.zone AND old.name = new.name AND old.type = new.type
          AND old.probe_id <> new.probe_id AND old.superseded_by IS NULL`,
      [probeId],
    );
  }
  return probeId;
}

const PROBE_COLUMNS = `id::text AS id, zone, published_at, deadline, next_at, rounds`;

function toProbe(r: { id: string; zone: string; published_at: Date; deadline: Date; next_at: Date; rounds: number }): ProbeRow {
  return { id: r.id, zone: r.zone, publishedAt: r.published_at, deadline: r.deadline, nextAt: r.next_at, rounds: r.rounds };
}

/**
 * Takes up to `limit` probes for `holder` (lease `leaseMs`): its own, and those whose holder's lease
 * lapsed (a replica that died), except `exclude` (the ones it runs already). Others are skipped, never
 * waited for (SKIP LOCKED).
 */
export async function claimProbes(q: Queryable, holder: string, leaseMs: number, limit: number, exclude: readonly string[]): Promise<ProbeRow[]> {
  for (const id of exclude) assertIdString('probe id', id);
  const { rows } = await q.query<{ id: string; zone: string; published_at: Date; deadline: Date; next_at: Date; rounds: number }>(
    `UPDATE probes SET holder = $1, lease_until = clock_timestamp() + $2 * interval '1 millisecond'
      WHERE id IN (SELECT id FROM probes
                    WHERE (holder = $1 OR lease_until IS NULL OR lease_until < clock_timestamp()) AND NOT (id = ANY($4::bigint[]))
                    ORDER BY next_at LIMIT $3 FOR UPDATE SKIP LOCKED)
      RETURNING ${PROBE_COLUMNS}`,
    [holder, leaseMs, limit, [...exclude]],
  );
  return rows.map(toProbe);
}

/** Extends the lease of `ids` held by `holder`; returns the ids still held (another replica may have taken one over). */
export async function renewProbes(q: Queryable, holder: string, ids: readonly string[], leaseMs: number): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  for (const id of ids) assertIdString('probe id', id);
  const { rows } = await q.query<{ id: string }>(
    `UPDATE probes SET lease_until = clock_timestamp() + $3 * interval '1 millisecond'
      WHERE id = ANY($2::bigint[]) AND holder = $1 RETURNING id::text AS id`,
    [holder, [...ids], leaseMs],
  );
  return new Set(rows.map((r) => r.id));
}

/** A round done: the next one is due in `delayMs`. False when the probe is no longer held by `holder`. */
export async function scheduleProbe(q: Queryable, holder: string, id: string, delayMs: number, rounds: number): Promise<boolean> {
  assertIdString('probe id', id);
  const { rowCount } = await q.query(
    `UPDATE probes SET next_at = clock_timestamp() + $3 * interval '1 millisecond', rounds = $4 WHERE id = $2::bigint AND holder = $1`,
    [holder, id, delayMs, rounds],
  );
  return (rowCount ?? 0) > 0;
}

/** Ends `holder`'s leases of `ids` now: another replica may take them over at once (a clean stop). */
export async function releaseProbes(q: Queryable, holder: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  for (const id of ids) assertIdString('probe id', id);
  await q.query(`UPDATE probes SET lease_until = clock_timestamp() WHERE id = ANY($2::bigint[]) AND holder = $1`, [holder, [...ids]]);
}

/** The sets a probe checks, with their journal rows. */
export async function probeSets(q: Queryable, probeId: string): Promise<ProbeSet[]> {
  assertIdString('probe id', probeId);
  const { rows } = await q.query<{ journal_id: string; name: string; type: string; targets: string[] | null; superseded_by: string | null }>(
    `SELECT journal_id::text AS journal_id, name, type, targets, superseded_by::text AS superseded_by
       FROM probe_sets WHERE probe_id = $1::bigint ORDER BY journal_id, name, type`,
    [probeId],
  );
  return rows.map((r) => ({ journalId: r.journal_id, name: r.name, type: r.type, targets: r.targets, supersededBy: r.superseded_by }));
}

/** A probe whose journal rows are all final is dropped (its sets with it). */
export async function deleteProbe(q: Queryable, id: string): Promise<void> {
  assertIdString('probe id', id);
  await q.query(`DELETE FROM probes WHERE id = $1::bigint`, [id]);
}

const VIS_COLUMNS = `id::text AS id, COALESCE(zone, '') AS zone, visibility, published_at, visible_at, visibility_servers, visibility_reason, superseded_by::text AS superseded_by, state`;

interface VisRow {
  id: string;
  zone: string;
  visibility: VisibilityStateRow | null;
  published_at: Date | null;
  visible_at: Date | null;
  visibility_servers: JsonValue | null;
  visibility_reason: string | null;
  superseded_by: string | null;
  state: string;
}

function toVis(r: VisRow): JournalVisibilityRow {
  return {
    id: r.id,
    zone: r.zone,
    state: r.visibility,
    publishedAt: r.published_at,
    visibleAt: r.visible_at,
    servers: r.visibility_servers,
    reason: r.visibility_reason,
    supersededBy: r.superseded_by,
    journalState: r.state,
  };
}

/** The visibility columns of journal rows (those that exist), in the order asked. */
export async function journalVisibility(q: Queryable, ids: readonly string[]): Promise<JournalVisibilityRow[]> {
  if (ids.length === 0) return [];
  for (const id of ids) assertIdString('journal id', id);
  const { rows } = await q.query<VisRow>(`SELECT ${VIS_COLUMNS} FROM journal WHERE id = ANY($1::bigint[])`, [[...ids]]);
  const byId = new Map(rows.map((r) => [r.id, toVis(r)]));
  return ids.map((id) => byId.get(id)).filter((r): r is JournalVisibilityRow => r !== undefined);
}

/** Progress of a row still `published`: per server what it answered so far. */
export async function noteVisibilityServers(q: Queryable, journalId: string, servers: unknown): Promise<void> {
  assertIdString('journal id', journalId);
  await q.query(`UPDATE journal SET visibility_servers = $2::jsonb WHERE id = $1::bigint AND visibility = 'published'`, [
    journalId,
    jsonParam(servers, 'visibility servers'),
  ]);
}

/**
 * A row's visibility becomes final (visible, not_visible, unverified or superseded), once: NOTIFY
 * dnsplane_visibility with its id. False when it was no longer `published`.
 */
export async function finishVisibility(
  q: Queryable,
  journalId: string,
  v: { state: Exclude<VisibilityStateRow, 'published'>; visibleAt?: Date; servers: unknown; reason?: string; supersededBy?: string },
): Promise<boolean> {
  assertIdString('journal id', journalId);
  if (v.supersededBy !== undefined) assertIdString('journal id', v.supersededBy);
  const { rowCount } = await q.query(
    `WITH done AS (
       UPDATE journal SET visibility = $2, visible_at = $3, visibility_servers = $4::jsonb, visibility_reason = $5, superseded_by = $6::bigint
        WHERE id = $1::bigint AND visibility = 'published' RETURNING id)
     SELECT pg_notify('${VISIBILITY_CHANNEL}', id::text) FROM done`,
    [journalId, v.state, v.visibleAt ?? null, jsonParam(v.servers, 'visibility servers'), v.reason ?? null, v.supersededBy ?? null],
  );
  return (rowCount ?? 0) > 0;
}
