import { KeyedTokenBucket } from '../token-bucket.js';

/**
 * Requests per tenant, limited: each tenant has a bucket of `burst` requests that refills at
 * `perSecond`; once it is empty, that tenant's requests are refused (the door answers 429 with
 * Retry-After) until it has regained one. One tenant's tools, however misconfigured, spend only its own
 * bucket: the other tenants' requests never wait for them. Used by the OVH API dnsplane serves
 * (DNSPLANE_OVH_API_RATE, _BURST); the OVH calls those requests lead to share the account's budget
 * fairly per tenant besides (ovh/ratelimit.ts).
 *
 * In memory, per process: behind N replicas a tenant gets up to N times the rate. Bounded: at most
 * `maxTenants` buckets are kept (full ones are dropped first; a tenant unseen long enough is full).
 */
export class TenantRateLimiter {
  private readonly bucket: KeyedTokenBucket;

  constructor(
    private readonly perSecond: number,
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
