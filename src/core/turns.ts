/**
 * At most `limit` of one kind of heavy work at once, the others waiting their turn in order (FIFO):
 * a zone read whole from OVH (first syncs, core/zones/first-syncs.ts), a zone read whole from Postgres
 * (the read cache's bases, core/reads/read-cache.ts). Each of them holds a pooled connection, memory in
 * proportion to its zone, or both, for seconds: unbounded, twenty zones asked at once starve the pool
 * (every other request then waits past the pool's connection timeout and fails) and pile up their
 * memory. A caller that waits holds nothing; it is never refused for waiting.
 */
export class Turns {
  private active = 0;
  private readonly queue: Array<() => void> = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`turns: the limit must be a positive integer, got ${limit}`);
  }

  /** Works running now. */
  get running(): number {
    return this.active;
  }

  /** Callers waiting for their turn. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Runs `fn` once a turn is free; the turn is given back however fn ends. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    await this.take();
    try {
      return await fn();
    } finally {
      this.give();
    }
  }

  private take(): Promise<void> {
    if (this.active < this.limit) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise((resolve) =>
      this.queue.push(() => {
        this.active++;
        resolve();
      }),
    );
  }

  private give(): void {
    this.active--;
    this.queue.shift()?.();
  }
}
