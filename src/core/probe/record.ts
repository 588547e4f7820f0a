/**
 * What a refresh leaves for the prober: in the apply's transaction, right after its refresh went out
 * (core/apply/publish.ts), its journal rows become `published` and one probe is recorded with the
 * record sets each row changed and what each must answer — created and updated sets exactly their
 * targets, deleted ones nothing (NXDOMAIN or NODATA). The same sets of older probes not yet seen are
 * superseded by the newer row. This process holds the probe first (its lease); NOTIFY dnsplane_probe
 * wakes its prober at COMMIT.
 */
import type { Change } from '../../dns/types.js';
import * as store from '../../store/index.js';
import { DEFAULT_VISIBILITY, type CoreContext } from '../context.js';

/** The record sets a plan's changes leave, with what each must answer. */
export function probeSetsOf(changes: readonly Change[]): store.ProbeSetInit[] {
  const sets: store.ProbeSetInit[] = [];
  for (const c of changes) {
    const e = c.after ?? c.before;
    if (!e) continue;
    sets.push({ name: e.dnsName, type: e.recordType, targets: c.after ? [...c.after.targets].sort() : null });
  }
  return sets;
}

/** This process's name as a holder of probes and journal rows. */
export function instanceOf(ctx: CoreContext): string {
  return ctx.instance ?? `pid ${process.pid}`;
}

/** Records the probe of one refresh (in the lock's transaction `tx`); returns its id. */
export async function recordRefresh(
  ctx: CoreContext,
  tx: store.Queryable,
  zone: string,
  publishedAt: Date,
  journals: ReadonlyArray<{ journalId: string; changes: readonly Change[] }>,
): Promise<string> {
  const settings = ctx.settings.visibility ?? DEFAULT_VISIBILITY;
  const rows = journals.map((j) => ({ journalId: j.journalId, sets: probeSetsOf(j.changes) }));
  const id = await store.recordProbe(tx, {
    zone,
    publishedAt,
    timeoutMs: settings.timeoutMs,
    holder: instanceOf(ctx),
    leaseMs: settings.leaseMs,
    journals: rows,
  });
  // A row that changed no record set (none can be asked of a server) is final at once.
  for (const r of rows) {
    if (r.sets.length === 0)
      await store.finishVisibility(tx, r.journalId, { state: 'unverified', servers: [], reason: 'it changed no record set a server could be asked about' });
  }
  return id;
}
