/**
 * A token bucket per key: `burst` tokens that refill at `perSecond`; a take spends one when there is
 * one. The per-tenant limits (TenantRateLimiter below: the served OVH API, the DNS door's UPDATEs) and
 * the per-source limit of the DNS door (dnsserver/limits.ts) count with it; each bounds how many keys
 * it keeps in its own way. In memory, per process. Imports nothing: any room may use it.
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

/**
 * Requests per tenant, limited: each tenant has a bucket of `burst` requests that refills at
 * `perSecond`; once it is empty, that tenant's requests are refused (the door answers 429 with
 * Retry-After, the DNS door REFUSED) until it has regained one. One tenant's tools, however
 * misconfigured, spend only its own bucket: the other tenants' requests never wait for them, wherever
 * they come from (behind one ingress or NAT too). Used by the OVH API dnsplane serves
 * (DNSPLANE_OVH_API_RATE, _BURST) and the DNS door's UPDATEs (DNSPLANE_DNS_UPDATE_RATE, _BURST); the
 * OVH calls those requests lead to share the account's budget fairly per tenant besides (ovh/ratelimit.ts).
 *
 * In memory, per process: behind N replicas a tenant gets up to N times the rate. Bounded: at most
 * `maxTenants` buckets are kept (full ones are dropped first; a tenant unseen long enough is full).
 */
export class TenantRateLimiter {
  private readonly bucket: KeyedTokenBucket;

  constructor(
    readonly perSecond: number,
    private readonly burst: number,
    private readonly clock: () => number = Date.now,
    private readonly maxTenants = 10_000,
  ) {
    if (!(perSecond > 0) || !(burst >= 1))
      throw new RangeError(`a rate limit needs a positive rate and a burst of at least 1 (got ${perSecond}/s, burst ${burst})`);
    this.bucket = new KeyedTokenBucket(perSecond, burst);
  }

  /** Takes one request of the tenant's: undefined to go on, else the whole seconds to wait first. */
  take(tenant: string): number | undefined {
    const now = this.clock();
    if (!this.bucket.buckets.has(tenant) && this.bucket.buckets.size >= this.maxTenants) this.prune(now);
    const { allowed, tokens } = this.bucket.take(tenant, now);
    return allowed ? undefined : Math.max(1, Math.ceil((1 - tokens) / this.perSecond));
  }

  /** Drops the buckets that are full by now (their tenants would start afresh with a full one anyway). */
  private prune(now: number): void {
    const { buckets } = this.bucket;
    for (const t of [...buckets.keys()]) if (this.bucket.level(t, now) >= this.burst) buckets.delete(t);
    if (buckets.size >= this.maxTenants) buckets.clear();
  }
}
