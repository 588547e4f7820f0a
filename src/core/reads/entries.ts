/**
 * The read cache's entries (core/reads/read-cache.ts): per zone, the newest thing built of it (a base,
 * answers), shared while it builds by every caller asking for that generation or an older one.
 */

export interface Entry<T> {
  generation: bigint;
  value: Promise<T>;
  /** The value once built (a caller that must not wait for a build reads this). */
  settled?: T;
  /** Made from what a writer had in hand (ReadCache.adopt): it needs no database connection. */
  adopted?: boolean;
}

/**
 * The entry of `zone` in `map` at `generation` or later, from memory (shared while it builds; `hit`
 * told of a built one), or a new one `build` makes (it sets entry.generation once it knows it);
 * forgotten if it fails.
 */
export function latestEntry<T extends { generation: bigint }>(
  map: Map<string, Entry<T>>,
  zone: string,
  generation: bigint,
  hit: (zone: string, generation: bigint) => void,
  build: (entry: Entry<T>) => Promise<T>,
): Promise<T> {
  const found = map.get(zone);
  if (found && found.generation >= generation) {
    if (found.settled) hit(zone, found.settled.generation);
    return found.value;
  }
  const entry = { generation } as Entry<T>;
  entry.value = build(entry);
  entry.value.catch(() => {
    if (map.get(zone) === entry) map.delete(zone);
  });
  map.set(zone, entry);
  return entry.value;
}
