/**
 * The apply journal. insertIntent must run on its own autocommitted connection (the Pool), not in
 * the zone-lock transaction, so that the in_flight row survives a crash of that transaction.
 */
import { ConflictError, NotFoundError, ZoneLockLostError } from './errors.js';
import { lockHeldSql, type LockSession } from './lock.js';
import { assertIdString, assertLimit, jsonParam, PG_FOREIGN_KEY_VIOLATION, errorCode, pgConstraint, type JsonValue, type Queryable } from './internal.js';

export type JournalState = 'in_flight' | 'done' | 'failed' | 'recovered';

export interface JournalEntry {
  id: string;
  /** '' for an admin action that concerns no zone (a TSIG key's creation, say). */
  zone: string;
  /** '' for an admin action made from the command line (database access, no tenant). */
  tenantId: string;
  planId: string | null;
  intent: JsonValue;
  state: JournalState;
  result: JsonValue | null;
  startedAt: Date;
  finishedAt: Date | null;
  /** Who runs or ran it (process and lock session); null for rows written before fencing. */
  holder: string | null;
  /** The holder's lease: none of its OVH calls lands after this. */
  liveUntil: Date | null;
}

interface Row {
  id: string;
  zone: string;
  tenant_id: string;
  plan_id: string | null;
  intent: JsonValue;
  state: JournalState;
  result: JsonValue | null;
  started_at: Date;
  finished_at: Date | null;
  holder: string | null;
  live_until: Date | null;
}

const COLUMNS = `id::text AS id, COALESCE(zone, '') AS zone, COALESCE(tenant_id::text, '') AS tenant_id, plan_id, intent, state, result, started_at, finished_at, holder, live_until`;

function toEntry(r: Row): JournalEntry {
  return {
    id: r.id,
    zone: r.zone,
    tenantId: r.tenant_id,
    planId: r.plan_id,
    intent: r.intent,
    state: r.state,
    result: r.result,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    holder: r.holder,
    liveUntil: r.live_until,
  };
}

/**
 * The fencing of a holder's journal writes: who it is, the session holding its zone lock, its lease
 * (how long after now none of its OVH calls can still land) and its fence (how long after losing its
 * lock a call it had started can still land: its OVH call timeout plus a margin).
 */
export interface JournalFence {
  session: LockSession;
  holder: string;
  leaseMs: number;
  fenceMs: number;
}

/**
 * Writes an in_flight row; returns its id. NotFoundError for an unknown zone, tenant or plan.
 * With `fence`, the row is written only while the fence's session holds the zone lock (checked by
 * the database in the same statement): ZoneLockLostError otherwise.
 */
export async function insertIntent(
  q: Queryable,
  e: { zone: string; tenantId: string; planId?: string; intent: unknown; fence?: JournalFence },
): Promise<string> {
  assertIdString('tenant id', e.tenantId);
  try {
    const f = e.fence;
    const { rows } = f
      ? await q.query<{ id: string }>(
          `INSERT INTO journal (zone, tenant_id, plan_id, intent, holder, lock_pid, live_until, fence_ms)
           SELECT $1, $2::bigint, $3, $4::jsonb, $5, $6, clock_timestamp() + $7 * interval '1 millisecond', $8
            WHERE ${lockHeldSql('$1', '$6', '$9')}
           RETURNING id::text AS id`,
          [
            e.zone,
            e.tenantId,
            e.planId ?? null,
            jsonParam(e.intent, 'journal intent'),
            f.holder,
            f.session.pid,
            f.leaseMs,
            f.fenceMs,
            f.session.backendStartUs,
          ],
        )
      : await q.query<{ id: string }>(
          `INSERT INTO journal (zone, tenant_id, plan_id, intent) VALUES ($1, $2::bigint, $3, $4::jsonb) RETURNING id::text AS id`,
          [e.zone, e.tenantId, e.planId ?? null, jsonParam(e.intent, 'journal intent')],
        );
    if (!rows[0]) throw new ZoneLockLostError(e.zone, 'its session no longer holds it; the journal row was not written');
    return rows[0].id;
  } catch (err) {
    if (errorCode(err) === PG_FOREIGN_KEY_VIOLATION) {
      const c = pgConstraint(err);
      if (c === 'journal_tenant_id_fkey') throw new NotFoundError('tenant', e.tenantId);
      if (c === 'journal_plan_id_fkey') throw new NotFoundError('plan', e.planId ?? '');
      throw new NotFoundError('zone', e.zone);
    }
    throw err;
  }
}

/**
 * Writes a finished (done) row for an admin action, in the caller's transaction: `intent` holds its
 * `kind` and `summary`. `zone` null: the action concerns no zone; `tenantId` null: made from the
 * command line. Returns its id.
 */
export async function insertAdminAction(
  q: Queryable,
  e: { zone: string | null; tenantId: string | null; intent: { kind: string; summary: string; [key: string]: unknown }; result: unknown },
): Promise<string> {
  if (e.tenantId !== null) assertIdString('tenant id', e.tenantId);
  const { rows } = await q.query<{ id: string }>(
    `INSERT INTO journal (zone, tenant_id, intent, state, result, started_at, finished_at)
     SELECT $1, $2::bigint, $3::jsonb, 'done', $4::jsonb, at, at FROM (SELECT clock_timestamp() AS at) now
     RETURNING id::text AS id`,
    [e.zone, e.tenantId, jsonParam(e.intent, 'journal intent'), jsonParam(e.result, 'journal result')],
  );
  return rows[0]!.id;
}

/**
 * Finishes an in_flight row (done, failed or recovered) with its result. NotFoundError when no
 * such row, ConflictError when it is already finished.
 */
export async function finishJournal(q: Queryable, id: string, state: Exclude<JournalState, 'in_flight'>, result: unknown): Promise<JournalEntry> {
  assertIdString('journal id', id);
  const { rows } = await q.query<Row>(
    `UPDATE journal SET state = $2, result = $3::jsonb, finished_at = GREATEST(clock_timestamp(), started_at)
      WHERE id = $1::bigint AND state = 'in_flight'
      RETURNING ${COLUMNS}`,
    [id, state, jsonParam(result, 'journal result')],
  );
  if (rows[0]) return toEntry(rows[0]);
  const current = await getJournalEntry(q, id);
  if (!current) throw new NotFoundError('journal entry', id);
  throw new ConflictError(`journal entry ${id} is already ${current.state}`);
}

export async function getJournalEntry(q: Queryable, id: string): Promise<JournalEntry | undefined> {
  assertIdString('journal id', id);
  const { rows } = await q.query<Row>(`SELECT ${COLUMNS} FROM journal WHERE id = $1::bigint`, [id]);
  return rows[0] ? toEntry(rows[0]) : undefined;
}

/**
 * The zone's in_flight rows (left by crashed applies), newest first: the order to roll them back in
 * (the applies of one coalesced group each planned on what the ones before it did).
 */
export async function listInFlight(q: Queryable, zone: string): Promise<JournalEntry[]> {
  const { rows } = await q.query<Row>(`SELECT ${COLUMNS} FROM journal WHERE zone = $1 AND state = 'in_flight' ORDER BY journal.id DESC`, [zone]);
  return rows.map(toEntry);
}

/** Newest first; `beforeId`: only rows older than that id (paging). */
export async function listJournal(
  q: Queryable,
  opts: { zone?: string; tenantId?: string; state?: JournalState; beforeId?: string; limit: number },
): Promise<JournalEntry[]> {
  assertLimit(opts.limit);
  if (opts.tenantId !== undefined) assertIdString('tenant id', opts.tenantId);
  if (opts.beforeId !== undefined) assertIdString('journal id', opts.beforeId);
  const { rows } = await q.query<Row>(
    `SELECT ${COLUMNS} FROM journal
      WHERE ($1::text IS NULL OR zone = $1) AND ($2::bigint IS NULL OR tenant_id = $2::bigint)
        AND ($4::text IS NULL OR state = $4) AND ($5::bigint IS NULL OR id < $5::bigint)
      ORDER BY journal.id DESC
      LIMIT $3`,
    [opts.zone ?? null, opts.tenantId ?? null, opts.limit, opts.state ?? null, opts.beforeId ?? null],
  );
  return rows.map(toEntry);
}

/**
 * The zone's applies after journal row `afterId` (done, or still in flight) whose intent names one of
 * `names` (subDomain, fieldType; the sub-domain compared without case), oldest first: what touched
 * those record sets since (a revert's conflicts, core/apply/revert.ts). Rolled-back rows changed nothing.
 */
export async function listLaterTouching(
  q: Queryable,
  zone: string,
  afterId: string,
  names: ReadonlyArray<{ subDomain: string; fieldType: string }>,
): Promise<JournalEntry[]> {
  assertIdString('journal id', afterId);
  if (names.length === 0) return [];
  const { rows } = await q.query<Row>(
    `SELECT ${COLUMNS} FROM journal j
      WHERE zone = $1 AND id > $2::bigint AND state IN ('done', 'in_flight') AND jsonb_typeof(intent->'names') = 'array'
        AND EXISTS (SELECT 1 FROM jsonb_array_elements(j.intent->'names') n
                      JOIN jsonb_to_recordset($3::jsonb) AS t("subDomain" text, "fieldType" text)
                        ON lower(n->>'subDomain') = lower(t."subDomain") AND n->>'fieldType' = t."fieldType")
      ORDER BY j.id`,
    [zone, afterId, JSON.stringify(names.map((n) => ({ subDomain: n.subDomain, fieldType: n.fieldType })))],
  );
  return rows.map(toEntry);
}

/**
 * The zone's applies that took effect after a point, newest first: done rows (a failed or recovered
 * one was rolled back) finished after `time`, or whose generation (result.generation, written since
 * schema 0018's release) is above `generation`. And the zone's re-reads from OVH after it
 * (invalidate-zone admin rows), which no journal intent can undo.
 *
 * Read in proportion to the history since the point, not to the zone's whole journal: a zone's applies
 * run one after the other under its lock, so the newest done row at or before the point (for a time,
 * an hour before it: a margin no apply's batch lasts) bounds what the rest of the reads walk. Ordered by
 * `journal.id`: a bare `id` would be the text the rows are selected as ("99" after "100").
 */
export async function listAppliesAfter(
  q: Queryable,
  zone: string,
  after: { generation?: bigint; time?: Date },
): Promise<{ applies: JournalEntry[]; rereads: JournalEntry[] }> {
  const byGeneration = after.generation !== undefined;
  const param = byGeneration ? after.generation!.toString() : after.time!.toISOString();
  const atOrBefore = byGeneration ? `(result->>'generation')::bigint <= $2::bigint` : `finished_at <= $2::timestamptz - interval '1 hour'`;
  const { rows: bound } = await q.query<{ id: string }>(
    `SELECT id::text AS id FROM journal WHERE zone = $1 AND state = 'done' AND ${atOrBefore} ORDER BY journal.id DESC LIMIT 1`,
    [zone, param],
  );
  const floor = bound[0]?.id ?? '0';
  const cond = byGeneration ? `(result->>'generation')::bigint > $2::bigint` : `finished_at > $2::timestamptz`;
  const { rows } = await q.query<Row>(
    `SELECT ${COLUMNS} FROM journal
      WHERE zone = $1 AND id > $3::bigint AND state = 'done' AND jsonb_typeof(intent->'names') = 'array' AND ${cond}
      ORDER BY journal.id DESC`,
    [zone, param, floor],
  );
  const since = byGeneration
    ? `id > COALESCE((SELECT min(id) FROM journal WHERE zone = $1 AND id > $3::bigint AND (result->>'generation')::bigint > $2::bigint), 9223372036854775807)`
    : `finished_at > $2::timestamptz`;
  const { rows: rereads } = await q.query<Row>(
    `SELECT ${COLUMNS} FROM journal WHERE zone = $1 AND id > $3::bigint AND intent->>'kind' = 'invalidate-zone' AND ${since} ORDER BY journal.id`,
    [zone, param, floor],
  );
  return { applies: rows.map(toEntry), rereads: rereads.map(toEntry) };
}

/**
 * Notes how far an in_flight apply got (e.g. `{ stage: 'refresh' }` just before it publishes), in
 * `result`, on whatever connection it is given — like insertIntent, an autocommitted one, so that the
 * note survives a crash. Recovery reads it. Returns false when the row is no longer in_flight.
 */
export async function noteJournalProgress(q: Queryable, id: string, progress: unknown): Promise<boolean> {
  assertIdString('journal id', id);
  const { rowCount } = await q.query(`UPDATE journal SET result = $2::jsonb WHERE id = $1::bigint AND state = 'in_flight'`, [
    id,
    jsonParam(progress, 'journal progress'),
  ]);
  return (rowCount ?? 0) > 0;
}

/**
 * noteJournalProgress, fenced: written only while `session` holds the zone lock (checked by the
 * database in the same statement), so that a holder that lost its lock can never move its apply
 * forward (to stage "refresh", say) through this pool. `release`: the holder has stopped sending for
 * this row (it leaves the rest to the next holder): its lease ends now, and the next holder need not
 * wait for it. Several ids (a coalesced group's rows): the same progress on each, all or none.
 * Returns false when the lock is gone (or a row is no longer in_flight).
 */
export async function noteJournalProgressFenced(
  q: Queryable,
  id: string | readonly string[],
  session: LockSession,
  progress: unknown,
  opts: { release?: boolean } = {},
): Promise<boolean> {
  const ids = typeof id === 'string' ? [id] : [...id];
  for (const i of ids) assertIdString('journal id', i);
  const { rowCount } = await q.query(
    `UPDATE journal SET result = $2::jsonb, live_until = CASE WHEN $6 THEN clock_timestamp() ELSE live_until END
      WHERE id = ANY($1::bigint[]) AND state = 'in_flight' AND ${lockHeldSql('$3', '$4', '$5')}`,
    [ids, jsonParam(progress, 'journal progress'), session.zone, session.pid, session.backendStartUs, opts.release === true],
  );
  return (rowCount ?? 0) === ids.length;
}

/**
 * Extends the lease of in_flight rows to now + leaseMs, only while `session` holds the zone lock.
 * Returns how many rows were renewed (fewer than asked: the lock is gone, or a row was finished).
 */
export async function renewJournalLease(q: Queryable, ids: readonly string[], session: LockSession, leaseMs: number): Promise<number> {
  if (ids.length === 0) return 0;
  for (const id of ids) assertIdString('journal id', id);
  const { rowCount } = await q.query(
    `UPDATE journal SET live_until = clock_timestamp() + $5 * interval '1 millisecond'
      WHERE id = ANY($1::bigint[]) AND state = 'in_flight' AND ${lockHeldSql('$2', '$3', '$4')}`,
    [ids, session.zone, session.pid, session.backendStartUs, leaseMs],
  );
  return rowCount ?? 0;
}

/**
 * A recovering holder takes an in_flight row over (its name, its session, its lease), fenced like
 * renewJournalLease, so that the holder after it waits for the recovery's own calls. Call it only
 * once the previous holder must have stopped (recoveryWaitMs is 0). Returns false when the lock is
 * gone or the row is no longer in_flight.
 */
export async function takeOverJournal(q: Queryable, id: string, f: JournalFence): Promise<boolean> {
  assertIdString('journal id', id);
  const { rowCount } = await q.query(
    `UPDATE journal SET holder = $2, lock_pid = $3, live_until = clock_timestamp() + $4 * interval '1 millisecond', fence_ms = $5
      WHERE id = $1::bigint AND state = 'in_flight' AND ${lockHeldSql('$6', '$3', '$7')}`,
    [id, f.holder, f.session.pid, f.leaseMs, f.fenceMs, f.session.zone, f.session.backendStartUs],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * How long (ms) the zone's new lock holder must wait before it may roll an in_flight row back: until
 * none of the row's holder's OVH calls can still land. The holder sent only while it held the lock,
 * which the caller holds now, so its last call started before now and ends within fence_ms; and it
 * renewed its lease before each call, so nothing of it lands after live_until: the lesser of the two.
 * 0 for a row written before fencing, or whose holder released it (it stopped on its own).
 */
export async function recoveryWaitMs(q: Queryable, id: string): Promise<number> {
  assertIdString('journal id', id);
  const { rows } = await q.query<{ ms: number }>(
    `SELECT ceil(CASE WHEN live_until IS NULL THEN 0
                      ELSE GREATEST(0, LEAST(extract(epoch FROM live_until - clock_timestamp()) * 1000, coalesce(fence_ms, 0)))
                 END)::int AS ms
       FROM journal WHERE id = $1::bigint AND state = 'in_flight'`,
    [id],
  );
  return rows[0]?.ms ?? 0;
}

/** The zones that have in_flight rows, by name. */
export async function listZonesWithInFlight(q: Queryable): Promise<string[]> {
  const { rows } = await q.query<{ zone: string }>(`SELECT DISTINCT zone FROM journal WHERE state = 'in_flight' ORDER BY zone`);
  return rows.map((r) => r.zone);
}

/** Per zone with in_flight rows: how many, and the age of the oldest in seconds (metrics, at scrape time). */
export async function inFlightSummary(q: Queryable): Promise<Array<{ zone: string; count: number; oldestSeconds: number }>> {
  const { rows } = await q.query<{ zone: string; n: number; oldest: number }>(
    `SELECT zone, count(*)::int AS n, extract(epoch FROM now() - min(started_at))::float8 AS oldest
       FROM journal WHERE state = 'in_flight' GROUP BY zone ORDER BY zone`,
  );
  return rows.map((r) => ({ zone: r.zone, count: r.n, oldestSeconds: Number(r.oldest) }));
}

/** Rows per state, for one zone or all. */
export async function countJournalStates(q: Queryable, zone?: string): Promise<Record<JournalState, number>> {
  const { rows } = await q.query<{ state: JournalState; n: number }>(
    `SELECT state, count(*)::int AS n FROM journal WHERE $1::text IS NULL OR zone = $1 GROUP BY state`,
    [zone ?? null],
  );
  const out: Record<JournalState, number> = { in_flight: 0, done: 0, failed: 0, recovered: 0 };
  for (const r of rows) out[r.state] = r.n;
  return out;
}
