/**
 * The hot reads from memory, exact across replicas.
 *
 * What a zone holds at a generation never changes: every change of its records or ownership bumps
 * the generation in the same transaction. So a Records answer can be kept in memory keyed by
 * (zone, generation, the caller's view) and is exact for as long as the generation is current; the
 * only question is how a replica knows the current generation. It asks Postgres, but not once per
 * request: FreshRead shares one `SELECT … FROM zones` among every caller that arrived while it was
 * waiting for its turn, and never hands a caller a read that started before the caller arrived. A
 * change committed (on any replica) before a Records request arrived is therefore in its answer,
 * and a not-modified poll costs a share of one small query instead of a query of its own.
 *
 * One copy of a zone per generation: the base (records, record sets, ownership rows) is made once per
 * generation from one REPEATABLE READ snapshot, shared by every concurrent caller, and its answers
 * are cut from it once (core/reads/answers.ts): the zone as includeForeign shows it, which is the same
 * for every tenant, and each owner's slice of it (the same endpoint objects, indexed by owner), so that
 * a tenant's own answer costs a map lookup and memory in proportion to its own records.
 *
 * A change costs what it touched: when this replica heard every generation since the base it keeps
 * with what each changed (NOTIFY, core/reads/heard-changes.ts), the snapshot reads only the records
 * of the ids and the ownership rows of the sets they named, the new base is the kept one patched
 * (core/reads/base-patch.ts) and its answers the kept ones with the touched sets cut again. Otherwise
 * (the first base, a generation missed or not said, the kept base dropped) the zone is read whole. The bytes
 * the API writes are encoded once per (view, form) and kept here too (encoded()): every tenant that
 * asks includeForeign is sent the same bytes.
 *
 * Everything kept is accounted in bytes (buffers exactly, objects by an estimate per item) and
 * bounded (maxBytes, DNSPLANE_READ_CACHE_BYTES): past the bound the least recently used is dropped
 * and built again when asked. Dropping only forgets: an answer being sent holds its own reference.
 * A newer generation of a zone drops what was kept of the older ones.
 */
import { getHeapStatistics } from 'node:v8';
import type pg from 'pg';
import type { Endpoint } from '../../dns/types.js';
import * as store from '../../store/index.js';
import { Slicer } from '../slices.js';
import { Turns } from '../turns.js';
import { cutAnswers, patchAnswers, sideRowsKept, type ZoneAnswers } from './answers.js';
import { indexPatchedFrom } from './base-index.js';
import { patchBase, type PatchedBase } from './base-patch.js';
import { HeardChanges } from './heard-changes.js';
import { KeptBytes, type Kept, type KeptItem } from './kept-bytes.js';
import { baseBytes, readZoneRows, zoneBaseOf, type ZoneBase } from './zone-base.js';
import { ZoneStateSource } from './zone-states.js';

export type { ZoneAnswers } from './answers.js';
export type { KeptItem } from './kept-bytes.js';

/** A tenant's view of a zone at a generation. The endpoints array is shared: never mutate it. */
export interface ZoneView {
  generation: bigint;
  endpoints: readonly Endpoint[];
}

interface Entry<T> {
  generation: bigint;
  value: Promise<T>;
  /** The value once built (a caller that must not wait for a build reads this). */
  settled?: T;
}

/** Counts for tests, the bench and metrics. */
export interface ReadCacheStats {
  /** Bytes accounted now (never above maxBytes once an insertion returns) and the bound. */
  bytes: number;
  maxBytes: number;
  entries: number;
  /**
   * Bases made (read whole from Postgres, or patched from the previous generation's: basePatches of
   * them), answers cut from a base (answerPatches of them from the previous generation's), encodings made.
   */
  baseBuilds: number;
  basePatches: number;
  answerBuilds: number;
  answerPatches: number;
  encodes: number;
  /** Items dropped to stay within the bound. */
  evictions: number;
}

/** The bound of a cache made without one (tests), and the least the default bound from the heap is. */
export const DEFAULT_READ_CACHE_BYTES = 128 * 2 ** 20;
/** The default bound's share of V8's heap limit: the rest is the process's own, and what requests hold while answered. */
export const READ_CACHE_HEAP_SHARE = 0.25;

/**
 * DNSPLANE_READ_CACHE_BYTES when it is not set: 25% of V8's heap limit (what node's
 * --max-old-space-size says, or what node chose from the machine's or the container's memory), at
 * least DEFAULT_READ_CACHE_BYTES.
 */
export function defaultReadCacheBytes(heapLimit = getHeapStatistics().heap_size_limit): number {
  return Math.max(DEFAULT_READ_CACHE_BYTES, Math.floor(heapLimit * READ_CACHE_HEAP_SHARE));
}

/**
 * What the managed zones would take in the cache read whole (their base and answers, at the
 * per-record estimate of a build; encodings come on top as they are asked for), and how many of them
 * the bound holds, the smallest first: what the start log says, so that an operator sizes a replica
 * before it thrashes.
 */
export function estateFit(maxBytes: number, recordCounts: readonly number[]): { bytes: number; zones: number; fit: number } {
  const sizes = recordCounts.map((n) => n * BUILD_BYTES_PER_RECORD).sort((a, b) => a - b);
  let fit = 0;
  let used = 0;
  for (const s of sizes) {
    if (used + s > maxBytes) break;
    used += s;
    fit++;
  }
  return { bytes: sizes.reduce((a, b) => a + b, 0), zones: sizes.length, fit };
}

/**
 * What a zone's build takes per record until it is accounted as what it is: its base and its answers
 * (the estimates beside baseBytes, core/reads/zone-base.ts, and ANSWER_BYTES_PER_ENDPOINT).
 */
const BUILD_BYTES_PER_RECORD = 700;

/**
 * The apply path's view per record (core/reads/zone-memory.ts): its indexes, and its records and rows
 * — its own, or a base's that it keeps alive once that base is dropped (counted twice while both are
 * kept: the bound errs on the side of the process's memory).
 */
const VIEW_BYTES_PER_RECORD = 550;

/** An endpoint with its owner label, and its reference in its owner's list (the estimate beside baseBytes, core/reads/zone-base.ts). */
const ANSWER_BYTES_PER_ENDPOINT = 120;

export interface ReadCacheOptions {
  /** Bytes kept at most (bases, answers, encodings); least recently used dropped first. Default DEFAULT_READ_CACHE_BYTES. */
  maxBytes?: number;
  /** Called at each fresh read of the zones' states (metrics). */
  onZoneStatesRead?: () => void;
  /**
   * Whether the replica hears every NOTIFY dnsplane_zone now (store.Listener.live): the zones' states
   * are then kept in memory (ZoneStateSource). Without it, every caller's states are a fresh read.
   */
  listening?: () => boolean;
}

export class ReadCache {
  /** Every zone's generation and state: kept while the listener is live, else read fresh (ZoneStateSource). */
  readonly zoneStates: ZoneStateSource;
  private readonly bases = new Map<string, Entry<ZoneBase>>();
  private readonly answers = new Map<string, Entry<ZoneAnswers>>();
  private readonly encodings = new Map<string, Promise<Uint8Array>>();
  /** The view each endpoints array handed out is of (its key, for encoded()). */
  private readonly views = new WeakMap<readonly Endpoint[], { key: string; zone: string; generation: bigint; view: string }>();
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
  private readonly applyViews = new Map<string, object>();
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
   * per (view, form) while the bound allows: callers that ask together share one encoding. For an
   * array the cache did not hand out (a tenant's empty view), `encode` runs each time.
   */
  encoded(endpoints: readonly Endpoint[], form: string, encode: () => Promise<Uint8Array>): Promise<Uint8Array> {
    const v = this.views.get(endpoints);
    if (v === undefined) {
      this.counts.encodes++;
      return encode();
    }
    const key = `e\u0000${v.key}\u0000${form}`;
    const hit = this.encodings.get(key);
    if (hit) {
      this.touch(key);
      return hit;
    }
    this.counts.encodes++;
    const p = encode();
    this.encodings.set(key, p);
    const forget = () => {
      if (this.encodings.get(key) === p) this.encodings.delete(key);
    };
    p.then(
      (bytes) => this.account(key, { kind: 'encoding', zone: v.zone, generation: v.generation, view: v.view, form, bytes: bytes.byteLength, drop: forget }),
      forget,
    );
    return p;
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
   * The apply path's view of the zone (core/reads/zone-memory.ts: `records` records) counts against
   * the bound as the least recently used of what is kept; `drop` forgets it when room is needed (the
   * next apply makes it again). Called again when it grew or was used.
   */
  keepView(zone: string, view: object, records: number, drop: () => void): void {
    const key = viewKey(zone);
    const bytes = records * VIEW_BYTES_PER_RECORD;
    // The same view grown or used: resized in place; another one (made anew): accounted instead.
    if (this.applyViews.get(zone) === view && this.kept.resize(key, bytes)) return;
    this.applyViews.set(zone, view);
    this.kept.add(key, {
      kind: 'view',
      zone,
      generation: -1n,
      bytes,
      drop: () => {
        if (this.applyViews.get(zone) === view) this.applyViews.delete(zone);
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
    return this.latest(this.bases, zone, generation, baseKey, async (entry) => {
      const slicer = new Slicer();
      // Read in one snapshot (only what changed since the kept base, when every generation since was
      // heard with what it changed), then mapped outside it, in slices. A read of the whole zone waits
      // its turn (wholeReads): twenty zones read at once would hold every pooled connection.
      // Whole unless every generation from the kept base to the one asked for was heard with what it
      // changed (a generation past it, met in the snapshot, may still make it whole: rare, and small).
      const whole = !previous || this.heardChanges.get(zone)?.between(previous.generation, generation) === undefined;
      const snapshot = <R>(fn: (q: store.Queryable) => Promise<R>) =>
        whole ? this.wholeReads.run(() => store.withSnapshot(this.pool, fn)) : store.withSnapshot(this.pool, fn);
      const reservation = buildKey(zone);
      try {
        return await this.build(zone, entry, previous, snapshot, reservation, slicer);
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
    const read = await snapshot(async (q) => {
      const current = await store.getZone(q, zone);
      if (!current) throw new Error(`zone "${zone}" vanished from the database`);
      const change = previous && this.heardChanges.get(zone)?.between(previous.generation, current.generation);
      if (!previous || !change) {
        this.kept.reserve(reservation, zone, current.generation, (await store.countZoneRecords(q, zone)) * BUILD_BYTES_PER_RECORD);
        return { whole: await readZoneRows(q, zone, current.generation) };
      }
      const [rows, ownership] = [await store.listRecordsByIds(q, zone, change.ids), await store.listOwnershipForSets(q, zone, change.sets)];
      const [withdrawals, health] = [await store.listWithdrawals(q, zone), await store.listTargetHealth(q, zone)];
      return { generation: current.generation, previous, change: { ...change, rows, ownership, withdrawals, health } };
    });
    let base: ZoneBase;
    if (read.whole) {
      const w = read.whole;
      base = await zoneBaseOf(zone, w.generation, w.rows, w.ownership, slicer, w.withdrawals, w.health);
    } else {
      const patched = await patchBase(read.previous, zone, read.generation, read.change, slicer);
      base = patched.base;
      indexPatchedFrom(read.previous, patched, zone);
      const { generation: g, withdrawals, health } = read.previous;
      this.patchedFrom.set(base, { from: { generation: g, withdrawals, health }, patched });
      this.counts.basePatches++;
    }
    entry.generation = base.generation;
    this.zoneStates.heard(zone, base.generation); // committed: the states kept may move to it
    this.heardChanges.get(zone)?.forgetThrough(base.generation);
    this.counts.baseBuilds++;
    // Built: accounted as what it is, no longer as the reservation of what it would be.
    this.kept.remove(reservation);
    if (this.bases.get(zone) === entry) {
      entry.settled = base;
      this.keepBase(zone, entry, base);
    }
    return base;
  }

  /**
   * The entry of `zone` in `map` at `generation` or later, from memory (shared while it builds), or
   * a new one `build` makes (it sets entry.generation once it knows it); forgotten if it fails.
   */
  private latest<T extends { generation: bigint }>(
    map: Map<string, Entry<T>>,
    zone: string,
    generation: bigint,
    keyOf: (zone: string, generation: bigint) => string,
    build: (entry: Entry<T>) => Promise<T>,
  ): Promise<T> {
    const hit = map.get(zone);
    if (hit && hit.generation >= generation) {
      if (hit.settled) this.touch(keyOf(zone, hit.settled.generation));
      return hit.value;
    }
    const entry = { generation } as Entry<T>;
    entry.value = build(entry);
    entry.value.catch(() => {
      if (map.get(zone) === entry) map.delete(zone);
    });
    map.set(zone, entry);
    return entry.value;
  }

  /** Accounts a base now in `bases`, dropping what was kept of the zone's older generations. */
  private keepBase(zone: string, entry: Entry<ZoneBase>, base: ZoneBase): void {
    const older = this.newest.get(zone);
    if (older === undefined || older < base.generation) {
      this.newest.set(zone, base.generation);
      this.kept.removeOlder(zone, base.generation);
    }
    this.account(baseKey(zone, base.generation), {
      kind: 'base',
      zone,
      generation: base.generation,
      bytes: baseBytes(base),
      drop: () => {
        if (this.bases.get(zone) === entry) this.bases.delete(zone);
      },
    });
  }

  /**
   * The zone's answers at `generation` or later, cut once from its base (shared by concurrent callers)
   * and kept while the bound allows — apart from the base: a base dropped to stay within the bound
   * (or a Plan's) does not make the answers cut again.
   */
  private answersAt(zone: string, generation: bigint): Promise<ZoneAnswers> {
    const previous = this.answers.get(zone)?.settled;
    return this.latest(this.answers, zone, generation, answersKey, async (entry) => {
      const base = await this.baseAtOrAfter(zone, generation);
      entry.generation = base.generation;
      const answers = await this.cut(zone, base, previous);
      if (this.answers.get(zone) === entry) {
        entry.settled = answers;
        const drop = () => {
          if (this.answers.get(zone) === entry) this.answers.delete(zone);
        };
        this.account(answersKey(zone, answers.generation), { kind: 'answers', zone, generation: answers.generation, bytes: answersBytes(answers), drop });
      }
      return answers;
    });
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
    const prefix = `${zone}\u0000${base.generation}`;
    this.views.set(answers.all, { key: `${prefix}\u0000*`, zone, generation: base.generation, view: '*' });
    for (const [owner, list] of answers.byOwner) this.views.set(list, { key: `${prefix}\u0000${owner}`, zone, generation: base.generation, view: owner });
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

/** The apply path's view of the zone (keepView). */
function viewKey(zone: string): string {
  return `v\u0000${zone}`;
}

/** A build of the zone in flight: its reservation (KeptBytes.reserve). */
function buildKey(zone: string): string {
  return `r\u0000${zone}`;
}

function baseKey(zone: string, generation: bigint): string {
  return `b\u0000${zone}\u0000${generation}`;
}

function answersKey(zone: string, generation: bigint): string {
  return `a\u0000${zone}\u0000${generation}`;
}

function answersBytes(a: ZoneAnswers): number {
  // The endpoint objects of `all` (their strings are the base's) and each owner's list.
  return a.all.length * ANSWER_BYTES_PER_ENDPOINT + a.byOwner.size * 100;
}

/** One ReadCache per pool (per database) unless the context brings its own. */
const byPool = new WeakMap<pg.Pool, ReadCache>();

export function readCacheOf(ctx: { pool: pg.Pool; reads?: ReadCache }): ReadCache {
  if (ctx.reads) return ctx.reads;
  let c = byPool.get(ctx.pool);
  if (!c) byPool.set(ctx.pool, (c = new ReadCache(ctx.pool)));
  return c;
}
