/**
 * The zones this process settles at start: applies that died in flight (a SIGKILL mid-apply) are
 * rolled back (core/apply/recovery.ts) in the background, each zone on its own, while the server
 * already serves. Rolling back waits out the dead apply's lease first (up to ~30 s: none of its calls
 * may still land), holding that zone's lock; only that zone is busy meanwhile — its applies wait for
 * the lock (DNSPLANE_LOCK_TIMEOUT) or are refused naming why — and every other zone, /healthz and
 * /readyz answer at once (a liveness probe that waited 30 s might kill the pod again). /readyz's
 * body and the zone's state (ListZones: "settling") say which zones are settling.
 */
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';

/** One zone being settled by this process. */
export interface Settling {
  zone: string;
  /** The journal rows found in flight at start. */
  journals: string[];
  /** When the last of their holders' leases runs out: the rollback begins by then. */
  leaseUntil: Date | undefined;
}

/** Zones settled at once: each holds a pooled connection while it waits out its lease. */
const AT_ONCE = 4;

const byContext = new WeakMap<CoreContext, Map<string, Settling>>();

/** The zones this process is settling now, by name. */
export function settlingZones(ctx: CoreContext): Settling[] {
  return [...(byContext.get(ctx)?.values() ?? [])].sort((a, b) => (a.zone < b.zone ? -1 : a.zone > b.zone ? 1 : 0));
}

export function settlingOf(ctx: CoreContext, zone: string): Settling | undefined {
  return byContext.get(ctx)?.get(zone);
}

/** One line saying what a settling zone waits for (the /readyz body, a refusal's message). */
export function describeSettling(s: Settling): string {
  const rows =
    s.journals.length === 1
      ? `an apply that died in flight (journal ${s.journals[0]})`
      : `${s.journals.length} applies that died in flight (journal ${s.journals.join(', ')})`;
  const when = s.leaseUntil && s.leaseUntil.getTime() > Date.now() ? `, once its holder's lease runs out at ${s.leaseUntil.toISOString()}` : '';
  return `zone ${s.zone} is settling: ${rows} is rolled back${when}; its applies wait until then`;
}

/**
 * Finds the zones with applies in flight and settles them, at most AT_ONCE at a time, each marked
 * settling until its rollback ended (rolled back, left to the zone's lock holder, or failed: logged,
 * the zone's next apply tries again). Returns once they are all marked; `done` resolves with the
 * number of rows rolled back once all have ended.
 */
export async function settleAtStart(
  ctx: CoreContext,
  /** core/apply's recoverZone (passed in: core/zones/lock-queue.ts reads this module). */
  recoverZone: (ctx: CoreContext, zone: string) => Promise<number>,
): Promise<{ zones: string[]; done: Promise<number> }> {
  const zones = await store.listZonesWithInFlight(ctx.pool);
  const marks = new Map<string, Settling>();
  byContext.set(ctx, marks);
  for (const zone of zones) {
    const rows = await store.listInFlight(ctx.pool, zone);
    const until = rows.reduce<number | undefined>(
      (t, r) => (r.liveUntil && (t === undefined || r.liveUntil.getTime() > t) ? r.liveUntil.getTime() : t),
      undefined,
    );
    marks.set(zone, { zone, journals: rows.map((r) => r.id).sort(), leaseUntil: until === undefined ? undefined : new Date(until) });
  }
  const queue = [...zones];
  let recovered = 0;
  const worker = async (): Promise<void> => {
    for (let zone = queue.shift(); zone !== undefined; zone = queue.shift()) {
      try {
        recovered += await recoverZone(ctx, zone);
      } finally {
        marks.delete(zone);
      }
    }
  };
  const done = Promise.all(Array.from({ length: Math.min(AT_ONCE, zones.length) }, worker)).then(() => recovered);
  return { zones, done: ctx.lifecycle ? ctx.lifecycle.track(done) : done };
}
