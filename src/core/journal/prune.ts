/**
 * Pruning the journal (`dnsplane journal prune --older-than D`): the audit log and the history `zone at`
 * and `journal revert` read grow by every apply (2–3 KB a row with its indexes: at a thousand clusters,
 * gigabytes a year) and nothing else removes them. A prune deletes the rows finished before a horizon,
 * then the plans of that age that are no longer pending and that no row left refers to — never an
 * apply in flight (recovery reads it), never anything newer than a day.
 *
 * In one transaction first: per zone, the horizon `zone at` can no longer go behind
 * (store/journal-prune.ts, journal_horizon), and the prune's own journal row (what it is about to
 * delete, and who asked). Then the rows go in batches, each its own transaction, so that a prune of
 * millions of rows never holds a long transaction or a lock an apply waits for; one stopped midway
 * (a crash, ^C) is finished by running it again.
 */
import type pg from 'pg';
import * as store from '../../store/index.js';
import { InvalidInputError } from '../../dns/errors.js';
import { actedBy, auditAdminAction } from './audit.js';
import type { Tenant } from '../tenants/tenants.js';

/** The youngest horizon a prune may have: what is newer is what undo and the console's journal are for. */
export const MIN_PRUNE_AGE_MS = 24 * 3_600_000;

/** Rows per delete statement. */
export const PRUNE_BATCH = 5_000;

export interface PruneOptions {
  /** Rows finished more than this long ago go (at least MIN_PRUNE_AGE_MS). `field`: what a bad value's error names. */
  olderThanMs: number;
  field?: string;
  /** Count only: nothing is deleted or written. */
  dryRun?: boolean;
  /** Who asks: null from the command line (database access). */
  actor?: Tenant | null;
  now?: Date;
  batch?: number;
}

export interface PruneResult {
  /** The horizon: rows finished before it went. */
  before: Date;
  entries: number;
  plans: number;
  /** The zones whose history `zone at` now starts at `before`. */
  zones: string[];
  dryRun: boolean;
}

/** InvalidInputError naming `field` unless `olderThanMs` is a horizon a prune may have (at least a day). */
export function checkPruneAge(olderThanMs: number, field: string): void {
  if (!Number.isFinite(olderThanMs) || olderThanMs < MIN_PRUNE_AGE_MS)
    throw new InvalidInputError(
      field,
      `must be at least 24h: the journal of the last day is what undo (journal revert) and zone at read first, got ${Number.isFinite(olderThanMs) ? `${Math.round(olderThanMs / 3_600_000)}h` : String(olderThanMs)}`,
    );
}

export async function pruneJournal(pool: pg.Pool, opts: PruneOptions): Promise<PruneResult> {
  checkPruneAge(opts.olderThanMs, opts.field ?? 'olderThan');
  const before = new Date((opts.now ?? new Date()).getTime() - opts.olderThanMs);
  const scope = { before, below: await store.journalPruneBound(pool, before) };
  const counts = await store.countPrunable(pool, scope);
  if (opts.dryRun) return { before, ...counts, zones: [], dryRun: true };
  const actor = opts.actor ?? null;
  const zones = await store.withTransaction(pool, async (tx) => {
    const zones = await store.raiseJournalHorizon(tx, scope);
    await auditAdminAction(
      tx,
      null,
      actor,
      'prune-journal',
      `journal pruned before ${before.toISOString()} ${actedBy(actor)}: ${counts.entries} entries and ${counts.plans} plans`,
      { before: before.toISOString(), entries: counts.entries, plans: counts.plans, zones },
    );
    return zones;
  });
  const batch = opts.batch ?? PRUNE_BATCH;
  let entries = 0;
  for (let after = '0'; ; ) {
    const { deleted, lastId } = await store.deleteJournalBatch(pool, scope, after, batch);
    entries += deleted;
    after = lastId;
    if (deleted < batch) break;
  }
  let plans = 0;
  for (;;) {
    const deleted = await store.deletePlansBatch(pool, before, batch);
    plans += deleted;
    if (deleted < batch) break;
  }
  return { before, entries, plans, zones, dryRun: false };
}
