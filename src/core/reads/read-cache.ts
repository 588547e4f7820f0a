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
import type { Endpoint, RecordSetKey } from '../../dns/types.js';
import { recordsToEndpointsSteps } from '../../ovh/mapping.js';
import type { OvhRecord } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import { visibleRecordSetsSteps } from '../ownership/ownership.js';
import { withTargetStates, withWithdrawn } from '../ownership/withdrawn-view.js';
import { withHealthStates } from '../health/view.js';
import { Slicer } from '../slices.js';

/**
 * Coalesces a read: get() resolves with the result of a read that started at or after the call.
 * While one read runs, every new caller waits for the next one, which starts when it ends: at most
 * one read runs at a time and each caller waits at most about two reads.
 *
 * The next read starts in the check phase after the current one ends (setImmediate), not in the
 * microtask that sees it end: requests whose bytes arrived in the same turn of the event loop as the
 * read's answer are handled first and share it, instead of each waiting for a read of its own
 * (under load that halves the reads per request; a caller waits at most one more loop turn).
 */
export class FreshRead<T> {
  private running: Promise<T> | undefined;
  private queued: Promise<T> | undefined;
  /** Reads started (for tests and metrics). */
  reads = 0;

  constructor(private readonly read: () => Promise<T>) {}

  get(): Promise<T> {
    // A queued read has not started yet: it is fresh for this caller too.
    if (this.queued) return this.queued;
    if (!this.running) return this.start();
    const after = this.running.then(
      () => new Promise<void>((resolve) => setImmediate(resolve)),
      () => new Promise<void>((resolve) => setImmediate(resolve)),
    );
    this.queued = after.then(() => {
      this.queued = undefined;
      return this.start();
    });
    return this.queued;
  }

  private start(): Promise<T> {
    this.reads++;
    const p: Promise<T> = this.read().finally(() => {
      if (this.running === p) this.running = undefined;
    });
    this.running = p;
    return p;
  }
}

type States = Map<string, store.ZoneGeneration>;

/**
 * The current generation and state of every zone, as this replica knows them (issue 28: a
 * not-modified poll without a query of its own).
 *
 * While `trusted()` says the LISTEN connection is live (store/notify.ts: connected, a heartbeat
 * answered within 2 × 250 ms), the zones' states are kept in memory: read from Postgres once, then
 * moved by every `NOTIFY dnsplane_zone` (heard) and by every base read from a committed snapshot. A
 * change committed on another replica is seen once its NOTIFY arrived here; the replica that made a
 * change sees it at once, since each zone lock's transaction that ends here (store.onZoneLockEnded:
 * every generation bump is made under one) makes the next caller read Postgres. Otherwise —
 * the listener lost or silent, or not yet read since it came back, or a NOTIFY of a zone it does not
 * hold as synced (a new zone, a first sync) — every caller gets a fresh read (FreshRead: shared, never
 * one that started before the caller arrived), as before. `fresh()` forces one (a caller that says it
 * has a generation newer than the one known here: core/reads/records.ts).
 */
export class ZoneStateSource {
  private readonly read: FreshRead<States>;
  /** The states, when trusted (undefined: the next caller reads Postgres). */
  private known: States | undefined;
  /** The highest generation heard of each zone (NOTIFY, a snapshot's read): committed, so always safe to move to. */
  private readonly heardMax = new Map<string, bigint>();
  /** Bumped when the listener is lost or back, and when a zone lock ended here: a read in flight across it is not kept. */
  private epoch = 0;

  constructor(
    readStates: () => Promise<store.ZoneGeneration[]>,
    private readonly trusted: () => boolean = () => false,
  ) {
    this.read = new FreshRead(async () => {
      const epoch = this.epoch;
      const states: States = new Map((await readStates()).map((z) => [z.name, z]));
      if (epoch === this.epoch && this.trusted()) this.known = this.merged(states);
      return states;
    });
  }

  /** Fresh reads started (tests and metrics). */
  get reads(): number {
    return this.read.reads;
  }

  /** The states kept in memory, when they may be trusted now; undefined: read them (get, fresh). */
  now(): ReadonlyMap<string, store.ZoneGeneration> | undefined {
    if (this.known === undefined) return undefined;
    if (!this.trusted()) {
      this.known = undefined;
      return undefined;
    }
    return this.known;
  }

  /** The states: from memory while trusted (now), else a fresh read. */
  get(): Promise<ReadonlyMap<string, store.ZoneGeneration>> {
    const known = this.now();
    return known ? Promise.resolve(known) : this.read.get();
  }

  /** A read of Postgres that started after this call (and keeps the states in memory again, when trusted). */
  fresh(): Promise<ReadonlyMap<string, store.ZoneGeneration>> {
    return this.read.get();
  }

  /**
   * The zone's generation, as a NOTIFY or a committed snapshot told it: the states kept move to it. A
   * zone not kept as synced (new, never synced) makes the next caller read Postgres instead.
   */
  heard(zone: string, generation: bigint): void {
    if ((this.heardMax.get(zone) ?? -1n) < generation) this.heardMax.set(zone, generation);
    const known = this.known;
    if (known === undefined) return;
    const z = known.get(zone);
    if (z === undefined || z.state !== 'synced') {
      this.known = undefined;
      return;
    }
    if (z.generation >= generation) return;
    // A new map: a caller holding the old one (one request's read) keeps what it read.
    this.known = new Map(known).set(zone, { ...z, generation });
  }

  /** The listener was lost or is back (notifications may have been missed), or this replica changed a zone: read Postgres next. */
  forget(): void {
    this.epoch++;
    this.known = undefined;
  }

  /** A read (just made, not shared yet) moved to what was heard meanwhile; undefined when that cannot be told (a zone not synced in it). */
  private merged(states: States): States | undefined {
    for (const [zone, g] of this.heardMax) {
      const z = states.get(zone);
      if (z === undefined || g <= z.generation) continue;
      if (z.state !== 'synced') return undefined;
      states.set(zone, { ...z, generation: g });
    }
    return states;
  }
}

/**
 * One zone as a snapshot saw it: the base every view of the zone at that generation is cut from, and
 * what a Plan diffs against (core/plan/plan.ts). Shared: never mutate it.
 */
export interface ZoneBase {
  generation: bigint;
  records: OvhRecord[];
  /** The records of each record set (RecordMapping.recordsByKey). */
  recordsByKey: ReadonlyMap<RecordSetKey, readonly OvhRecord[]>;
  endpoints: Endpoint[];
  ownership: store.OwnershipRow[];
  /**
   * The withdrawn targets (core/withdrawals/withdrawals.ts): owned, not on OVH, so not in records/endpoints (what
   * the DNS door and the served OVH API's published listing show); Plans and Records add them back
   * for their owners (core/ownership/withdrawn-view.ts).
   */
  withdrawals: store.WithdrawalRow[];
  /** The checked targets' states (core/health/): Records shows them (core/health/view.ts). */
  health?: store.TargetHealthRow[];
}

/** The characters of a base's record strings, counted while it was made (baseBytes without a pass of its own). */
const textChars = new WeakMap<ZoneBase, number>();

/** A zone's records and ownership rows (withdrawn targets and their health), as read, made a ZoneBase in slices (a zone may hold 50,000 records). */
export async function zoneBaseOf(
  zone: string,
  generation: bigint,
  rows: readonly store.RecordRow[],
  ownership: store.OwnershipRow[],
  slicer: Slicer,
  withdrawals: store.WithdrawalRow[] = [],
  health: store.TargetHealthRow[] = [],
): Promise<ZoneBase> {
  let chars = 0;
  const records = await slicer.map(
    rows,
    (r): OvhRecord => {
      chars += r.subDomain.length + r.target.length;
      return { ...r, zone };
    },
    256,
  );
  const { endpoints, recordsByKey } = await slicer.run(recordsToEndpointsSteps(records, zone));
  const base = { generation, records, recordsByKey, endpoints, ownership, withdrawals, health };
  textChars.set(base, chars);
  return base;
}

/** Reads a zone's base from `q` (a snapshot, or a transaction that sees its own changes). */
export async function readZoneBase(q: store.Queryable, zone: string, slicer: Slicer): Promise<ZoneBase> {
  const read = await readZoneRows(q, zone);
  return zoneBaseOf(zone, read.generation, read.rows, read.ownership, slicer, read.withdrawals, read.health);
}

/**
 * What a base is made of, as `q` sees it: the generation, the records and the ownership rows, read
 * a page at a time (inside a transaction: a cursor), so that 50,000 rows are never parsed in one block;
 * and the withdrawn targets and the targets' health (small tables).
 */
async function readZoneRows(
  q: store.Queryable,
  zone: string,
): Promise<{
  generation: bigint;
  rows: store.RecordRow[];
  ownership: store.OwnershipRow[];
  withdrawals: store.WithdrawalRow[];
  health: store.TargetHealthRow[];
}> {
  const current = await store.getZone(q, zone);
  if (!current) throw new Error(`zone "${zone}" vanished from the database`);
  const rows: store.RecordRow[] = [];
  await store.listRecordsInPages(q, zone, (page) => void rows.push(...page));
  const ownership: store.OwnershipRow[] = [];
  await store.listOwnershipInPages(q, zone, (page) => void ownership.push(...page));
  return { generation: current.generation, rows, ownership, withdrawals: await store.listWithdrawals(q, zone), health: await store.listTargetHealth(q, zone) };
}

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

/*
 * Estimates of what the objects of a base and of its answers hold on V8's heap, per item, beyond the
 * characters of their strings (measured with bench/reads-scale.ts's zone: heap used before and after
 * building, after a GC). An estimate, not a measure: the bound is of the right size, not exact.
 */
const BASE_BYTES_PER_RECORD = 650;
const BASE_BYTES_PER_OWNERSHIP_ROW = 290;
/** An endpoint with its owner label, and its reference in its owner's list. */
const ANSWER_BYTES_PER_ENDPOINT = 320;

function baseBytes(b: ZoneBase): number {
  let chars = textChars.get(b);
  if (chars === undefined) {
    chars = 0;
    for (const r of b.records) chars += r.subDomain.length + r.target.length;
  }
  return b.records.length * BASE_BYTES_PER_RECORD + b.ownership.length * BASE_BYTES_PER_OWNERSHIP_ROW + 2 * chars;
}

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
