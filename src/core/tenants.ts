/**
 * Tenants: who calls dnsplane. A token is shown once, at creation or rotation; the database keeps only
 * its sha-256.
 */
import type { Queryable, Tenant } from '../store/index.js';
import * as store from '../store/index.js';
import { InvalidInputError } from '../dns/errors.js';
import { normalizeName } from '../dns/names.js';
import { NotFoundError, PermissionDeniedError, UnauthenticatedError } from './errors.js';
import { hashToken, newToken } from './tokens.js';

export type { Tenant };

const TENANT_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

export interface NewTenant {
  name: string;
  zones: string[];
  suffixes?: string[];
  admin?: boolean;
}

export function isAdmin(t: Tenant): boolean {
  return t.scopes.includes('admin');
}

export async function createTenant(q: Queryable, input: NewTenant): Promise<{ tenant: Tenant; token: string }> {
  if (!TENANT_NAME.test(input.name)) {
    throw new InvalidInputError('name', 'must be 1-63 characters of a-z, 0-9 and "-", starting with a letter or digit');
  }
  const zones = input.zones.map((z, i) => normalizeName(z, `zones[${i}]`));
  const suffixes = (input.suffixes ?? []).map((s, i) => normalizeName(s.replace(/^\*\./, ''), `suffixes[${i}]`));
  if (zones.length === 0 && !input.admin) throw new InvalidInputError('zones', 'a tenant needs at least one zone (admins without zones may use every zone)');
  const token = newToken();
  const tenant = await store.createTenant(q, {
    name: input.name,
    tokenSha256: hashToken(token),
    scopes: input.admin ? ['admin'] : [],
    zones,
    suffixes,
  });
  return { tenant, token };
}

export async function rotateToken(q: Queryable, name: string): Promise<string> {
  const t = await store.getTenantByName(q, name);
  if (!t) throw new NotFoundError(`tenant "${name}" does not exist`);
  const token = newToken();
  await store.setTokenHash(q, name, hashToken(token));
  return token;
}

/** The tenant a bearer token belongs to. Never says which part was wrong, never echoes the token. */
export async function authenticate(q: Queryable, token: string | undefined): Promise<Tenant> {
  if (!token) throw new UnauthenticatedError('missing credentials: send "Authorization: Bearer <token>"');
  const hash = hashToken(token);
  const tenant = await store.findTenantByTokenHash(q, hash);
  if (!tenant || tenant.disabled) throw new UnauthenticatedError('invalid or disabled token');
  return tenant;
}

/** Whether the tenant may use this zone at all. Admins created without zones may use every zone. */
export function mayUseZone(t: Tenant, zone: string): boolean {
  if (t.zones.length === 0) return isAdmin(t);
  return t.zones.includes(zone);
}

/** Throws PermissionDenied when the name is outside the tenant's zones or suffixes. */
export function checkNameAllowed(t: Tenant, zone: string, dnsName: string, field: string): void {
  if (!mayUseZone(t, zone)) throw new PermissionDeniedError(field, `zone "${zone}" is not one of tenant "${t.name}"'s zones`);
  if (t.suffixes.length > 0 && !t.suffixes.some((s) => dnsName === s || dnsName.endsWith(`.${s}`))) {
    throw new PermissionDeniedError(field, `"${dnsName}" is outside tenant "${t.name}"'s allowed suffixes (${t.suffixes.join(', ')})`);
  }
}

