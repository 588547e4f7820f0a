/**
 * Tenants: who calls dnsplane. A token (32 random bytes, tokens.ts) is shown once, at creation or
 * rotation; the database keeps only its sha-256 and nothing logs it.
 *
 * Constant time: a presented token is never compared with a stored secret byte by byte. It is hashed
 * (sha-256) and the hash is looked up (an index equality). How long that takes can depend only on how
 * many leading bytes of an unpredictable hash match some stored hash, which tells a caller nothing
 * about any token (finding a token whose hash shares a prefix is a preimage search). The answer to a
 * wrong, unknown or disabled token is the same message, after the same work.
 */
import type pg from 'pg';
import type { Queryable, Tenant } from '../../store/index.js';
import * as store from '../../store/index.js';
import { InvalidInputError } from '../../dns/errors.js';
import { isInZone, normalizeName } from '../../dns/names.js';
import { NotFoundError, PermissionDeniedError, UnauthenticatedError } from '../errors.js';
import { hashToken, newToken, tokenHashHex } from '../keys/tokens.js';
import { CredentialCache } from '../keys/cache.js';

export type { Tenant };

const TENANT_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

export interface NewTenant {
  name: string;
  zones: string[];
  suffixes?: string[];
  admin?: boolean;
  /** Scopes to grant (KNOWN_SCOPES); `admin: true` is the same as including "admin". */
  scopes?: string[];
}

/** The scopes dnsplane knows. */
export const KNOWN_SCOPES = ['admin'] as const;

export function isAdmin(t: Tenant): boolean {
  return t.scopes.includes('admin');
}

export async function createTenant(q: Queryable, input: NewTenant): Promise<{ tenant: Tenant; token: string }> {
  if (!TENANT_NAME.test(input.name)) {
    throw new InvalidInputError('name', 'must be 1-63 characters of a-z, 0-9 and "-", starting with a letter or digit');
  }
  const scopes = [...new Set([...(input.scopes ?? []), ...(input.admin ? ['admin'] : [])])].sort();
  scopes.forEach((scope, i) => {
    if (!(KNOWN_SCOPES as readonly string[]).includes(scope)) {
      throw new InvalidInputError(`scopes[${i}]`, `unknown scope ${JSON.stringify(scope)} (known: ${KNOWN_SCOPES.join(', ')})`);
    }
  });
  const admin = scopes.includes('admin');
  const zones = [...new Set(input.zones.map((z, i) => normalizeName(z, `zones[${i}]`)))];
  const suffixes = [...new Set((input.suffixes ?? []).map((s, i) => normalizeName(s.replace(/^\*\./, ''), `suffixes[${i}]`)))];
  if (zones.length === 0 && !admin) throw new InvalidInputError('zones', 'a tenant needs at least one zone (admins without zones may use every zone)');
  suffixes.forEach((s, i) => {
    if (zones.length > 0 && !zones.some((z) => s === z || s.endsWith(`.${z}`))) {
      throw new InvalidInputError(`suffixes[${i}]`, `"${s}" is in none of the tenant's zones (${zones.join(', ')})`);
    }
  });
  const token = newToken();
  try {
    const tenant = await store.createTenant(q, { name: input.name, tokenSha256: hashToken(token), scopes, zones, suffixes });
    return { tenant, token };
  } catch (e) {
    if (e instanceof store.AlreadyExistsError) throw new InvalidInputError('name', `a tenant named "${input.name}" already exists`);
    throw e;
  }
}

/**
 * Where a zone not managed yet may be found to exist, so that creating a tenant registers it: the
 * zones DNSPLANE_ZONES names when it is set (then only those: dnsplane manages nothing else), else the
 * zones the OVH account holds, as `serve` would register them.
 */
export interface ZoneSources {
  /** DNSPLANE_ZONES as the caller's configuration has it. */
  configured?: readonly string[];
  /** The zones the OVH account holds (GET /domain/zone), asked at most once, only without `configured`. */
  listOvh?: () => Promise<string[]>;
}

/**
 * createTenant for the CLI and AdminService.CreateTenant: a zone dnsplane does not manage yet (the
 * zones table, which `dnsplane serve` fills at start from DNSPLANE_ZONES or OVH's list) is registered
 * when `sources` say it exists — DNSPLANE_ZONES names it, or the OVH account lists it — and refused
 * otherwise, naming the field and listing the managed zones, before anything is written: a grant on a
 * zone nobody manages would silently do nothing. A registered zone is synced by its first reader.
 */
export async function createTenantInManagedZones(
  pool: pg.Pool,
  input: NewTenant,
  sources: ZoneSources = {},
): Promise<{ tenant: Tenant; token: string; registered: string[] }> {
  const managed = await store.listZoneNames(pool);
  const wanted = input.zones.map((z, i) => ({ zone: normalizeName(z, `zones[${i}]`), i }));
  const missing = wanted.filter((w) => !managed.includes(w.zone));
  let ovhZones: string[] | undefined;
  let ovhError: string | undefined;
  if (missing.length > 0 && !sources.configured && sources.listOvh) {
    try {
      ovhZones = (await sources.listOvh()).map((z) => z.toLowerCase());
    } catch (e) {
      ovhError = e instanceof Error ? e.message : String(e);
    }
  }
  const listed = managed.length > 0 ? managed.join(', ') : 'none yet';
  for (const { zone, i } of missing) {
    if (sources.configured?.includes(zone) || ovhZones?.includes(zone)) continue;
    const why = sources.configured
      ? `; DNSPLANE_ZONES does not name it`
      : ovhError !== undefined
        ? `; OVH could not be asked whether the account holds it (${ovhError})`
        : ovhZones !== undefined
          ? '; the OVH account does not hold it'
          : '; see DNSPLANE_ZONES';
    throw new InvalidInputError(`zones[${i}]`, `"${zone}" is not a zone dnsplane manages (managed: ${listed})${why}`);
  }
  const registered = [...new Set(missing.map((w) => w.zone))];
  // One transaction: a tenant refused (its name, say) registers no zone.
  return store.withTransaction(pool, async (tx) => {
    if (registered.length > 0) await store.ensureZones(tx, registered);
    return { ...(await createTenant(tx, input)), registered };
  });
}

/** The longest grace a rotation may give the old token (or the old secret of a TSIG or OVH key). */
export const MAX_TOKEN_GRACE_MS = 7 * 24 * 3600 * 1000;

/** InvalidInputError naming `field` unless 0 <= graceMs <= MAX_TOKEN_GRACE_MS; `old`: what stops ("token", "secret"). */
export function checkGrace(graceMs: number, field: string, old: string): void {
  if (!Number.isFinite(graceMs) || graceMs < 0 || graceMs > MAX_TOKEN_GRACE_MS) {
    throw new InvalidInputError(
      field,
      `must be between 0 (the old ${old} stops at once) and 7 days, got ${Number.isFinite(graceMs) ? `${Math.round(graceMs / 1000)} s` : String(graceMs)}`,
    );
  }
}

/**
 * A new token for the tenant. The old one stops working at once, or after `graceMs` (at most
 * MAX_TOKEN_GRACE_MS): long enough for every cluster's Secret to be updated, so that no external-dns
 * (which treats a 401 as fatal) crash-loops meanwhile. A grace still running from an earlier rotation
 * ends. NotFound when no such tenant.
 */
export async function rotateTenantToken(q: Queryable, name: string, graceMs = 0, field = 'grace'): Promise<{ tenant: Tenant; token: string }> {
  checkGrace(graceMs, field, 'token');
  const t = await store.getTenantByName(q, name);
  if (!t) throw new NotFoundError('tenant', name, `tenant "${name}" does not exist`);
  const token = newToken();
  return { tenant: await store.setTokenHash(q, name, hashToken(token), graceMs), token };
}

/** Disables (or enables again) a tenant. A disabled tenant fails authentication; its ownership stays. */
export async function setTenantDisabled(q: Queryable, name: string, disabled: boolean): Promise<Tenant> {
  const t = await store.getTenantByName(q, name);
  if (!t) throw new NotFoundError('tenant', name, `tenant "${name}" does not exist`);
  return store.setDisabled(q, name, disabled);
}

/** A tenant's own change threshold (core/plan/guard.ts), 0-100; null puts back the server's default. */
export async function setTenantMaxChangePercent(q: Queryable, name: string, percent: number | null): Promise<Tenant> {
  if (name === '') throw new InvalidInputError('name', 'a tenant name is required');
  if (percent !== null && (!Number.isInteger(percent) || percent < 0 || percent > 100)) {
    throw new InvalidInputError('maxChangePercent', `must be 0-100 (or unset for the server's default), got ${percent}`);
  }
  if (!(await store.getTenantByName(q, name))) throw new NotFoundError('tenant', name, `tenant "${name}" does not exist`);
  return store.setMaxChangePercent(q, name, percent);
}

/** The longest withdraw_after accepted (30 days). */
export const MAX_WITHDRAW_AFTER_MS = 30 * 86_400_000;

/** Sets (ms: whole seconds, 1 s - 30 days) or clears (null) the tenant's withdraw_after (core/withdrawals/liveness.ts). */
export async function setTenantWithdrawAfter(q: Queryable, name: string, ms: number | null): Promise<Tenant> {
  if (name === '') throw new InvalidInputError('name', 'a tenant name is required');
  if (ms !== null && (!Number.isInteger(ms) || ms % 1000 !== 0 || ms < 1000 || ms > MAX_WITHDRAW_AFTER_MS)) {
    throw new InvalidInputError('withdrawAfter', `must be whole seconds from 1s to 30 days (or unset: off), got ${ms / 1000}s`);
  }
  if (!(await store.getTenantByName(q, name))) throw new NotFoundError('tenant', name, `tenant "${name}" does not exist`);
  return store.setWithdrawAfter(q, name, ms);
}

export async function listTenants(q: Queryable): Promise<Tenant[]> {
  return store.listTenants(q);
}

/**
 * The tenant a bearer token belongs to. Never says which part was wrong, never echoes the token.
 * `hashHex`: the token's tokenHashHex when the caller has computed it already (api/gate.ts).
 */
export async function authenticate(q: Queryable, token: string | undefined, cache?: TokenCache, hashHex?: string): Promise<Tenant> {
  if (!token) throw new UnauthenticatedError('missing credentials: send "Authorization: Bearer <token>"');
  const key = hashHex ?? tokenHashHex(token);
  const cached = cache?.get(key);
  if (cached) return cached;
  const epoch = cache?.epoch;
  const found = await store.findTenantForToken(q, Buffer.from(key, 'hex'));
  if (!found || found.tenant.disabled) throw new UnauthenticatedError('invalid or disabled token');
  // An old token in its grace is kept only until its grace ends.
  if (epoch !== undefined) cache?.set(key, found.tenant, epoch, found.validUntil);
  return found.tenant;
}

/**
 * Valid tokens, by the hex of their sha-256 (never the token), so that a call is authenticated without
 * a round trip to Postgres (core/keys/cache.ts: what is kept, and how it stays exact across
 * replicas).
 */
export class TokenCache extends CredentialCache<Tenant> {
  constructor(isTrusted: () => boolean, maxEntries = 10_000) {
    super(isTrusted, (t) => t.name, maxEntries);
  }
}

/** Whether the tenant may use this zone at all. Admins created without zones may use every zone. */
export function mayUseZone(t: Tenant, zone: string): boolean {
  if (t.zones.length === 0) return isAdmin(t);
  return t.zones.includes(zone);
}

/** Throws PermissionDenied when the name is outside the tenant's zones or suffixes. */
/** The suffix rule: with suffixes, a name must be one of them or below one; none: any name. */
export function withinSuffixes(dnsName: string, suffixes: readonly string[]): boolean {
  return suffixes.length === 0 || suffixes.some((s) => isInZone(dnsName, s));
}

export function checkNameAllowed(t: Tenant, zone: string, dnsName: string, field: string): void {
  if (!mayUseZone(t, zone)) throw new PermissionDeniedError(field, `zone "${zone}" is not one of tenant "${t.name}"'s zones`);
  if (!withinSuffixes(dnsName, t.suffixes)) {
    throw new PermissionDeniedError(field, `"${dnsName}" is outside tenant "${t.name}"'s allowed suffixes (${t.suffixes.join(', ')})`);
  }
}

declare module '../context.js' {
  interface CoreContext {
    /**
     * Authenticated tokens kept in memory (TokenCache), trusted only while the replica listens to tenant
     * changes (server/server.ts). Absent: every call reads Postgres.
     */
    tokens?: TokenCache;
  }
}
