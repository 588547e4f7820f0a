/**
 * What the read cache keeps (core/reads/read-cache.ts), accounted in bytes and bounded: bases, answers
 * and encodings, each with its estimated or exact size, least recently used first. Past the bound the
 * least recently used are dropped (their `drop` forgets them in the cache's maps); dropping only
 * forgets: a caller that holds an item keeps its own reference.
 */

/**
 * What the cache keeps, as accounted: a base, a base's answers, one encoding of one view — or a build
 * in flight (a zone being read whole: what it will take once built, reserved while it is made, so
 * that twenty zones built at once are within the bound too) — or the apply path's view of a zone
 * (core/reads/zone-memory.ts), which counts against the same bound.
 */
export interface KeptItem {
  kind: 'base' | 'answers' | 'encoding' | 'build' | 'view';
  zone: string;
  generation: bigint;
  /** encoding: the view ('*' for includeForeign, else the tenant) and the form ('connect-json', …). */
  view?: string;
  form?: string;
  bytes: number;
}

export interface Kept extends KeptItem {
  /** Forgets it; `evicted`: dropped to stay within the bound (not replaced, nor superseded by a newer generation). */
  drop(evicted?: boolean): void;
}

export class KeptBytes {
  private readonly lru = new Map<string, Kept>();
  private total = 0;
  /** Items dropped to stay within the bound. */
  evictions = 0;

  constructor(readonly maxBytes: number) {}

  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.lru.size;
  }

  /** What is kept, least recently used first. */
  items(): KeptItem[] {
    return [...this.lru.values()].map(({ drop: _, ...item }) => item);
  }

  /**
   * Keeps an item (replacing the one of the same key), then drops the least recently used until the
   * bound holds — the new item too, when it alone is over the bound (its callers have it; the next one
   * builds it again).
   */
  add(key: string, item: Kept): void {
    this.remove(key);
    this.lru.set(key, item);
    this.total += item.bytes;
    this.shrink();
  }

  /**
   * Drops the least recently used until the bound holds, but never a build in flight (its memory is
   * taken either way) nor `spare`.
   */
  private shrink(spare?: string): void {
    for (const [k, item] of this.lru) {
      if (this.total <= this.maxBytes) break;
      if (k === spare || item.kind === 'build') continue;
      this.evictions++;
      this.remove(k, true);
    }
  }

  remove(key: string, evicted = false): void {
    const k = this.lru.get(key);
    if (!k) return;
    this.lru.delete(key);
    this.total -= k.bytes;
    k.drop(evicted);
  }

  /**
   * Reserves `bytes` for a build of the zone in flight (dropping the least recently used to make
   * room, as add does); give it back with remove(key) once the build is accounted or has failed. A
   * reservation itself is never dropped to make room: its build's memory is taken either way.
   */
  reserve(key: string, zone: string, generation: bigint, bytes: number): void {
    this.add(key, { kind: 'build', zone, generation, bytes, drop: () => undefined });
  }

  /** Drops what is kept of the zone's generations before `generation`. */
  removeOlder(zone: string, generation: bigint): void {
    // A build is not dropped (its memory is taken either way), nor the apply path's view of the zone
    // (kept current by the applies themselves: its generation here is not its own).
    for (const [key, k] of this.lru) if (k.zone === zone && k.generation < generation && k.kind !== 'build' && k.kind !== 'view') this.remove(key);
  }

  /**
   * An item kept is now `bytes` (it grew or shrank in place) and the most recently used; the least
   * recently used others are dropped while over the bound. False when it is not kept.
   */
  resize(key: string, bytes: number): boolean {
    const k = this.lru.get(key);
    if (!k) return false;
    this.total += bytes - k.bytes;
    k.bytes = bytes;
    this.touch(key);
    this.shrink(key);
    return true;
  }

  /** Marks an item as the most recently used. */
  touch(key: string): void {
    const k = this.lru.get(key);
    if (!k) return;
    this.lru.delete(key);
    this.lru.set(key, k);
  }
}

/** What the read cache keys its items by (core/reads/read-cache.ts). */
export const baseKey = (zone: string, generation: bigint): string => `b\u0000${zone}\u0000${generation}`;
export const answersKey = (zone: string, generation: bigint): string => `a\u0000${zone}\u0000${generation}`;
/** A build of the zone in flight: its reservation (reserve). */
export const buildKey = (zone: string): string => `r\u0000${zone}`;
/** The apply path's view of the zone (ReadCache.keepView). */
export const viewKey = (zone: string): string => `v\u0000${zone}`;
