/**
 * Long synchronous work cut into slices that yield to the event loop, so that one big request (a
 * Plan of 5,000 endpoints) never holds the process: between two slices, waiting I/O runs — other
 * tenants' calls, `/healthz`, the Postgres and OVH answers of other requests.
 *
 * Why slices and not worker threads: once planning is linear, a 5,000-endpoint Plan is a few tens of
 * milliseconds of CPU; handing its input and output to a worker would cost a structured clone of
 * both on this thread (about as long as the work), every worker would need the TypeScript loader,
 * and the wire encoding of the answer, which Connect does on this thread, would stay here anyway.
 * Slicing keeps one code path, adds a few microseconds per slice, and bounds how long any request
 * runs without letting the others in.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Steps } from '../dns/steps.js';

/** How long one slice may run before it yields (milliseconds). */
export const SLICE_MS = 8;

/**
 * How long all slicers of the process together may run in one turn of the event loop (milliseconds).
 * Each slicer alone keeps to SLICE_MS, but sixty-four requests each running its slice in the same
 * turn held the loop ~0.6 s (bench/estate's poll pass: every tenant's first answer encoded in the turn
 * its request arrived in). So:
 * - a slicer that has not yielded yet (a request just arrived) yields at its first check once the
 *   current turn has run TURN_MS and other slicers wait for the next one — a turn opens at the first
 *   check after the previous one closed and closes in the next check phase (an immediate queued when
 *   it opened); with none waiting it keeps to its own budget, as one request alone always did;
 * - a slicer resumed from a yield runs its share of a turn, TURN_MS divided among it and the slicers
 *   still waiting then, and at least the step it makes before its first check; one alone keeps the
 *   whole of it;
 * - the waiting ones resume in the order they began to wait, each once the ones before it have: one
 *   that resumes while one waiting longer has not, or in a turn already spent, waits for the next
 *   turn, keeping its place — none is passed over, and a turn runs TURN_MS and a step or two in hand,
 *   not a step of every slicer resumed in it (sixty-four answers each writing one chunk in one turn
 *   held bench/estate's pass ~0.3 s); the one waiting longest runs in the second spent turn it meets,
 *   so that new requests spending turn after turn do not starve it.
 */
export const TURN_MS = 8;

/** When the current turn opened (performance.now()), or -1 when none is open. */
let turnOpened = -1;
/** The tickets of the slicers waiting in yield() now, in the order they began to wait (the smallest first). */
const waiting = new Set<number>();
let nextTicket = 0;

function closeTurn(): void {
  turnOpened = -1;
}

/** The milliseconds since the current turn opened (opening one now when none is). */
function turnElapsed(now: number): number {
  if (turnOpened < 0) {
    turnOpened = now;
    setImmediate(closeTurn);
  }
  return now - turnOpened;
}

export class Slicer {
  private since = performance.now();
  /** Its share of the turn it resumed in (milliseconds); undefined until it first yields. */
  private share: number | undefined;
  /** How many times this slicer yielded (for tests and logs). */
  yields = 0;

  constructor(private readonly budgetMs: number = SLICE_MS) {}

  /**
   * Yields to the event loop when the current slice has run its budget, or its share of the turn
   * once it has yielded before, or — not yet yielded — when the turn has run TURN_MS; otherwise
   * returns at once.
   */
  async check(): Promise<void> {
    const now = performance.now();
    const slice = now - this.since;
    // A slicer not yet yielded gives way to the waiting ones once the turn is spent (alone, it keeps to its own budget).
    const giveWay = this.share === undefined ? turnElapsed(now) >= TURN_MS && waiting.size > 0 : slice >= this.share;
    if (slice >= this.budgetMs || giveWay) await this.yield();
  }

  /**
   * Yields to the event loop now (between two phases that may each take a slice), and resumes in a
   * turn not yet spent once every slicer that began to wait before it has resumed.
   */
  async yield(): Promise<void> {
    const ticket = nextTicket++;
    waiting.add(ticket);
    try {
      for (let spentTurnsMet = 0; ; ) {
        await nextTurn();
        if (waiting.values().next().value !== ticket) continue;
        // The longest waiting: it runs in a turn not yet spent, or in the second spent one it meets
        // (requests that arrive turn after turn and spend each one do not starve it).
        if (turnElapsed(performance.now()) < TURN_MS || ++spentTurnsMet >= 2) break;
      }
    } finally {
      waiting.delete(ticket);
    }
    this.yields++;
    this.since = performance.now();
    this.share = TURN_MS / (waiting.size + 1);
  }

  /** Runs steps to the end, yielding to the event loop at their pause points once a slice has run its budget. */
  async run<T>(steps: Steps<T>): Promise<T> {
    for (;;) {
      const r = steps.next();
      if (r.done) return r.value;
      await this.check();
    }
  }

  /** Maps `items` with `fn`, checking the slice every `every` items. */
  async map<T, R>(items: readonly T[], fn: (item: T, index: number) => R, every = 64): Promise<R[]> {
    const out = new Array<R>(items.length);
    for (let i = 0; i < items.length; i++) {
      if (i % every === 0 && i > 0) await this.check();
      out[i] = fn(items[i] as T, i);
    }
    return out;
  }
}

/**
 * JSON.stringify(value), written in slices: long arrays (at least 64 items) item by item, and the
 * members of objects in the top `depth` levels one by one, so that a plan of megabytes is written
 * without one long block. Same text as JSON.stringify for plain data (objects, arrays, strings,
 * numbers, booleans, null; undefined members left out, undefined items written null).
 */
export async function stringifySliced(value: unknown, slicer: Slicer, depth = 2): Promise<string> {
  const deeper = (v: unknown): boolean =>
    depth > 1 && typeof v === 'object' && v !== null && (Array.isArray(v) || typeof (v as { toJSON?: unknown }).toJSON !== 'function');
  if (Array.isArray(value)) {
    if (depth <= 0 && value.length < 64) return JSON.stringify(value);
    const items = new Array<string>(value.length);
    for (let i = 0; i < value.length; i++) {
      if (i % 64 === 0) await slicer.check();
      const item: unknown = value[i];
      // Items are written in one go below the top levels: an await each would cost more than the item.
      items[i] = deeper(item) ? await stringifySliced(item, slicer, depth - 1) : (JSON.stringify(item) ?? 'null');
    }
    return `[${items.join(',')}]`;
  }
  if (depth <= 0 || value === null || typeof value !== 'object' || typeof (value as { toJSON?: unknown }).toJSON === 'function') return JSON.stringify(value);
  const parts: string[] = [];
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const text = deeper(v) || (Array.isArray(v) && v.length >= 64) ? await stringifySliced(v, slicer, depth - 1) : JSON.stringify(v);
    if (text !== undefined) parts.push(`${JSON.stringify(k)}:${text}`);
  }
  return `{${parts.join(',')}}`;
}
