/**
 * The admin's OVH accounts (AdminService's *OvhAccount RPCs, `dnsplane account`): add, list, rotate,
 * disable, enable, remove. `add` and `rotate` prove the credentials first with one OVH call (the
 * account's zone list, which `add` also binds zones from) and store nothing when OVH refuses them,
 * with OVH's reason. A zone is in one account: one another account holds is refused at `add`, naming
 * both. Each change is one transaction with its audit row (the journal says which account), and the
 * NOTIFY that has every replica rebuild that account's client (core/accounts/registry.ts).
 */
import { InvalidInputError } from '../../dns/errors.js';
import { normalizeName } from '../../dns/names.js';
import type { OvhCredentials } from '../../ovh/client/signed-request.js';
import { parseOvhEndpoint, type OvhEndpoint } from '../../ovh/endpoint.js';
import { OvhError } from '../../ovh/errors.js';
import { messageOf } from '../../lib/error-message.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { SECRETS_KEY_SETTING, checkSealedSecrets } from '../keys/secrets.js';
import { actedBy, auditAdminAction } from '../journal/audit.js';
import type { Tenant } from '../tenants/tenants.js';
import { parseCredentialsFile, sealCredentials } from './credentials.js';
import type { AccountsContext } from './registry.js';

export const ACCOUNT_NAME_RULE = 'must be 1 to 63 lowercase letters, digits and inner hyphens, and not "default" (the OVH_* variables\' account)';
const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const MAX_RATE = 10_000;

export interface AddAccountInput {
  name: string;
  endpoint: string;
  /** The credentials file's text (three lines OVH_*=…). */
  credentials: string;
  /** Calls per second; 0 or absent: DNSPLANE_OVH_RATE. */
  rate?: number;
  /** The zones to manage in it; empty: every zone it holds (those of DNSPLANE_ZONES when that is set). */
  zones?: string[];
}

function accountsOf(ctx: CoreContext): AccountsContext {
  if (!ctx.accounts) throw new InvalidInputError('account', 'OVH accounts are not available on this server (demo mode or no OVH client)');
  return ctx.accounts;
}

export function checkAccountName(name: string, field = 'name'): string {
  if (!NAME.test(name) || name === store.DEFAULT_ACCOUNT) throw new InvalidInputError(field, `${ACCOUNT_NAME_RULE}, got "${name.slice(0, 80)}"`);
  return name;
}

function checkRate(rate: number | undefined): number | null {
  if (rate === undefined || rate === 0) return null;
  if (!Number.isInteger(rate) || rate < 1 || rate > MAX_RATE)
    throw new InvalidInputError('rate', `must be a whole number of calls per second from 1 to ${MAX_RATE} (0 or none: DNSPLANE_OVH_RATE), got ${rate}`);
  return rate;
}

/** One OVH call with the credentials; refused (nothing stored) with OVH's reason when OVH refuses them or cannot be reached. */
async function prove(ctx: CoreContext, endpoint: OvhEndpoint, credentials: OvhCredentials): Promise<string[]> {
  try {
    return await accountsOf(ctx).prove(endpoint, credentials);
  } catch (e) {
    if (e instanceof OvhError && e.kind === 'auth')
      throw new InvalidInputError('credentials', `OVH refused them (HTTP ${e.status}${e.ovhMessage ? `: ${e.ovhMessage}` : ''}): nothing was stored`);
    if (e instanceof OvhError && (e.kind === 'network' || e.kind === 'unavailable'))
      throw new InvalidInputError(
        'endpoint',
        `${endpoint.label} did not answer (${e.status === 0 ? 'no answer' : `HTTP ${e.status}`}${e.ovhMessage ? `: ${e.ovhMessage}` : ''}): nothing was stored`,
      );
    throw new InvalidInputError('credentials', `could not be proved against ${endpoint.label}: ${messageOf(e)}; nothing was stored`);
  }
}

function box(ctx: CoreContext) {
  if (!ctx.secrets) throw new InvalidInputError(SECRETS_KEY_SETTING, "is not set: an OVH account's credentials are kept sealed under it");
  return ctx.secrets;
}

/** The zones the account is to manage: --zones (each one it holds), else DNSPLANE_ZONES' it holds, else all it holds. */
function zonesToBind(ctx: CoreContext, asked: string[] | undefined, held: string[]): string[] {
  const holds = new Set(held);
  if (asked && asked.length > 0) {
    const zones = [...new Set(asked.map((z, i) => normalizeName(z, `zones[${i}]`)))];
    const missing = zones.filter((z) => !holds.has(z));
    if (missing.length)
      throw new InvalidInputError('zones', `${missing.join(', ')}: not in this OVH account (it holds ${held.length ? held.join(', ') : 'no zone'})`);
    return zones.sort();
  }
  return (ctx.settings.zones ? held.filter((z) => ctx.settings.zones!.includes(z)) : held).sort();
}

export async function addOvhAccount(
  ctx: CoreContext,
  actor: Tenant | null,
  input: AddAccountInput,
): Promise<{ account: store.OvhAccountRow; zones: string[] }> {
  const name = checkAccountName(input.name);
  const endpoint = parseOvhEndpoint(input.endpoint, 'endpoint');
  const rate = checkRate(input.rate);
  const credentials = parseCredentialsFile(input.credentials);
  const secrets = box(ctx);
  if (await store.getOvhAccount(ctx.pool, name))
    throw new InvalidInputError('name', `an OVH account "${name}" already exists (rotate its credentials with rotate)`);
  const held = await prove(ctx, endpoint, credentials);
  const zones = zonesToBind(ctx, input.zones, held);
  const taken = (await store.heldZones(ctx.pool, zones)).filter((z) => z.account !== name);
  if (taken.length)
    throw new InvalidInputError(
      'zones',
      `${taken.map((t) => `zone ${t.zone} is in OVH accounts "${t.account}" and "${name}"`).join('; ')}: a zone is in one account; name this account's other zones with --zones (or remove the zone from the other account first)`,
    );
  const account = await store.withTransaction(ctx.pool, async (tx) => {
    await checkSealedSecrets(tx, secrets);
    const row = await store.insertOvhAccount(
      tx,
      { name, endpoint: input.endpoint.trim(), applicationKey: credentials.applicationKey, rate, zones: input.zones?.length ? zones : null },
      sealCredentials(secrets, name, credentials),
    );
    await store.bindZonesToAccount(tx, name, zones);
    // Another add that took one of these zones meanwhile (committed first) wins: this one stores nothing.
    const lost = (await store.heldZones(tx, zones)).filter((z) => z.account !== name);
    if (lost.length)
      throw new InvalidInputError(
        'zones',
        `${lost.map((t) => `zone ${t.zone} is in OVH accounts "${t.account}" and "${name}"`).join('; ')}: nothing was stored`,
      );
    await auditAdminAction(
      tx,
      null,
      actor,
      'account_add',
      `OVH account ${name} (${endpoint.label}) added ${actedBy(actor)}, zones: ${zones.join(', ') || 'none'}`,
      { account: name, zones },
    );
    return row;
  });
  await accountsOf(ctx).registry.reload(name);
  return { account, zones };
}

export async function listOvhAccounts(ctx: CoreContext): Promise<Array<store.OvhAccountRow & { zones: string[]; status: string; reason?: string }>> {
  const registry = ctx.accounts?.registry;
  const states = new Map((registry?.states() ?? []).map((s) => [s.name, s]));
  const rows = await store.listOvhAccounts(ctx.pool);
  const out = [];
  for (const r of rows) {
    const s = states.get(r.name);
    out.push({
      ...r,
      zones: await store.zonesOfAccount(ctx.pool, r.name),
      status: s?.status ?? (r.enabled ? 'ok' : 'disabled'),
      ...(s?.reason ? { reason: s.reason } : {}),
    });
  }
  return out;
}

export async function rotateOvhAccount(ctx: CoreContext, actor: Tenant | null, nameIn: string, credentialsText: string): Promise<store.OvhAccountRow> {
  const name = checkAccountName(nameIn);
  const credentials = parseCredentialsFile(credentialsText);
  const secrets = box(ctx);
  const current = await store.getOvhAccount(ctx.pool, name);
  if (!current) throw new store.NotFoundError('OVH account', name);
  await prove(ctx, parseOvhEndpoint(current.endpoint, 'endpoint'), credentials);
  const row = await store.withTransaction(ctx.pool, async (tx) => {
    await checkSealedSecrets(tx, secrets);
    const r = await store.rotateOvhAccount(tx, name, credentials.applicationKey, sealCredentials(secrets, name, credentials));
    await auditAdminAction(tx, null, actor, 'account_rotate', `OVH account ${name}: credentials rotated ${actedBy(actor)}`, { account: name });
    return r;
  });
  await accountsOf(ctx).registry.reload(name);
  return row;
}

export async function setOvhAccountEnabled(ctx: CoreContext, actor: Tenant | null, nameIn: string, enabled: boolean): Promise<store.OvhAccountRow> {
  const name = checkAccountName(nameIn);
  const row = await store.withTransaction(ctx.pool, async (tx) => {
    const r = await store.setOvhAccountEnabled(tx, name, enabled);
    await auditAdminAction(
      tx,
      null,
      actor,
      enabled ? 'account_enable' : 'account_disable',
      `OVH account ${name} ${enabled ? 'enabled' : 'disabled'} ${actedBy(actor)}`,
      { account: name },
    );
    return r;
  });
  await accountsOf(ctx).registry.reload(name);
  return row;
}

/** Removes the account: its calls stop at once; its zones stay (their journal theirs), unavailable until an account holding them is added. */
export async function removeOvhAccount(ctx: CoreContext, actor: Tenant | null, nameIn: string): Promise<store.OvhAccountRow> {
  const name = checkAccountName(nameIn);
  const row = await store.withTransaction(ctx.pool, async (tx) => {
    const r = await store.deleteOvhAccount(tx, name);
    await auditAdminAction(tx, null, actor, 'account_remove', `OVH account ${name} removed ${actedBy(actor)}`, { account: name });
    return r;
  });
  await accountsOf(ctx).registry.reload(name);
  return row;
}
