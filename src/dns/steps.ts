/**
 * Long pure computations with pause points. A function written as a generator that yields (nothing)
 * every few dozen items can be run at once (drain) or in slices that let the event loop in between
 * (core/slices.ts Slicer.run), without timers or I/O of its own: the pure rooms (dns/, ovh/ mapping)
 * stay pure, and the API's thread is never held by a zone of 20,000 records.
 */

/** A computation of T with pause points. */
export type Steps<T> = Generator<void, T, void>;

/** Items handled between two pause points, where a step form does not say otherwise. */
export const ITEMS_PER_STEP = 64;

/** Runs steps to the end at once: the synchronous form of a sliced computation. */
export function drain<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * Sorts `items` in place (stable, like Array.prototype.sort) with a pause point every few thousand
 * comparisons: a bottom-up merge sort. Sorting 20,000 record sets in one go is ~10 ms of one block.
 * Items already in order (rows read on a C collation) cost one pass of comparisons and nothing else.
 */
export function* sortSteps<T>(items: T[], compare: (a: T, b: T) => number, perStep = 4096): Steps<T[]> {
  const n = items.length;
  if (n <= perStep) {
    items.sort(compare);
    return items;
  }
  for (let i = 1; ; i++) {
    if (i === n) return items;
    if (compare(items[i - 1]!, items[i]!) > 0) break;
    if (i % perStep === 0) yield;
  }
  // Runs of perStep items sorted natively, then merged pairwise, level by level.
  for (let i = 0; i < n; i += perStep) {
    const run = items.slice(i, i + perStep).sort(compare);
    for (let j = 0; j < run.length; j++) items[i + j] = run[j]!;
    yield;
  }
  let from = items;
  let to = new Array<T>(n);
  let work = 0;
  for (let width = perStep; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let a = lo;
      let b = mid;
      for (let k = lo; k < hi; k++) {
        // Stable: on a tie the left run's item goes first.
        to[k] = a < mid && (b >= hi || compare(from[a]!, from[b]!) <= 0) ? from[a++]! : from[b++]!;
        if (++work % perStep === 0) yield;
      }
    }
    [from, to] = [to, from];
  }
  if (from !== items) for (let k = 0; k < n; k++) items[k] = from[k]!;
  return items;
}
