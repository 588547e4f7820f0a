/**
 * Pruning the journal (`dnsplane journal prune`, core/journal/prune.ts): its finished rows older than a
 * horizon, and the plans of that age nothing refers to any more. in_flight rows never go (recovery
 * reads them). What `zone at` can no longer undo is kept per zone in journal_horizon (migrations/0023).
 *
 * The journal has no index on its times, but its ids grow with them (a row is inserted when it
 * starts): the rows that may go are those below the first id started at or after the horizon
 * (journalPruneBound), found once per prune by walking the primary key from the start — work in
 * proportion to what is pruned, not to the journal — and passed to every statement after it.
 */
import { assertLimit, type Queryable } from './internal.js';

/** A prune: rows finished before `before` go, among those below id `below` (journalPruneBound). */
export interface PruneScope {
  before: Date;
  below: string;
}

/** The journal rows (of alias `j`) a prune deletes; $1 its `before`, $2 its `below`. */
const prunable = (j: string) => `${j}.id < $2::bigint AND ${j}.state <> 'in_flight' AND ${j}.finished_at < $1::timestamptz`;
/** The plans it deletes once those rows are gone: made before it, no longer pending, referred to by no journal row (`kept`: but those). */
const plansPrunable = (kept = '') =>
  `p.created_at < $1::timestamptz AND (p.status <> 'pending' OR p.expires_at < now())
   AND NOT EXISTS (SELECT 1 FROM journal j WHERE j.plan_id = p.id${kept})`;

/** The first id of a row started at or after `before` (no row finished before it has a higher one); the largest bigint when none is. */
export async function journalPruneBound(q: Queryable, before: Date): Promise<string> {
  const { rows } = await q.query<{ id: string }>(`SELECT COALESCE(min(id), 9223372036854775807)::text AS id FROM journal WHERE started_at >= $1::timestamptz`, [
    before,
  ]);
  return rows[0]!.id;
}

export interface JournalHorizon {
  zone: string;
  prunedBefore: Date;
  /** The highest generation of the zone's applies pruned; null: none carried one. */
  generation: bigint | null;
}

/** How many journal rows and plans the prune would delete (the plans: those no row left refers to). */
export async function countPrunable(q: Queryable, scope: PruneScope): Promise<{ entries: number; plans: number }> {
  const { rows } = await q.query<{ entries: number; plans: number }>(
    `SELECT (SELECT count(*) FROM journal j WHERE ${prunable('j')})::int AS entries,
            (SELECT count(*) FROM plans p WHERE ${plansPrunable(` AND NOT (${prunable('j')})`)})::int AS plans`,
    [scope.before, scope.below],
  );
  return rows[0]!;
}

/**
 * Raises, per zone with rows to prune, the horizon `zone at` cannot go behind: the prune's `before`, and the
 * highest generation of those rows (never lowered by a prune of an older horizon). Returns the zones.
 */
export async function raiseJournalHorizon(q: Queryable, scope: PruneScope): Promise<string[]> {
  const { rows } = await q.query<{ zone: string }>(
    `INSERT INTO journal_horizon AS h (zone, pruned_before, generation)
     SELECT zone, $1::timestamptz, max(CASE WHEN result->>'generation' ~ '^[0-9]{1,18}$' THEN (result->>'generation')::bigint END)
       FROM journal j WHERE zone IS NOT NULL AND ${prunable('j')} GROUP BY zone
     ON CONFLICT (zone) DO UPDATE
       SET pruned_before = GREATEST(h.pruned_before, EXCLUDED.pruned_before),
           generation = GREATEST(h.generation, EXCLUDED.generation),
           pruned_at = now()
     RETURNING zone`,
    [scope.before, scope.below],
  );
  return rows.map((r) => r.zone).sort();
}

/** Deletes up to `limit` journal rows of the prune above id `afterId`; returns their count and the last id (keyset paging). */
export async function deleteJournalBatch(q: Queryable, scope: PruneScope, afterId: string, limit: number): Promise<{ deleted: number; lastId: string }> {
  assertLimit(limit);
  const { rows } = await q.query<{ n: number; last: string | null }>(
    `WITH gone AS (
       DELETE FROM journal WHERE id IN (SELECT id FROM journal j WHERE j.id > $3::bigint AND ${prunable('j')} ORDER BY j.id LIMIT $4) RETURNING id
     ) SELECT count(*)::int AS n, max(id)::text AS last FROM gone`,
    [scope.before, scope.below, afterId, limit],
  );
  return { deleted: rows[0]!.n, lastId: rows[0]!.last ?? afterId };
}

/** Deletes up to `limit` plans created before `before` that are no longer pending and that no journal row refers to. */
export async function deletePlansBatch(q: Queryable, before: Date, limit: number): Promise<number> {
  assertLimit(limit);
  const { rowCount } = await q.query(`DELETE FROM plans WHERE id IN (SELECT p.id FROM plans p WHERE ${plansPrunable()} ORDER BY p.created_at LIMIT $2)`, [
    before,
    limit,
  ]);
  return rowCount ?? 0;
}

/** The newest horizon any prune had (undefined: the journal was never pruned), for a message about an entry not found. */
export async function journalPrunedBefore(q: Queryable): Promise<Date | undefined> {
  const { rows } = await q.query<{ before: Date | null }>(`SELECT max(pruned_before) AS before FROM journal_horizon`);
  return rows[0]?.before ?? undefined;
}

/** The zone's horizon, if its journal was ever pruned. */
export async function getJournalHorizon(q: Queryable, zone: string): Promise<JournalHorizon | undefined> {
  const { rows } = await q.query<{ zone: string; pruned_before: Date; generation: string | null }>(
    `SELECT zone, pruned_before, generation::text FROM journal_horizon WHERE zone = $1`,
    [zone],
  );
  const r = rows[0];
  return r && { zone: r.zone, prunedBefore: r.pruned_before, generation: r.generation === null ? null : BigInt(r.generation) };
}
