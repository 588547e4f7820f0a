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
 * One copy of a zone per generation: the base (records, record sets, ownership rows) is read from one
 * REPEATABLE READ snapshot once per generation, shared by every concurrent caller, and its answers
 * are cut from it once (ZoneAnswers): the zone as includeForeign shows it, which is the same for
 * every tenant, and each owner's slice of it (the same endpoint objects, indexed by owner), so that
 * a tenant's own answer costs a map lookup and memory in proportion to its own records. The bytes
 * the API writes are encoded once per (view, form) and kept here too (encoded()): every tenant that
 * asks includeForeign is sent the same bytes.
 *
 * Everything kept is accounted in bytes (buffers exactly, objects by an estimate per item) and
 * bounded (maxBytes, DNSPLANE_READ_CACHE_BYTES): past the bound the least recently used is dropped
 * and built again when asked. Dropping only forgets: an answer being sent holds its own reference.
 * A newer generation of a zone drops what was kept of the older ones.
 */
import type pg from 'pg';
import type { Endpoint } from '../../dns/types.js';
import * as store from '../../store/index.js';
import { visibleRecordSetsSteps } from '../ownership/ownership.js';
import { withTargetStates, withWithdrawn } from '../ownership/withdrawn-view.js';
import { withHealthStates } from '../health/view.js';
import { Slicer } from '../slices.js';
import { baseBytes, readZoneRows, zoneBaseOf, type ZoneBase } from './zone-base.js';
import { ZoneStateSource } from './zone-states.js';

/** A tenant's view of a zone at a generation. The endpoints array is shared: never mutate it. */
export interface ZoneView {
  generation: bigint;
  endpoints: readonly Endpoint[];
}

/**
 * The answers of one base, cut once for every tenant. Shared: never mutate them.
 */
export interface ZoneAnswers {
  generation: bigint;
  /** Every record set with labels.owner (shared sets split per owner): the includeForeign answer. */
  all: readonly Endpoint[];
  /** Each owner's endpoints, in the order of `all` and the same objects: a tenant's own answer. */
  byOwner: ReadonlyMap<string, readonly Endpoint[]>;
}

interface Entry<T> {
  generation: bigint;
  value: Promise<T>;
  /** The value once built (a caller that must not wait for a build reads this). */
  settled?: T;
}

/** What the cache keeps, as accounted: a base, a base's answers, or one encoding of one view. */
export interface KeptItem {
  kind: 'base' | 'answers' | 'encoding';
  zone: string;
  generation: bigint;
  /** encoding: the view ('*' for includeForeign, else the tenant) and the form ('connect-json', …). */
  view?: string;
  form?: string;
  bytes: number;
}

interface Kept extends KeptItem {
  drop(): void;
}

/** Counts for tests, the bench and metrics. */
export interface ReadCacheStats {
  /** Bytes accounted now (never above maxBytes once an insertion returns) and the bound. */
  bytes: number;
  maxBytes: number;
  entries: number;
  /** Bases read from Postgres, answers cut from a base, encodings made. */
  baseBuilds: number;
  answerBuilds: number;
  encodes: number;
  /** Items dropped to stay within the bound. */
  evictions: number;
}

/** The default bound: a quarter of the 512 MiB the Kubernetes manifests give a replica. */
export const DEFAULT_READ_CACHE_BYTES = 128 * 2 ** 20;

/** An endpoint with its owner label, and its reference in its owner's list (the estimate beside baseBytes, core/reads/zone-base.ts). */
const ANSWER_BYTES_PER_ENDPOINT = 320;

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
  private readonly lru = new Map<string, Kept>();
  private bytes = 0;
  private readonly maxBytes: number;
  private readonly counts = { baseBuilds: 0, answerBuilds: 0, encodes: 0, evictions: 0 };

  constructor(
    private readonly pool: pg.Pool,
    opts: ReadCacheOptions = {},
  ) {
    this.maxBytes = opts.maxBytes ?? DEFAULT_READ_CACHE_BYTES;
    this.zoneStates = new ZoneStateSource(async () => {
      opts.onZoneStatesRead?.();
      return store.listZoneStates(pool);
    }, opts.listening);
    // The replica that changed a zone sees it at once: every generation bump is made under a zone lock.
    store.onZoneLockEnded(pool, () => this.zoneStates.forget());
  }

  /** Answers cut from a base (misses), for tests and the bench. */
  get builds(): number {
    return this.counts.answerBuilds;
  }

  stats(): ReadCacheStats {
    return { bytes: this.bytes, maxBytes: this.maxBytes, entries: this.lru.size, ...this.counts };
  }

  /** What is kept now, least recently used first (for tests). */
  kepts(): KeptItem[] {
    return [...this.lru.values()].map(({ drop: _, ...item }) => item);
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
    return this.latest(this.bases, zone, generation, baseKey, async (entry) => {
      // Read in one snapshot, then mapped outside it, in slices.
      const read = await store.withSnapshot(this.pool, (q) => readZoneRows(q, zone));
      entry.generation = read.generation;
      this.zoneStates.heard(zone, read.generation); // committed: the states kept may move to it
      this.counts.baseBuilds++;
      const base = await zoneBaseOf(zone, read.generation, read.rows, read.ownership, new Slicer(), read.withdrawals, read.health);
      if (this.bases.get(zone) === entry) {
        entry.settled = base;
        this.keepBase(zone, entry, base);
      }
      return base;
    });
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
      for (const [key, k] of this.lru) if (k.zone === zone && k.generation < base.generation) this.remove(key);
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
    return this.latest(this.answers, zone, generation, answersKey, async (entry) => {
      const base = await this.baseAtOrAfter(zone, generation);
      entry.generation = base.generation;
      const answers = await this.cut(zone, base);
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

  private async cut(zone: string, base: ZoneBase): Promise<ZoneAnswers> {
    const slicer = new Slicer();
    // Owner labels, shared sets split per owner (ownership.ts); with includeForeign nothing depends on the tenant.
    // Withdrawn targets (core/withdrawals/withdrawals.ts) shown to their owners as theirs, with their state.
    const seen = withWithdrawn(zone, base, base.withdrawals);
    const all = withHealthStates(
      withTargetStates(await slicer.run(visibleRecordSetsSteps('', zone, seen.endpoints, base.ownership, seen.recordsByKey, true)), base.withdrawals),
      base.health ?? [],
    );
    const byOwner = new Map<string, Endpoint[]>();
    for (let i = 0; i < all.length; i++) {
      if (i % 1024 === 0) await slicer.check();
      const e = all[i]!;
      const owner = e.labels?.['owner'] ?? '';
      if (owner === '') continue;
      const list = byOwner.get(owner);
      if (list) list.push(e);
      else byOwner.set(owner, [e]);
    }
    this.counts.answerBuilds++;
    const prefix = `${zone}\u0000${base.generation}`;
    this.views.set(all, { key: `${prefix}\u0000*`, zone, generation: base.generation, view: '*' });
    for (const [owner, list] of byOwner) this.views.set(list, { key: `${prefix}\u0000${owner}`, zone, generation: base.generation, view: owner });
    return { generation: base.generation, all, byOwner };
  }

  /**
   * Accounts an item built (replacing the one of the same key), unless its zone has moved to a newer
   * generation meanwhile; then drops the least recently used until the bound holds — the new item
   * too, when it alone is over the bound (its callers have it; the next one builds it again).
   */
  private account(key: string, item: Kept): void {
    const newest = this.newest.get(item.zone);
    if (newest !== undefined && item.generation < newest) {
      item.drop();
      return;
    }
    this.remove(key);
    this.lru.set(key, item);
    this.bytes += item.bytes;
    for (const [k] of this.lru) {
      if (this.bytes <= this.maxBytes) break;
      this.remove(k);
      this.counts.evictions++;
    }
  }

  private remove(key: string): void {
    const k = this.lru.get(key);
    if (!k) return;
    this.lru.delete(key);
    this.bytes -= k.bytes;
    k.drop();
  }

  /** Marks an item as the most recently used. */
  private touch(key: string): void {
    const k = this.lru.get(key);
    if (!k) return;
    this.lru.delete(key);
    this.lru.set(key, k);
  }
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
