/**
 * The TSIG key use cases of AdminService, over core/credentials/tsig-admin.ts: each refuses a caller without
 * the admin scope first (tenants/gate.ts), forgets the key's tenant in this replica's cache where it
 * changed, and logs what was done; the secret is never logged.
 */
import type { CoreContext } from '../context.js';
import { requireAdmin } from '../tenants/gate.js';
import type { Tenant } from '../tenants/tenants.js';
import {
  createTsigKey as runCreateKey,
  deleteTsigKey as runDeleteKey,
  listTsigKeys as runListKeys,
  rotateTsigKey as runRotateKey,
  type IssuedTsigKey,
  type NewTsigKeyInput,
  type TsigKeyView,
} from '../credentials/tsig-admin.js';

export async function createTsigKey(ctx: CoreContext, actor: Tenant, input: NewTsigKeyInput): Promise<IssuedTsigKey> {
  requireAdmin(actor);
  const issued = await runCreateKey({ pool: ctx.pool, secrets: ctx.secrets, actor }, input);
  const { name, tenant, algorithm, acmeOnly } = issued.key;
  ctx.log.info({ key: name, tenant, algorithm, acmeOnly, by: actor.name }, 'TSIG key created');
  return issued;
}

export async function listTsigKeys(ctx: CoreContext, actor: Tenant, tenant: string): Promise<TsigKeyView[]> {
  requireAdmin(actor);
  return runListKeys(ctx.pool, tenant);
}

export async function rotateTsigKey(ctx: CoreContext, actor: Tenant, name: string, graceMs = 0): Promise<IssuedTsigKey> {
  requireAdmin(actor);
  const issued = await runRotateKey({ pool: ctx.pool, secrets: ctx.secrets, actor }, name, graceMs);
  ctx.tsigKeys?.forget(issued.key.tenant); // this replica at once; the others on NOTIFY dnsplane_tenant
  const until = issued.key.oldSecretValidUntil;
  ctx.log.info(
    { key: issued.key.name, tenant: issued.key.tenant, by: actor.name, ...(until ? { oldSecretValidUntil: until.toISOString() } : {}) },
    'TSIG key rotated',
  );
  return issued;
}

export async function deleteTsigKey(ctx: CoreContext, actor: Tenant, name: string): Promise<TsigKeyView> {
  requireAdmin(actor);
  const key = await runDeleteKey({ pool: ctx.pool, actor }, name);
  ctx.tsigKeys?.forget(key.tenant); // this replica at once; the others on NOTIFY dnsplane_tenant
  ctx.log.info({ key: key.name, tenant: key.tenant, by: actor.name }, 'TSIG key deleted');
  return key;
}
