/**
 * Bounded shutdown (SIGTERM). server/server.ts calls beginShutdown(timeout) once the listeners stop
 * accepting; from then on:
 * - a new apply is refused (ShuttingDownError, Unavailable);
 * - an apply under way keeps going while it could still undo what it did before the deadline: before
 *   each operation and before its refresh it asks shouldStop(time it has spent sending), which turns
 *   true once now + 2 × that time (the undo, at worst as slow as the doing, and a margin) reaches the
 *   deadline; it then stops, undoes what it did, journals it and answers Unavailable;
 * - past the deadline no OVH write leaves at all (the zone fence refuses it): an undo cut there
 *   leaves its journal row in flight for the zone's next lock holder, nothing published;
 * - settled() lets server/server.ts wait for every tracked task (applies, background recoveries) before it
 *   ends the pools, so nothing uses a pool after it ended.
 * The deadline is 80% of DNSPLANE_SHUTDOWN_TIMEOUT: the rest is for answering and closing.
 */
export class Lifecycle {
  private stoppingAt: number | undefined;
  private deadline = Number.POSITIVE_INFINITY;
  private readonly running = new Set<Promise<unknown>>();
  private readonly stopListeners = new Set<() => void>();

  get stopping(): boolean {
    return this.stoppingAt !== undefined;
  }

  /** Ms left before no write may leave any more (Infinity while not stopping). */
  remainingMs(): number {
    return this.deadline - performance.now();
  }

  beginShutdown(timeoutMs: number): void {
    if (this.stoppingAt !== undefined) return;
    this.stoppingAt = performance.now();
    this.deadline = this.stoppingAt + timeoutMs * 0.8;
    for (const l of this.stopListeners) l();
  }

  /** Called once when shutdown begins (e.g. to cancel a background wait). Returns the unsubscribe. */
  onStop(fn: () => void): () => void {
    if (this.stopping) {
      fn();
      return () => undefined;
    }
    this.stopListeners.add(fn);
    return () => this.stopListeners.delete(fn);
  }

  /** Whether an apply that has spent `spentMs` sending should stop now, while its undo still fits. */
  shouldStop(spentMs: number): boolean {
    if (!this.stopping) return false;
    return performance.now() + 2 * spentMs + 500 >= this.deadline;
  }

  /** Past the deadline: no OVH write may leave. */
  get pastDeadline(): boolean {
    return performance.now() >= this.deadline;
  }

  /** Keeps `p` among the work shutdown waits for. */
  track<T>(p: Promise<T>): Promise<T> {
    this.running.add(p);
    const done = () => this.running.delete(p);
    p.then(done, done);
    return p;
  }

  /** Resolves once every tracked task settled, or after `maxMs`; true when all settled. */
  async settled(maxMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, maxMs))));
    try {
      while (this.running.size > 0) {
        const all = Promise.allSettled([...this.running]).then(() => true as const);
        if (!(await Promise.race([all, timeout]))) return false;
      }
      return true;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Sleeps `ms`, or less when shutdown begins meanwhile; resolves true when it slept the whole time. */
export function sleepUnlessStopping(lifecycle: Lifecycle | undefined, ms: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    let off: () => void = () => undefined;
    const timer = setTimeout(() => {
      off();
      resolve(true);
    }, ms);
    if (lifecycle) {
      off = lifecycle.onStop(() => {
        clearTimeout(timer);
        resolve(false);
      });
    }
  });
}
