/**
 * The draft of the served OVH API (migrations/0012): ovh_drafts, a tenant's staged writes per zone
 * (one row per record id: a create under a staged id, or an update or delete of a published record),
 * and ovh_record_ids, the served ids (the id a tool holds: a staged id, or the OVH id a record had
 * first) of records whose OVH id differs, and the OVH records they name now. Rows past their expiry are
 * never read; sweepOvhDrafts deletes them.
 */
import { assertIdString, type Queryable } from './internal.js';

export type DraftAction = 'create' | 'update' | 'delete';

/** A record as a staged write leaves it (OVH's form: subDomain relative, TXT without quotes). */
export interface DraftRecord {
  subDomain: string;
  fieldType: string;
  target: string;
  ttl: number;
}

export interface DraftRow {
  recordId: string;
  action: DraftAction;
  /** Absent for a delete. */
  record?: DraftRecord;
  /** Whether the write set the TTL. */
  ttlSet: boolean;
  /** Changes with every write of this record id (a refresh drops the revision it published, no later one). */
  revision: string;
  stagedAt: Date;
  expiresAt: Date;
}

/** A draft row with whose it is, for the admin's listing. */
export interface DraftListing extends DraftRow {
  tenant: string;
  zone: string;
}

interface Row {
  record_id: string;
  action: DraftAction;
  sub_domain: string | null;
  field_type: string | null;
  target: string | null;
  ttl: number | null;
  ttl_set: boolean;
  revision: string;
  staged_at: Date;
  expires_at: Date;
}

const COLUMNS =
  'd.record_id::text AS record_id, d.action, d.sub_domain, d.field_type, d.target, d.ttl, d.ttl_set, d.revision::text AS revision, d.staged_at, d.expires_at';

function toDraft(r: Row): DraftRow {
  return {
    recordId: r.record_id,
    action: r.action,
    ...(r.sub_domain !== null ? { record: { subDomain: r.sub_domain, fieldType: r.field_type!, target: r.target!, ttl: r.ttl! } } : {}),
    ttlSet: r.ttl_set,
    revision: r.revision,
    stagedAt: r.staged_at,
    expiresAt: r.expires_at,
  };
}

/** The tenant's unexpired staged writes in the zone, oldest first; `recordId`: that one only. */
export async function listDraft(q: Queryable, tenantId: string, zone: string, recordId?: string): Promise<DraftRow[]> {
  assertIdString('tenant id', tenantId);
  if (recordId !== undefined) assertIdString('record id', recordId);
  const { rows } = await q.query<Row>(
    `SELECT ${COLUMNS} FROM ovh_drafts d
      WHERE d.tenant_id = $1::bigint AND d.zone = $2 AND d.expires_at > now() AND ($3::bigint IS NULL OR d.record_id = $3::bigint)
      ORDER BY d.staged_at, d.record_id`,
    [tenantId, zone, recordId ?? null],
  );
  return rows.map(toDraft);
}

/** A new staged id, for a create. */
export async function newDraftId(q: Queryable): Promise<string> {
  const { rows } = await q.query<{ id: string }>(`SELECT nextval('ovh_draft_ids')::text AS id`);
  return rows[0]!.id;
}

export interface StagedWrite {
  tenantId: string;
  zone: string;
  recordId: string;
  action: DraftAction;
  record?: DraftRecord;
  ttlSet: boolean;
  expiresAt: Date;
}

/** Stages a write: the row of that record id is replaced (a later write of a record supersedes the earlier one). */
export async function stageWrite(q: Queryable, w: StagedWrite): Promise<DraftRow> {
  assertIdString('tenant id', w.tenantId);
  assertIdString('record id', w.recordId);
  const r = w.record;
  const { rows } = await q.query<Row>(
    `INSERT INTO ovh_drafts AS d (tenant_id, zone, record_id, action, sub_domain, field_type, target, ttl, ttl_set, expires_at)
     VALUES ($1::bigint, $2, $3::bigint, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (tenant_id, zone, record_id) DO UPDATE
        SET action = EXCLUDED.action, sub_domain = EXCLUDED.sub_domain, field_type = EXCLUDED.field_type, target = EXCLUDED.target,
            ttl = EXCLUDED.ttl, ttl_set = EXCLUDED.ttl_set, revision = nextval('ovh_draft_revisions'), staged_at = clock_timestamp(),
            expires_at = EXCLUDED.expires_at
     RETURNING ${COLUMNS}`,
    [w.tenantId, w.zone, w.recordId, w.action, r?.subDomain ?? null, r?.fieldType ?? null, r?.target ?? null, r?.ttl ?? null, w.ttlSet, w.expiresAt],
  );
  return toDraft(rows[0]!);
}

/** Drops one staged write (a staged create deleted before any refresh). Returns whether it was there. */
export async function dropDraftRow(q: Queryable, tenantId: string, zone: string, recordId: string): Promise<boolean> {
  assertIdString('tenant id', tenantId);
  assertIdString('record id', recordId);
  const { rowCount } = await q.query(`DELETE FROM ovh_drafts WHERE tenant_id = $1::bigint AND zone = $2 AND record_id = $3::bigint`, [
    tenantId,
    zone,
    recordId,
  ]);
  return (rowCount ?? 0) > 0;
}

/**
 * Drops the staged writes a refresh published: each only if it is still the revision the refresh
 * read, so that a write staged again while the refresh ran waits for the next one.
 */
export async function dropPublishedDraft(
  q: Queryable,
  tenantId: string,
  zone: string,
  published: ReadonlyArray<Pick<DraftRow, 'recordId' | 'revision'>>,
): Promise<number> {
  assertIdString('tenant id', tenantId);
  if (published.length === 0) return 0;
  for (const p of published) {
    assertIdString('record id', p.recordId);
    assertIdString('revision', p.revision);
  }
  const { rowCount } = await q.query(
    `DELETE FROM ovh_drafts d USING unnest($3::bigint[], $4::bigint[]) AS p(record_id, revision)
      WHERE d.tenant_id = $1::bigint AND d.zone = $2 AND d.record_id = p.record_id AND d.revision = p.revision`,
    [tenantId, zone, published.map((p) => p.recordId), published.map((p) => p.revision)],
  );
  return rowCount ?? 0;
}

/** A record's id as the served API shows it (a staged id, or the OVH id it had first) and the OVH record it names now. */
export interface ServedId {
  servedId: string;
  ovhId: string;
}

/** The tenant's served ids of the zone that differ from their records' OVH ids. */
export async function listServedIds(q: Queryable, tenantId: string, zone: string): Promise<ServedId[]> {
  assertIdString('tenant id', tenantId);
  const { rows } = await q.query<{ served_id: string; ovh_id: string }>(
    `SELECT staged_id::text AS served_id, ovh_id::text AS ovh_id FROM ovh_record_ids WHERE zone = $1 AND tenant_id = $2::bigint`,
    [zone, tenantId],
  );
  return rows.map((r) => ({ servedId: r.served_id, ovhId: r.ovh_id }));
}

/**
 * After a refresh's operations (in the apply's transaction): the rows of OVH records that are gone
 * (`gone`) dropped, and each of `moved` made the served id of its OVH record — its earlier row and any
 * row naming that OVH record replaced; a served id equal to its OVH id needs no row.
 */
export async function moveServedIds(q: Queryable, tenantId: string, zone: string, moved: readonly ServedId[], gone: readonly string[]): Promise<void> {
  assertIdString('tenant id', tenantId);
  for (const m of moved) {
    assertIdString('served id', m.servedId);
    assertIdString('record id', m.ovhId);
  }
  for (const id of gone) assertIdString('record id', id);
  if (moved.length === 0 && gone.length === 0) return;
  await q.query(`DELETE FROM ovh_record_ids WHERE zone = $1 AND (ovh_id = ANY($2::bigint[]) OR staged_id = ANY($3::bigint[]))`, [
    zone,
    [...gone, ...moved.map((m) => m.ovhId)],
    moved.map((m) => m.servedId),
  ]);
  const rows = moved.filter((m) => m.servedId !== m.ovhId);
  if (rows.length === 0) return;
  await q.query(
    `INSERT INTO ovh_record_ids (zone, staged_id, tenant_id, ovh_id)
     SELECT $2, u.served_id, $1::bigint, u.ovh_id FROM unnest($3::bigint[], $4::bigint[]) AS u(served_id, ovh_id)`,
    [tenantId, zone, rows.map((m) => m.servedId), rows.map((m) => m.ovhId)],
  );
}

/**
 * Deletes staged writes past their expiry, and served ids whose OVH record is gone from the cache.
 * Returns how many of each.
 */
export async function sweepOvhDrafts(q: Queryable): Promise<{ drafts: number; ids: number }> {
  const drafts = await q.query(`DELETE FROM ovh_drafts WHERE expires_at <= now()`);
  const ids = await q.query(`DELETE FROM ovh_record_ids i WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.zone = i.zone AND r.id = i.ovh_id)`);
  return { drafts: drafts.rowCount ?? 0, ids: ids.rowCount ?? 0 };
}

/** Every unexpired staged write (or one tenant's), by tenant, zone and age, for the admin's listing. */
export async function listAllDrafts(q: Queryable, opts: { tenantId?: string; limit: number }): Promise<DraftListing[]> {
  if (opts.tenantId !== undefined) assertIdString('tenant id', opts.tenantId);
  const { rows } = await q.query<Row & { tenant: string; zone: string }>(
    `SELECT ${COLUMNS}, t.name AS tenant, d.zone FROM ovh_drafts d JOIN tenants t ON t.id = d.tenant_id
      WHERE d.expires_at > now() AND ($1::bigint IS NULL OR d.tenant_id = $1::bigint)
      ORDER BY t.name, d.zone, d.staged_at, d.record_id
      LIMIT $2`,
    [opts.tenantId ?? null, opts.limit],
  );
  return rows.map((r) => ({ ...toDraft(r), tenant: r.tenant, zone: r.zone }));
}
