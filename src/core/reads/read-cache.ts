/**
 * The hot reads from memory, exact across replicas (docs/records-and-reads.md, "Records").
 *
 * What a zone holds at a generation never changes (every change of its records or ownership bumps the
 * generation in the same transaction), so an answer is kept keyed by (zone, generation, the caller's
 * view) and is exact while the generation is current; the current generations come from
 * core/reads/zone-states.ts. One copy of a zone per generation: the base (records, record sets,
 * ownership rows) made once from one REPEATABLE READ snapshot, however many callers ask at once, and
 * its answers cut once (core/reads/answers.ts): the zone as includeForeign shows it, the same for every
 * tenant, and each owner's slice of it, so that a tenant's own answer is a map lookup. A change costs
 * what it touched: when every generation since the kept base was heard with what it changed (NOTIFY,
 * heard-changes.ts), only those rows are read and the kept base and answers patched (base-patch.ts);
 * otherwise the zone is read whole, in its turn (at most a quarter of the pool's connections read
 * zones whole at once). The wire forms are made once per (view, form) (encodings.ts).
 *
 * Everything kept — bases, answers, encodings, the apply path's views of zones (keepView), and the
 * builds in flight (reserved before a whole read) — is accounted in bytes (core/reads/sizing.ts) and
 * bounded (DNSPLANE_READ_CACHE_BYTES): past the bound the least recently used is dropped and built
 * again when asked. Dropping only forgets: an answer being sent holds its own reference. A newer
 * generation of a zone drops what was kept of the older ones.
 */
import type pg from 'pg';
import type { Endpoint } from '../../dns/types.js';
import * as store from '../../store/index.js';
import { Slicer } from '../slices.js';
import { answersBytes, BUILD_BYTES_PER_RECORD, DEFAULT_READ_CACHE_BYTES, type ReadCacheOptions, type ReadCacheStats } from './sizing.js';
import { Turns } from '../turns.js';
import { cutAnswers, patchAnswers, sideRowsKept, type ZoneAnswers } from './answers.js';
import { Encodings } from './encodings.js';
import { indexPatchedFrom, whenIndexed } from './base-index.js';
import { patchBase, readForBase, type PatchedBase } from './base-patch.js';
import { HeardChanges } from './heard-changes.js';
import { latestEntry, type Entry } from './entries.js';
import { answersKey, baseKey, buildKey, KeptBytes, viewKey, type Kept, type KeptItem } from './kept-bytes.js';
import { baseBytes, zoneBaseOf, type ZoneBase, type ZoneRows } from './zone-base.js';
import { ZoneStateSource } from './zone-states.js';

export type { ZoneAnswers } from './answers.js';
export { DEFAULT_READ_CACHE_BYTES, defaultReadCacheBytes, estateFit } from './sizing.js';
export type { KeptItem } from './kept-bytes.js';
export type { ReadCacheOptions, ReadCacheStats } from './sizing.js';

/** A tenant's view of a zone at a generation. The endpoints array is shared: never mutate it. */
export interface ZoneView {
  generation: bigint;
  endpoints: readonly Endpoint[];
}

export class ReadCache {
  /** Every zone's generation and state: kept while the listener is live, else read fresh (ZoneStateSource). */
  readonly zoneStates: ZoneStateSource;
  private readonly bases = new Map<string, Entry<ZoneBase>>();
  private readonly answers = new Map<string, Entry<ZoneAnswers>>();
  private readonly encodings = new Encodings({
    account: (key, item) => this.account(key, item),
    touch: (key) => this.kept.touch(key),
    encoded: () => void this.counts.encodes++,
  });
  /** The newest generation of each zone whose base was kept: older items are not kept any more. */
  private readonly newest = new Map<string, bigint>();
  /** Everything kept, least recently used first, with its accounted bytes. */
  private readonly kept: KeptBytes;
  private readonly counts = { baseBuilds: 0, basePatches: 0, answerBuilds: 0, answerPatches: 0, encodes: 0 };
  /** Per zone, what this replica heard of its generations (NOTIFY): a newer base is patched from the kept one. */
  private readonly heardChanges = new Map<string, HeardChanges>();
  /**
   * A base patched from another, until its answers are cut: how, and what of the other its answers
   * depend on (not the other base itself: it is not kept alive by its successor).
   */
  private readonly patchedFrom = new WeakMap<ZoneBase, { from: Pick<ZoneBase, 'generation' | 'withdrawals' | 'health'>; patched: PatchedBase }>();
  /** The apply path's view of each zone as accounted (keepView). */
  private readonly applyViews = new Map<string, { view: object; base?: ZoneBase }>();
  /** Whole-zone reads of Postgres at once: a quarter of the pool's connections (at least one). */
  private readonly wholeReads: Turns;

  constructor(
    private readonly pool: pg.Pool,
    opts: ReadCacheOptions = {},
  ) {
    this.kept = new KeptBytes(opts.maxBytes ?? DEFAULT_READ_CACHE_BYTES);
    this.wholeReads = new Turns(Math.max(1, Math.floor((pool.options.max ?? 10) / 4)));
    this.zoneStates = new ZoneStateSource(async () => {
      opts.onZoneStatesRead?.();
      return store.listZoneStates(pool);
    }, opts.listening);
    // The replica that changed a zone sees it at once: every generation bump is made under a zone lock.
    store.onZoneLockEnded(pool, () => this.zoneStates.forget());
  }

  /** The bound, in bytes (DNSPLANE_READ_CACHE_BYTES). */
  get maxBytes(): number {
    return this.kept.maxBytes;
  }

  /** Answers cut from a base (misses), for tests and the bench. */
  get builds(): number {
    return this.counts.answerBuilds;
  }

  stats(): ReadCacheStats {
    const { bytes, maxBytes, size: entries, evictions } = this.kept;
    return { bytes, maxBytes, entries, evictions, ...this.counts };
  }

  /** What is kept now, least recently used first (for tests). */
  kepts(): KeptItem[] {
    return this.kept.items();
  }

  /**
   * A NOTIFY of a zone's generation heard (store.listen): the zones' states move to it, and what it
   * changed, when its writer said, lets the next base be patched from the kept one instead of read whole.
   */
  heard(zone: string, generation: bigint, changed?: store.ZoneChange): void {
    this.zoneStates.heard(zone, generation);
    if (generation <= (this.newest.get(zone) ?? -1n)) return;
    let heard = this.heardChanges.get(zone);
    if (!heard) this.heardChanges.set(zone, (heard = new HeardChanges()));
    heard.note(generation, changed);
  }

  /**
   * The tenant's view of the zone at `generation` (the current one, as zoneStates just read it) or
   * later: the base read from Postgres on a miss (once, shared by concurrent callers), the view cut
   * from the base's answers — the same array for every includeForeign caller, the tenant's slice
   * otherwise.
   */
  async view(zone: string, generation: bigint, tenant: string, includeForeign: boolean): Promise<ZoneView> {
    const answers = await this.answersAt(zone, generation);
    // A tenant that owns nothing there: an empty array of its own (no view to key encodings on).
    const endpoints = includeForeign ? answers.all : (answers.byOwner.get(tenant) ?? []);
    return { generation: answers.generation, endpoints };
  }

  /**
   * The bytes `encode` makes of the view whose endpoints array this cache handed out (view()), kept
   * per (view, form) while the bound allows (core/reads/encodings.ts).
   */
  encoded(endpoints: readonly Endpoint[], form: string, encode: () => Promise<Uint8Array>): Promise<Uint8Array> {
    return this.encodings.of(endpoints, form, encode);
  }

  /**
   * The zone's base at exactly `generation` (committed: what a snapshot at that generation sees), from
   * memory or built now; undefined when the zone has moved past it meanwhile (the caller reads its own).
   */
  async baseExactlyAt(zone: string, generation: bigint): Promise<ZoneBase | undefined> {
    const b = await this.baseAtOrAfter(zone, generation);
    return b.generation === generation ? b : undefined;
  }

  /**
   * The zone's base kept at exactly `generation`, if it is built: never waits for a build (a caller
   * inside a transaction must not wait for a connection another build may be waiting for).
   */
  baseIfBuilt(zone: string, generation: bigint): ZoneBase | undefined {
    const hit = this.bases.get(zone);
    if (hit?.settled?.generation !== generation) return undefined;
    this.touch(baseKey(zone, generation));
    return hit.settled;
  }

  /**
   * The apply path's view of the zone (core/reads/zone-memory.ts: `bytes` as it counts itself) counts
   * against the bound as the least recently used of what is kept; `drop` forgets it when room is
   * needed (the next apply makes it again). Called again when it grew or was used. `base`: the base
   * of this cache's it stands on — dropped to make room, it takes the view with it (the view would
   * otherwise keep it alive unaccounted).
   */
  keepView(zone: string, view: object, bytes: number, drop: () => void, base?: ZoneBase): void {
    const key = viewKey(zone);
    // The same view grown or used: resized in place; another one (made anew): accounted instead.
    if (this.applyViews.get(zone)?.view === view && this.kept.resize(key, bytes)) return;
    this.applyViews.set(zone, { view, base });
    this.kept.add(key, {
      kind: 'view',
      zone,
      generation: -1n,
      bytes,
      drop: () => {
        if (this.applyViews.get(zone)?.view === view) this.applyViews.delete(zone);
        drop();
      },
    });
  }

  /**
   * Keeps a base a caller read from a committed snapshot (a Plan's), unless one as new is kept: the
   * next Plan or Records view of that generation takes it instead of reading the zone again.
   */
  keep(zone: string, base: ZoneBase): void {
    const hit = this.bases.get(zone);
    if (hit && hit.generation >= base.generation) return;
    const entry: Entry<ZoneBase> = { generation: base.generation, value: Promise.resolve(base), settled: base };
    this.bases.set(zone, entry);
    this.keepBase(zone, entry, base);
  }

  private baseAtOrAfter(zone: string, generation: bigint): Promise<ZoneBase> {
    const previous = this.bases.get(zone)?.settled;
    return latestEntry(this.bases, zone, generation, this.touchAt(baseKey), async (entry) => {
      const slicer = new Slicer();
      // Read in one snapshot (only what changed since the kept base, when every generation since was
      // heard with what it changed), then mapped outside it, in slices. A whole build — read and mapping —
      // waits its turn (wholeReads): twenty zones read at once would hold every pooled connection, and
      // mapped at once every zone's rows and half-made base (the heap's peak in bench/estate's pass).
      // Whole unless every generation from the kept base to the one asked for was heard with what it
      // changed (a generation past it, met in the snapshot, may still make it whole: rare, and small).
      const whole = !previous || this.heardChanges.get(zone)?.between(previous.generation, generation) === undefined;
      const reservation = buildKey(zone);
      const build = () => this.build(zone, entry, previous, (fn) => store.withSnapshot(this.pool, fn), reservation, slicer);
      try {
        return await (whole ? this.wholeReads.run(build) : build());
      } finally {
        this.kept.remove(reservation);
      }
    });
  }

  /**
   * One build of the zone's base (baseAtOrAfter): a read of what changed since `previous`, patched into
   * it, or of the whole zone — what that will take reserved first (`reservation`), so that the builds
   * in flight count against the bound as what they build will.
   */
  private async build(
    zone: string,
    entry: Entry<ZoneBase>,
    previous: ZoneBase | undefined,
    snapshot: <R>(fn: (q: store.Queryable) => Promise<R>) => Promise<R>,
    reservation: string,
    slicer: Slicer,
  ): Promise<ZoneBase> {
    const read = await snapshot((q) =>
      readForBase(q, zone, previous, this.heardChanges.get(zone), (generation, records) =>
        this.kept.reserve(reservation, zone, generation, records * BUILD_BYTES_PER_RECORD),
      ),
    );
    let base: ZoneBase;
    if (read.whole) {
      const w = read.whole;
      base = await zoneBaseOf(zone, w.generation, w.records, w.ownership, slicer, w.withdrawals, w.health);
    } else {
      const patched = await patchBase(read.previous, zone, read.generation, read.change, slicer);
      base = patched.base;
      indexPatchedFrom(read.previous, patched, zone);
      const { generation: g, withdrawals, health } = read.previous;
      this.patchedFrom.set(base, { from: { generation: g, withdrawals, health }, patched });
      this.counts.basePatches++;
    }
    return this.settle(zone, entry, base, reservation);
  }

  /**
   * A base its writer had in hand as it committed it (a first sync: the records it read from OVH and
   * wrote, core/zones/zones.ts; a TXT import: the records it judged against, core/admin/import-txt.ts),
   * made in slices instead of read back from Postgres; the callers asking meanwhile share it. Nothing
   * done when one as new is kept or building.
   */
  adopt(zone: string, rows: ZoneRows): void {
    void latestEntry(this.bases, zone, rows.generation, this.touchAt(baseKey), async (entry) => {
      entry.adopted = true;
      const reservation = buildKey(zone);
      this.kept.reserve(reservation, zone, rows.generation, rows.records.length * BUILD_BYTES_PER_RECORD);
      try {
        const { generation, records, ownership, withdrawals, health } = rows;
        const base = await zoneBaseOf(zone, generation, records, ownership, new Slicer(), withdrawals, health);
        return this.settle(zone, entry, base, reservation);
      } finally {
        this.kept.remove(reservation);
      }
    });
  }

  /**
   * The base being made at exactly `generation` from what its writer had in hand (adopt): it needs no
   * connection, so a caller inside a transaction may wait for it (undefined if it fails: read it then).
   */
  adopting(zone: string, generation: bigint): Promise<ZoneBase | undefined> | undefined {
    const hit = this.bases.get(zone);
    return hit?.adopted && !hit.settled && hit.generation === generation ? hit.value.catch(() => undefined) : undefined;
  }

  /** A base built: kept (and accounted as what it is, no longer as the reservation of what it would be) unless a newer build replaced its entry. */
  private settle(zone: string, entry: Entry<ZoneBase>, base: ZoneBase, reservation: string): ZoneBase {
    entry.generation = base.generation;
    this.zoneStates.heard(zone, base.generation); // committed: the states kept may move to it
    this.heardChanges.get(zone)?.forgetThrough(base.generation);
    this.counts.baseBuilds++;
    this.kept.remove(reservation);
    if (this.bases.get(zone) === entry) {
      entry.settled = base;
      this.keepBase(zone, entry, base);
    }
    return base;
  }

  /** Touches the kept item of a hit (latestEntry) under its key. */
  private touchAt(keyOf: (zone: string, generation: bigint) => string): (zone: string, generation: bigint) => void {
    return (zone, generation) => this.touch(keyOf(zone, generation));
  }

  /** Accounts a base now in `bases`, dropping what was kept of the zone's older generations. */
  private keepBase(zone: string, entry: Entry<ZoneBase>, base: ZoneBase): void {
    const older = this.newest.get(zone);
    if (older === undefined || older < base.generation) {
      this.newest.set(zone, base.generation);
      this.kept.removeOlder(zone, base.generation);
    }
    const key = baseKey(zone, base.generation);
    this.account(key, {
      kind: 'base',
      zone,
      generation: base.generation,
      bytes: baseBytes(base),
      drop: (evicted) => {
        if (this.bases.get(zone) === entry) this.bases.delete(zone);
        // Dropped for room: the apply path's view standing on it goes too (it would keep it alive).
        if (evicted && this.applyViews.get(zone)?.base === base) this.kept.remove(viewKey(zone));
      },
    });
    // Its index (Plans, the served OVH API), once made, lives as long as the base: counted with it.
    whenIndexed(base, (bytes) => void this.kept.resize(key, baseBytes(base) + bytes));
  }

  /**
   * The zone's answers at `generation` or later, cut once from its base (shared by concurrent callers)
   * and kept while the bound allows — apart from the base: a base dropped to stay within the bound
   * (or a Plan's) does not make the answers cut again.
   */
  private answersAt(zone: string, generation: bigint): Promise<ZoneAnswers> {
    const previous = this.answers.get(zone)?.settled;
    return latestEntry(this.answers, zone, generation, this.touchAt(answersKey), async (entry) => {
      const base = await this.baseAtOrAfter(zone, generation);
      entry.generation = base.generation;
      const answers = await this.cut(zone, base, previous);
      if (this.answers.get(zone) === entry) {
        entry.settled = answers;
        this.keepAnswers(zone, entry, answers);
      }
      return answers;
    });
  }

  /**
   * Accounts answers now in `answers`. Their `drop` is made here, not in answersAt: a closure made there
   * shares its scope with `previous`, and every kept item's drop held the previous generation's answers
   * alive (a heap snapshot of bench/estate's server: two generations of answers per zone).
   */
  private keepAnswers(zone: string, entry: Entry<ZoneAnswers>, answers: ZoneAnswers): void {
    const drop = () => {
      if (this.answers.get(zone) === entry) this.answers.delete(zone);
    };
    this.account(answersKey(zone, answers.generation), { kind: 'answers', zone, generation: answers.generation, bytes: answersBytes(answers), drop });
  }

  /**
   * The base's answers: patched from the previous generation's when the base was patched from that
   * generation's base and the withdrawn targets and health rows of the sets it did not touch are as they
   * were (a health flip names its set: core/health/checker.ts); cut whole otherwise.
   */
  private async cut(zone: string, base: ZoneBase, previous: ZoneAnswers | undefined): Promise<ZoneAnswers> {
    const slicer = new Slicer();
    const p = this.patchedFrom.get(base);
    this.patchedFrom.delete(base);
    const patchable = p !== undefined && previous?.generation === p.from.generation && sideRowsKept(p.patched, p.from);
    const answers = patchable ? await patchAnswers(zone, previous, p.patched, slicer) : await cutAnswers(zone, base, slicer);
    this.counts.answerBuilds++;
    if (patchable) this.counts.answerPatches++;
    this.encodings.register(zone, base.generation, answers);
    return answers;
  }

  /** Accounts an item built, unless its zone has moved to a newer generation meanwhile (KeptBytes.add). */
  private account(key: string, item: Kept): void {
    const newest = this.newest.get(item.zone);
    if (newest !== undefined && item.generation < newest) item.drop();
    else this.kept.add(key, item);
  }

  private touch(key: string): void {
    this.kept.touch(key);
  }
}

/** One ReadCache per pool (per database) unless the context brings its own. */
const byPool = new WeakMap<pg.Pool, ReadCache>();

export function readCacheOf(ctx: { pool: pg.Pool; reads?: ReadCache }): ReadCache {
  if (ctx.reads) return ctx.reads;
  let c = byPool.get(ctx.pool);
  if (!c) byPool.set(ctx.pool, (c = new ReadCache(ctx.pool)));
  return c;
}

declare module '../context.js' {
  interface CoreContext {
    /** The Records cache (this file). Absent: one per pool, made on first use (readCacheOf). */
    reads?: ReadCache;
  }
}
