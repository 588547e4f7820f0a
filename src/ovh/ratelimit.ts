import { createHash } from 'node:crypto';

/** What acquire() hands back: the whole wait, and when the token was granted (on the limiter's clock). */
export interface Grant {
  waitedMs: number;
  /**
   * The limiter's `now()` at the moment it gave this call its token: the point where the rate is
   * decided. Two grants are never closer than 1/rate on this clock, whatever happens to the call after.
   */
  grantedAt: number;
}

/**
 * A token bucket and a bound on calls in flight. The bucket holds at most one token and refills at
 * `ratePerSecond`, so calls start at least 1/rate apart — no burst: "20 per second" is what OVH sees
 * in every window, not 20 at once then a pause. A call takes its concurrency slot first, then waits
 * for its token; acquire() returns the whole wait, which the client reports (metrics), and the grant
 * time, which it reports too (the rate tests assert on it: delivery delays after the grant are the
 * network's and the scheduler's, not the limiter's).
 * One limiter per OVH application key is shared by every zone in the process (limiterFor).
 */
export class RateLimiter {
  private tokens: number;
  private last: number;
  private queue: Array<(grantedAt: number) => void> = [];
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  private slotWaiters: Array<() => void> = [];

  constructor(
    readonly ratePerSecond: number,
    readonly maxConcurrent: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!(ratePerSecond > 0)) throw new Error('rate must be > 0');
    if (!(maxConcurrent >= 1)) throw new Error('maxConcurrent must be >= 1');
    this.tokens = 1;
    this.last = this.now();
  }

  /** Waits for a concurrency slot and a token; returns the wait and the grant time. Call release() after. */
  async acquire(): Promise<Grant> {
    const start = this.now();
    if (this.inFlight >= this.maxConcurrent) {
      await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
    }
    this.inFlight++;
    const grantedAt = await this.takeToken();
    return { waitedMs: grantedAt - start, grantedAt };
  }

  release(): void {
    this.inFlight--;
    const next = this.slotWaiters.shift();
    if (next) next();
  }

  /** Returns the time it refilled at. */
  private refill(): number {
    const t = this.now();
    // Burst capacity of one token: calls are spaced 1/rate apart, which is what "N per second" means to OVH.
    this.tokens = Math.min(1, this.tokens + ((t - this.last) / 1000) * this.ratePerSecond);
    this.last = t;
    return t;
  }

  private takeToken(): Promise<number> {
    const t = this.refill();
    if (this.queue.length === 0 && this.tokens >= 1) {
      this.tokens -= 1;
      return Promise.resolve(t);
    }
    return new Promise<number>((resolve) => {
      this.queue.push(resolve);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.timer || this.queue.length === 0) return;
    this.refill();
    const wait = Math.max(0, ((1 - this.tokens) / this.ratePerSecond) * 1000);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const t = this.refill();
      while (this.queue.length > 0 && this.tokens >= 1) {
        this.tokens -= 1;
        this.queue.shift()!(t);
      }
      this.schedule();
    }, Math.ceil(wait));
    this.timer.unref?.();
  }
}

const limiters = new Map<string, RateLimiter>();

/** The process-wide limiter of one OVH application key (the key itself is not kept, only a label). */
export function limiterFor(key: string, ratePerSecond: number, maxConcurrent: number): RateLimiter {
  const id = `${createHash('sha256').update(key).digest('hex')}|${ratePerSecond}|${maxConcurrent}`;
  let l = limiters.get(id);
  if (!l) {
    l = new RateLimiter(ratePerSecond, maxConcurrent);
    limiters.set(id, l);
  }
  return l;
}
