/**
 * Sorted arrays patched without sorting them again: what lets a zone's base and answers of a new
 * generation be made from the previous one's (core/reads/base-patch.ts, core/reads/answers.ts) at the
 * cost of copying references, with work per item only for what changed.
 */

/** The first index of `sorted` whose item is not before `probe`. */
export function lowerBound<T, P>(sorted: readonly T[], probe: P, compare: (item: T, probe: P) => number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compare(sorted[mid]!, probe) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The items of `sorted` whose key compares equal to `key` (a run: they are next to each other). */
export function runOf<T, K>(sorted: readonly T[], key: K, compare: (item: T, key: K) => number): T[] {
  const out: T[] = [];
  for (let i = lowerBound(sorted, key, compare); i < sorted.length && compare(sorted[i]!, key) === 0; i++) out.push(sorted[i]!);
  return out;
}

/**
 * `old` (sorted by `compare`) without the items whose key is one of `keys`, with `fresh` (sorted; every
 * item's key one of `keys`) merged in at its place. `keyCompare` orders items and keys by key alone:
 * items of one key are a run, kept in their own order.
 */
export function replaceRuns<T, K>(old: readonly T[], keys: readonly K[], fresh: readonly T[], keyCompare: (item: T, key: K | T) => number): T[] {
  const out: T[] = [];
  walkReplacedRuns(old, keys, fresh, keyCompare, (from, i) => out.push(from === 'old' ? old[i]! : fresh[i]!));
  return out;
}

/**
 * replaceRuns's walk: `take` is told, in the result's order, each item it keeps — from `old` or from
 * `fresh`, by its place there (so that arrays kept beside them follow: core/reads/set-records.ts).
 */
export function walkReplacedRuns<T, K>(
  old: readonly T[],
  keys: readonly K[],
  fresh: readonly T[],
  keyCompare: (item: T, key: K | T) => number,
  take: (from: 'old' | 'fresh', i: number) => void,
): void {
  let j = 0;
  let k = 0;
  for (let i = 0; i < old.length; i++) {
    const item = old[i]!;
    while (j < keys.length && keyCompare(item, keys[j]!) > 0) j++;
    if (j < keys.length && keyCompare(item, keys[j]!) === 0) continue;
    while (k < fresh.length && keyCompare(item, fresh[k]!) > 0) take('fresh', k++);
    take('old', i);
  }
  while (k < fresh.length) take('fresh', k++);
}

/** Two arrays sorted by `compare`, merged (on a tie, `a`'s item first). */
export function mergeSorted<T>(a: readonly T[], b: readonly T[], compare: (x: T, y: T) => number): T[] {
  const out: T[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) out.push(compare(a[i]!, b[j]!) <= 0 ? a[i++]! : b[j++]!);
  while (i < a.length) out.push(a[i++]!);
  while (j < b.length) out.push(b[j++]!);
  return out;
}
