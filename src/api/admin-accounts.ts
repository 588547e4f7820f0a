/**
 * AdminService's OVH account handlers (issue 44: core/accounts/admin.ts), spread into adminService:
 * each checks the admin scope before it reads its request. A request's credentials are never logged
 * nor echoed; an account's view never holds a secret.
 */
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import * as accounts from '../core/accounts/admin.js';
import type { CoreContext } from '../core/context.js';
import type { Tenant } from '../core/tenants/tenants.js';
import {
  AddOvhAccountResponseSchema,
  ListOvhAccountsResponseSchema,
  OvhAccountSchema,
  RemoveOvhAccountResponseSchema,
  RotateOvhAccountResponseSchema,
  SetOvhAccountEnabledResponseSchema,
  type AdminService,
  type OvhAccount,
} from '../gen/dnsplane/v1/admin_pb.js';
import type * as store from '../store/index.js';

type AccountHandlers = Pick<
  ServiceImpl<typeof AdminService>,
  'addOvhAccount' | 'listOvhAccounts' | 'rotateOvhAccount' | 'setOvhAccountEnabled' | 'removeOvhAccount'
>;

/** An account as listings show it: its zones and state as this replica knows them. */
async function accountToPb(ctx: CoreContext, row: store.OvhAccountRow): Promise<OvhAccount> {
  const full = (await accounts.listOvhAccounts(ctx)).find((a) => a.name === row.name);
  return viewToPb(full ?? { ...row, zones: [], status: row.enabled ? 'ok' : 'disabled' });
}

function viewToPb(a: store.OvhAccountRow & { zones: string[]; status: string; reason?: string }): OvhAccount {
  return create(OvhAccountSchema, {
    name: a.name,
    endpoint: a.endpoint,
    applicationKey: a.applicationKey,
    rate: a.rate ?? 0,
    zones: a.zones,
    enabled: a.enabled,
    status: a.status,
    reason: a.reason ?? '',
    createdAt: timestampFromDate(a.createdAt),
    ...(a.rotatedAt ? { rotatedAt: timestampFromDate(a.rotatedAt) } : {}),
  });
}

export function accountHandlers(ctx: CoreContext, adminOf: (hc: HandlerContext) => Tenant): AccountHandlers {
  return {
    async addOvhAccount(req, hc) {
      const actor = adminOf(hc);
      const { account, zones } = await accounts.addOvhAccount(ctx, actor, {
        name: req.name,
        endpoint: req.endpoint,
        credentials: req.credentials,
        rate: req.rate,
        zones: req.zones,
      });
      ctx.log.info({ account: account.name, endpoint: account.endpoint, zones, by: actor.name }, 'OVH account added');
      return create(AddOvhAccountResponseSchema, { account: await accountToPb(ctx, account) });
    },

    async listOvhAccounts(_req, hc) {
      adminOf(hc);
      return create(ListOvhAccountsResponseSchema, { accounts: (await accounts.listOvhAccounts(ctx)).map(viewToPb) });
    },

    async rotateOvhAccount(req, hc) {
      const actor = adminOf(hc);
      const account = await accounts.rotateOvhAccount(ctx, actor, req.name, req.credentials);
      ctx.log.info({ account: account.name, by: actor.name }, 'OVH account credentials rotated');
      return create(RotateOvhAccountResponseSchema, { account: await accountToPb(ctx, account) });
    },

    async setOvhAccountEnabled(req, hc) {
      const actor = adminOf(hc);
      const account = await accounts.setOvhAccountEnabled(ctx, actor, req.name, req.enabled);
      ctx.log.info({ account: account.name, enabled: account.enabled, by: actor.name }, `OVH account ${account.enabled ? 'enabled' : 'disabled'}`);
      return create(SetOvhAccountEnabledResponseSchema, { account: await accountToPb(ctx, account) });
    },

    async removeOvhAccount(req, hc) {
      const actor = adminOf(hc);
      const account = await accounts.removeOvhAccount(ctx, actor, req.name);
      ctx.log.info({ account: account.name, by: actor.name }, 'OVH account removed');
      return create(RemoveOvhAccountResponseSchema, { account: viewToPb({ ...account, zones: [], status: 'removed' }) });
    },
  };
}
