/**
 * A token bucket per key: `burst` tokens that refill at `perSecond`; a take spends one when there is
 * one. The per-tenant limit of the served OVH API (ovhapi/tenant-rate.ts) and the per-source limit of
 * the DNS door (dnsserver/limits.ts) both count with it; each bounds how many keys it keeps in its own
 * way. In memory, per process. Imports nothing: any room may use it.
 */
export class KeyedTokenBucket {
  /** By key, the least recently taken first. */
  readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    readonly perSecond: number,
    readonly burst: number,
  ) {}

  /** The tokens `key` has at `now` (ms), refilled since its last take; a key not kept has a full bucket. */
  level(key: string, now: number): number {
    const b = this.buckets.get(key);
    return b ? Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.perSecond) : this.burst;
  }

  /** Spends one of `key`'s tokens at `now` if it has one; `tokens`: what it had. The key is kept, as the most recently taken. */
  take(key: string, now: number): { allowed: boolean; tokens: number } {
    const tokens = this.level(key, now);
    const allowed = tokens >= 1;
    this.buckets.delete(key);
    this.buckets.set(key, { tokens: allowed ? tokens - 1 : tokens, at: now });
    return { allowed, tokens };
  }
}
