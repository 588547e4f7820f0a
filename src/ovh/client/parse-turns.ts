/**
 * Large OVH answers parsed a few per turn of the event loop. A zone's listing asks its pages at once
 * (expanded-lists.ts: 5,000 records a page, ~0.9 MB of JSON, ~12 ms to parse) and they arrive
 * together: parsed in the turn they arrive, ten pages held the loop ~150 ms (bench/estate's cold start,
 * twenty zones read at once). An answer is handled at once while the current turn has parsed less than
 * CHARS_PER_TURN (and always when it is the turn's first), else in a later turn, in arrival order. A
 * turn is an iteration of the loop, its I/O and its check phase together: the timers run only between
 * iterations, so a page parsed as it arrived and another in the check phase right after were one block.
 * Small answers (every call but a listing's pages) go straight through while nothing waits. A handler
 * settles its own request and does not throw (signed-request.ts catches its parse).
 */

/** What a turn parses before later answers wait for the next one (characters of JSON). */
export const CHARS_PER_TURN = 512 * 1024;

/** Characters parsed in the current turn (an iteration of the loop: its I/O, then its check phase). */
let parsed = 0;
/** Of which handled as they arrived: in this iteration's I/O, before its check phase, no timers between. */
let parsedAtOnce = 0;
let resetQueued = false;
const waiting: Array<{ chars: number; handle: () => void }> = [];

/** Calls `handle` (which parses an answer of `chars` characters) now, or in a later turn when this one has parsed enough. */
export function inParseTurn(chars: number, handle: () => void): void {
  if (waiting.length === 0 && fits(chars)) {
    take(chars);
    parsedAtOnce += chars;
    handle();
    return;
  }
  waiting.push({ chars, handle });
  queueReset();
}

function fits(chars: number): boolean {
  return parsed === 0 || parsed + chars <= CHARS_PER_TURN;
}

function take(chars: number): void {
  parsed += chars;
  queueReset();
}

function queueReset(): void {
  if (resetQueued) return;
  resetQueued = true;
  setImmediate(newTurn);
}

/**
 * A new turn (the check phase after this iteration's I/O): what waits is handled while it fits. What
 * was parsed as it arrived in this iteration's I/O counts in the new turn's share too — the timers do
 * not run between the two, and a page parsed there and another here held the loop twice as long
 * (bench/estate's cold start) — so the next page waits for the check phase of the next iteration.
 */
function newTurn(): void {
  resetQueued = false;
  parsed = parsedAtOnce;
  while (waiting.length > 0 && fits(waiting[0]!.chars)) {
    const next = waiting.shift()!;
    take(next.chars);
    next.handle();
  }
  // The timers run next: the next iteration's I/O starts a turn of its own.
  parsed = 0;
  parsedAtOnce = 0;
  if (waiting.length > 0) queueReset();
}
