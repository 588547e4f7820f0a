/**
 * The tenant use cases of AdminService: create, list, rotate a token, disable or enable, a tenant's
 * own change threshold. Each refuses a caller without the admin scope first (tenants/gate.ts).
 */
import { InvalidInputError } from '../../dns/errors.js';
import type { CoreContext } from '../context.js';
import { requireAdmin } from '../tenants/gate.js';
import {
  setTenantMaxChangePercent as runSetMaxChange,
  createTenantInManagedZones,
  listTenants as runListTenants,
  rotateTenantToken as runRotate,
  setTenantDisabled,
  type NewTenant,
  type Tenant,
} from '../tenants/tenants.js';

export async function createTenant(ctx: CoreContext, actor: Tenant, input: NewTenant): Promise<{ tenant: Tenant; token: string }> {
  requireAdmin(actor);
  const { registered, ...created } = await createTenantInManagedZones(ctx.pool, input, { configured: ctx.settings.zones, listOvh: () => ctx.ovh.listZones() });
  ctx.log.info(
    { tenant: created.tenant.name, scopes: created.tenant.scopes, zones: created.tenant.zones, by: actor.name, ...(registered.length ? { registered } : {}) },
    'tenant created',
  );
  return created;
}

export async function listTenants(ctx: CoreContext, actor: Tenant): Promise<Tenant[]> {
  requireAdmin(actor);
  return runListTenants(ctx.pool);
}

export async function rotateTenantToken(ctx: CoreContext, actor: Tenant, name: string, graceMs = 0): Promise<{ tenant: Tenant; token: string }> {
  requireAdmin(actor);
  if (name === '') throw new InvalidInputError('name', 'a tenant name is required');
  const rotated = await runRotate(ctx.pool, name, graceMs, 'graceSeconds');
  ctx.tokens?.forget(name); // this replica at once; the others on NOTIFY dnsplane_tenant
  ctx.log.info(
    {
      tenant: name,
      by: actor.name,
      ...(rotated.tenant.previousTokenValidUntil ? { oldTokenValidUntil: rotated.tenant.previousTokenValidUntil.toISOString() } : {}),
    },
    'tenant token rotated',
  );
  return rotated;
}

export async function disableTenant(ctx: CoreContext, actor: Tenant, name: string, enable: boolean): Promise<Tenant> {
  requireAdmin(actor);
  if (name === '') throw new InvalidInputError('name', 'a tenant name is required');
  if (!enable && name === actor.name) throw new InvalidInputError('name', 'an admin cannot disable itself (it would lock itself out)');
  const t = await setTenantDisabled(ctx.pool, name, !enable);
  ctx.tokens?.forget(name); // this replica at once; the others on NOTIFY dnsplane_tenant
  ctx.log.info({ tenant: name, disabled: t.disabled, by: actor.name }, enable ? 'tenant enabled' : 'tenant disabled');
  return t;
}

/** A tenant's own change threshold (core/plan/guard.ts); null puts back the server's DNSPLANE_MAX_CHANGE_PERCENT. */
export async function setTenantMaxChangePercent(ctx: CoreContext, actor: Tenant, name: string, percent: number | null): Promise<Tenant> {
  requireAdmin(actor);
  const t = await runSetMaxChange(ctx.pool, name, percent);
  ctx.log.info({ tenant: name, maxChangePercent: percent, by: actor.name }, 'tenant change threshold set');
  return t;
}
