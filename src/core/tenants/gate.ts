/**
 * The gate of every admin use case: each takes the calling tenant first and refuses it without the
 * `admin` scope (PermissionDenied) before it looks at anything else; and what the admin listings share
 * (page limits, a tenant or a managed zone named by an argument, tenant id -> name).
 */
import { InvalidInputError } from '../../dns/errors.js';
import { normalizeName } from '../../dns/names.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { NotFoundError, PermissionDeniedError } from '../errors.js';
import { isAdmin, type Tenant } from './tenants.js';

/** Default and largest page of a listing. */
export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

/** PermissionDenied unless `actor` holds the admin scope. */
export function requireAdmin(actor: Tenant): void {
  if (!isAdmin(actor)) throw new PermissionDeniedError('', `this call needs the admin scope; tenant "${actor.name}" does not have it`);
}

/** A listing's page size: 0 means the default; otherwise 1 to MAX_LIMIT, or InvalidInput on `field`. */
export function limitOf(limit: number, field = 'limit'): number {
  if (limit === 0) return DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
    throw new InvalidInputError(field, `must be 1-${MAX_LIMIT} (0 means ${DEFAULT_LIMIT}), got ${limit}`);
  return limit;
}

/** The tenant an admin call names in `field`, or InvalidInput (empty) / NotFound. */
export async function tenantNamed(ctx: CoreContext, name: string, field: string): Promise<Tenant> {
  if (name === '') throw new InvalidInputError(field, 'a tenant name is required');
  const t = await store.getTenantByName(ctx.pool, name);
  if (!t) throw new NotFoundError('tenant', name, `tenant "${name}" does not exist`);
  return t;
}

/** Every tenant's id -> name, to show names where rows hold ids. */
export async function tenantNames(ctx: CoreContext): Promise<Map<string, string>> {
  return new Map((await store.listTenants(ctx.pool)).map((t) => [t.id, t.name]));
}

/** `raw` as a zone name dnsplane manages, or InvalidInput on `field`. */
export async function managedZone(ctx: CoreContext, raw: string, field: string): Promise<string> {
  const zone = normalizeName(raw, field);
  if (!(await store.getZone(ctx.pool, zone))) throw new InvalidInputError(field, `"${zone}" is not a zone dnsplane manages`);
  return zone;
}
