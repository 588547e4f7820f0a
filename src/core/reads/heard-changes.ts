/**
 * What this replica heard of one zone's generations (NOTIFY dnsplane_zone through store.listen): for
 * each generation, what it changed — the record ids and the ownership sets its writer named
 * (store.ZoneChange) — or null when the writer did not say (a sync, a rollback, a recovery, drift, a
 * change too large for a NOTIFY: anything that may have changed more than it names).
 *
 * A copy of the zone kept at one generation catches up with it by re-reading only what changed: the
 * apply path's view under the zone lock (core/reads/zone-memory.ts) and the read cache's base
 * (core/reads/read-cache.ts). A NOTIFY is delivered only when its transaction commits, so what is heard
 * was committed; a generation missed, or heard without what it changed, means the copy is read again
 * whole, never trusted.
 */
import { recordSetKey } from '../../dns/types.js';
import type * as store from '../../store/index.js';

/** Generations heard past a copy at most; past it the oldest are forgotten (the copy is read again). */
const MAX_HEARD = 1_000;

export class HeardChanges {
  private readonly byGeneration = new Map<bigint, store.ZoneChange | null>();

  /** A generation heard, with what it changed when its writer said. */
  note(generation: bigint, changed?: store.ZoneChange): void {
    if (this.byGeneration.size >= MAX_HEARD) this.byGeneration.clear();
    this.byGeneration.set(generation, changed ?? null);
  }

  /**
   * What the generations after `from` up to `to` changed, merged (each id and set once), when every one
   * of them was heard with what it changed; otherwise undefined (read the zone whole).
   */
  between(from: bigint, to: bigint): store.ZoneChange | undefined {
    if (to < from || to - from > BigInt(MAX_HEARD)) return undefined;
    const ids = new Set<string>();
    const sets = new Map<string, store.ZoneChange['sets'][number]>();
    for (let g = from + 1n; g <= to; g++) {
      const changed = this.byGeneration.get(g);
      if (!changed) return undefined;
      for (const id of changed.ids) ids.add(id);
      for (const s of changed.sets) sets.set(recordSetKey(s.dnsName, s.recordType), s);
    }
    return { ids: [...ids], sets: [...sets.values()] };
  }

  /** Forgets the generations up to `generation` (a copy is at it now: they are behind it). */
  forgetThrough(generation: bigint): void {
    for (const g of this.byGeneration.keys()) if (g <= generation) this.byGeneration.delete(g);
  }

  /** Generations heard and kept (tests). */
  get size(): number {
    return this.byGeneration.size;
  }
}
