/**
 * The apply journal. insertIntent must run on its own autocommitted connection (the Pool), not in
 * the zone-lock transaction, so that the in_flight row survives a crash of that transaction.
 */
import { ConflictError, NotFoundError } from './errors.js';
import {
  assertIdString,
  assertLimit,
  jsonParam,
  PG_FOREIGN_KEY_VIOLATION,
  pgCode,
  pgConstraint,
  type JsonValue,
  type Queryable,
} from './internal.js';

export type JournalState = 'in_flight' | 'done' | 'failed' | 'recovered';

export interface JournalEntry {
  id: string;
  zone: string;
  tenantId: string;
  planId: string | null;
  intent: JsonValue;
  state: JournalState;
  result: JsonValue | null;
  startedAt: Date;
  finishedAt: Date | null;
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
}

const COLUMNS = `id::text AS id, zone, tenant_id::text AS tenant_id, plan_id, intent, state, result, started_at, finished_at`;

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
  };
}

/** Writes an in_flight row; returns its id. NotFoundError for an unknown zone, tenant or plan. */
export async function insertIntent(
  q: Queryable,
  e: { zone: string; tenantId: string; planId?: string; intent: unknown },
): Promise<string> {
  assertIdString('tenant id', e.tenantId);
  try {
    const { rows } = await q.query<{ id: string }>(
      `INSERT INTO journal (zone, tenant_id, plan_id, intent) VALUES ($1, $2::bigint, $3, $4::jsonb) RETURNING id::text AS id`,
      [e.zone, e.tenantId, e.planId ?? null, jsonParam(e.intent, 'journal intent')],
    );
    return (rows[0] as { id: string }).id;
  } catch (err) {
    if (pgCode(err) === PG_FOREIGN_KEY_VIOLATION) {
      const c = pgConstraint(err);
      if (c === 'journal_tenant_id_fkey') throw new NotFoundError('tenant', e.tenantId);
      if (c === 'journal_plan_id_fkey') throw new NotFoundError('plan', e.planId ?? '');
      throw new NotFoundError('zone', e.zone);
    }
    throw err;
  }
}

/**
 * Finishes an in_flight row (done, failed or recovered) with its result. NotFoundError when no
 * such row, ConflictError when it is already finished.
 */
export async function finishJournal(
  q: Queryable,
  id: string,
  state: Exclude<JournalState, 'in_flight'>,
  result: unknown,
): Promise<JournalEntry> {
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

/** The zone's in_flight rows (left by crashed applies), oldest first. */
export async function listInFlight(q: Queryable, zone: string): Promise<JournalEntry[]> {
  const { rows } = await q.query<Row>(
    `SELECT ${COLUMNS} FROM journal WHERE zone = $1 AND state = 'in_flight' ORDER BY id`,
    [zone],
  );
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
      ORDER BY id DESC
      LIMIT $3`,
    [opts.zone ?? null, opts.tenantId ?? null, opts.limit, opts.state ?? null, opts.beforeId ?? null],
  );
  return rows.map(toEntry);
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
