/**
 * The token cache filled ahead of the calls: every enabled tenant's valid tokens (their hashes), read
 * once when this replica starts listening to tenant changes and again whenever it missed some (the
 * LISTEN connection back), and a tenant's own again whenever it changes (NOTIFY dnsplane_tenant: a
 * tenant created, its token rotated, it enabled). So while the cache is trusted it knows every valid
 * token, not only those that called this replica before: a good cluster's first call needs no round
 * trip to Postgres, and it passes an address the login limiter holds (behind one ingress, next to a
 * cluster retrying a stale token) as every other known credential does (core/tenants/login-limiter.ts).
 *
 * Bounded by the cache: at most half its entries' worth of tenants (each may have two valid tokens in
 * a rotation's grace), the most recently seen first; the others are found on their first call as before.
 */
import type { Queryable } from '../../store/index.js';
import * as store from '../../store/index.js';
import type { TokenCache } from './tenants.js';

/**
 * Puts the valid tokens of every enabled tenant (or of the tenant `name`) into the cache. Answers how
 * many tenants' tokens were put there: 0 when the cache is not trusted; a tenant changed while this
 * read is left out (the change's own notification warms it again).
 */
export async function warmTokenCache(q: Queryable, cache: TokenCache, name?: string): Promise<number> {
  if (!cache.trusted()) return 0;
  const epoch = cache.epoch;
  const rows = await store.listTenantTokens(q, { ...(name !== undefined ? { name } : {}), limit: Math.floor(cache.maxEntries / 2) - 1 });
  let kept = 0;
  for (const r of rows) {
    if (!cache.setUnlessChanged(r.current.toString('hex'), r.tenant, epoch)) continue;
    if (r.previous) cache.setUnlessChanged(r.previous.hash.toString('hex'), r.tenant, epoch, r.previous.validUntil);
    kept++;
  }
  return kept;
}
