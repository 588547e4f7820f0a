/**
 * Per-tenant write quotas (docs/operations.md "Write quotas"): the OVH writes a tenant's applies cause
 * — creates (POST) and updates (PUT); never deletions, never a refresh, never a withdrawal or its
 * restore (those are dnsplane's, not the tenant's) — count against a bucket of `write_burst` writes
 * refilled at `writes_per_day` a day, kept in Postgres so every replica spends from one count
 * (store/write-quota.ts). An apply is judged under the zone lock once it is planned and before
 * anything is sent (core/apply/prepare.ts): over the quota, the zone is refused with
 * WriteQuotaError (ResourceExhausted over Connect, the webhook's soft error, REFUSED at the DNS door)
 * and nothing is sent or counted but the refusal.
 */
import { InvalidInputError } from '../../dns/errors.js';
import type { OvhOperation } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { ResourceExhaustedError } from '../errors.js';
import type { Tenant } from './tenants.js';

/** The largest writes_per_day and write_burst accepted. */
export const MAX_QUOTA = 100_000_000;

/** An apply refused by its tenant's write quota: nothing was sent. */
export class WriteQuotaError extends ResourceExhaustedError {
  constructor(
    message: string,
    readonly tenant: string,
    /** When the bucket holds enough again; absent: never (the apply needs more than the burst). */
    readonly refillAt?: Date,
  ) {
    super(message);
  }
}

/** How many of the operations the quota counts: creates and updates, not deletions. */
export function countedWrites(ops: readonly OvhOperation[]): number {
  let n = 0;
  for (const o of ops) if (o.method !== 'DELETE') n++;
  return n;
}

/**
 * Takes the operations' writes from the tenant's quota; the refusal when it does not hold them
 * (nothing taken), undefined when it does or the tenant has no quota. A tenant without one as it was
 * authenticated (Tenant.writeQuota; a quota set since reaches every replica's cache by NOTIFY
 * dnsplane_tenant) costs no query: the apply holds its zone lock meanwhile, and quotas are off by
 * default. One with a quota is judged by the row itself (turned off since: not counted).
 */
export async function takeWrites(ctx: CoreContext, tenant: Tenant, zone: string, ops: readonly OvhOperation[]): Promise<WriteQuotaError | undefined> {
  const writes = countedWrites(ops);
  if (writes === 0 || !tenant.writeQuota) return undefined;
  const t = await store.takeTenantWrites(ctx.pool, tenant.id, writes);
  if (!t.quota) return undefined;
  if (t.ok) {
    ctx.metrics?.tenantWrites(tenant.name, writes);
    return undefined;
  }
  ctx.metrics?.tenantWriteQuotaRefused(tenant.name);
  const quota = `write quota of tenant "${tenant.name}" (${t.perDay} OVH writes a day, burst ${t.burst})`;
  const left = Math.floor(t.tokens);
  if (writes > t.burst) {
    return new WriteQuotaError(
      `${quota}: this apply in zone ${zone} needs ${writes} writes, more than the burst: it can never pass whole; split it or raise --write-burst. Nothing was sent`,
      tenant.name,
    );
  }
  const refillAt = new Date(Date.now() + Math.ceil(((writes - t.tokens) * 86_400_000) / t.perDay));
  ctx.log.warn({ tenant: tenant.name, zone, writes, left, refillAt }, 'apply refused: write quota');
  return new WriteQuotaError(
    `${quota}: this apply in zone ${zone} needs ${writes} writes and ${left} are left; enough again at ${refillAt.toISOString()}. Nothing was sent (deletions are never counted)`,
    tenant.name,
    refillAt,
  );
}

/** Sets (both given) or turns off (both null) a tenant's write quota, the values checked, naming the flag. */
export async function setWriteQuota(
  q: store.Queryable,
  name: string,
  perDay: number | null,
  burst: number | null,
  fields = { perDay: 'writesPerDay', burst: 'writeBurst' },
): Promise<Tenant> {
  if ((perDay === null) !== (burst === null))
    throw new InvalidInputError(
      perDay === null ? fields.perDay : fields.burst,
      `is required with ${perDay === null ? fields.burst : fields.perDay} (or turn the quota off with both unset)`,
    );
  for (const [v, field] of [
    [perDay, fields.perDay],
    [burst, fields.burst],
  ] as const) {
    if (v !== null && (!Number.isInteger(v) || v < 1 || v > MAX_QUOTA))
      throw new InvalidInputError(field, `must be a whole number from 1 to ${MAX_QUOTA}, got ${v}`);
  }
  try {
    return await store.setTenantWriteQuota(q, name, perDay, burst);
  } catch (e) {
    if (e instanceof store.NotFoundError) throw new store.NotFoundError('tenant', name, `tenant "${name}" does not exist`);
    throw e;
  }
}
