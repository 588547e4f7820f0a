/**
 * The first syncs of this process: each zone read from OVH once however many callers ask for it at
 * the same moment (they share its promise), and at most DNSPLANE_SYNC_CONCURRENCY zones read at once,
 * the others queued in order (core/turns.ts) — never refused for waiting, never holding a database
 * connection while they wait or while OVH is read (core/zones/zones.ts firstSync takes the zone lock
 * only to write what it read). A first sync that fails is logged with its zone and why, and the next
 * caller tries again.
 */
import type pg from 'pg';
import { messageOf } from '../../lib/error-message.js';
import type * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { Turns } from '../turns.js';

/** Zones read from OVH at once when the settings do not say (DNSPLANE_SYNC_CONCURRENCY). */
export const DEFAULT_SYNC_CONCURRENCY = 4;

export class FirstSyncs {
  private readonly turns: Turns;
  private readonly inFlight = new Map<string, Promise<store.Zone>>();

  constructor(limit: number) {
    this.turns = new Turns(limit);
  }

  /** Zones being read now, and waiting their turn (metrics, logs, tests). */
  get running(): number {
    return this.turns.running;
  }

  get waiting(): number {
    return this.turns.waiting;
  }

  /** The zone's first sync: the one in flight, or `sync` run in its turn. */
  run(ctx: CoreContext, zone: string, sync: () => Promise<store.Zone>): Promise<store.Zone> {
    const shared = this.inFlight.get(zone);
    if (shared) return shared;
    if (this.turns.running >= this.turns.limit) {
      ctx.log.info({ zone, running: this.turns.running, waiting: this.turns.waiting + 1 }, 'first sync queued behind the zones being read');
    }
    const p = this.turns
      .run(sync)
      .catch((e: unknown) => {
        ctx.log.warn({ zone, err: messageOf(e) }, 'first sync of the zone failed; its next reader tries again');
        throw e;
      })
      .finally(() => this.inFlight.delete(zone));
    this.inFlight.set(zone, p);
    return p;
  }
}

const byPool = new WeakMap<pg.Pool, FirstSyncs>();

/** This process's first syncs (per database, as the zone lock's in-process queue is). */
export function firstSyncsOf(ctx: Pick<CoreContext, 'pool' | 'settings'>): FirstSyncs {
  let s = byPool.get(ctx.pool);
  if (!s) byPool.set(ctx.pool, (s = new FirstSyncs(ctx.settings.firstSyncs ?? DEFAULT_SYNC_CONCURRENCY)));
  return s;
}
