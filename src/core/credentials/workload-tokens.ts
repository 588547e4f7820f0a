/**
 * Workload tokens: a bearer token that is a JWT (a Kubernetes projected ServiceAccount token, a SPIRE
 * JWT-SVID) authenticates as the tenant that trusts its issuer and subject (workload-trust.ts). The
 * checks, in this order, each refusal naming its rule (WorkloadTokenError: Unauthenticated; never
 * which tenants exist):
 *
 *   1. the header's alg is asymmetric (RS*, PS*, ES*, EdDSA): never `none`, never an HMAC, which a
 *      public key could be made to key;
 *   2. its `iss` is an issuer some tenant trusts — else nothing is fetched ("unknown issuer");
 *   3. the signature, with a key of that issuer only (issuer-keys.ts: a kid it lacks fetches its keys
 *      again, at most once per cooldown — "unknown key");
 *   4. exp and nbf with at most LEEWAY_S of clock skew, iat present and not in the future, and a
 *      lifetime (iat to exp) of at most MAX_LIFETIME_S;
 *   5. its `sub` is trusted for that issuer (bound to exactly one tenant), then `aud` holds that
 *      binding's audience exactly;
 *   6. the tenant is not disabled.
 *
 * A verified token is kept in the token cache (ctx.tokens, core/tenants/tenants.ts TokenCache) by its
 * hash until its exp, with the tenant it authenticated carrying the workload identity (caller.ts): the
 * next call with it costs what a static token's does (api/gate.ts answers it in the same turn). It is
 * forgotten with its tenant's other credentials (NOTIFY dnsplane_tenant: an untrust, a disable).
 */
import type pg from 'pg';
import { decodeJwt, decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { nowMs } from '../context.js';
import { UnauthenticatedError, WorkloadTokenError } from '../errors.js';
import { authenticate, type Tenant } from '../tenants/tenants.js';
import { asWorkload, workloadOf } from '../tenants/caller.js';
import { IssuerKeys } from './issuer-keys.js';
import { tokenHashHex } from '../keys/tokens.js';

/** Clock skew allowed on exp, nbf and iat. */
export const LEEWAY_S = 60;
/** The longest lifetime (iat to exp) accepted: Kubernetes projects tokens of 10 minutes to an hour. */
export const MAX_LIFETIME_S = 3600;
/** The signing algorithms accepted: asymmetric only. */
export const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** Whether a bearer token is a JWT (a static dnsplane token, "dnsp_…", has no dot). */
export function isJwt(token: string): boolean {
  return JWT_SHAPE.test(token);
}

/** The keys of the trusted issuers: the server's (ctx.issuerKeys), else one per pool with the defaults. */
const defaults = new WeakMap<pg.Pool, IssuerKeys>();
function issuerKeysOf(ctx: CoreContext): IssuerKeys {
  if (ctx.issuerKeys) return ctx.issuerKeys;
  let keys = defaults.get(ctx.pool);
  if (!keys) defaults.set(ctx.pool, (keys = new IssuerKeys({ log: ctx.log })));
  return keys;
}

/** A claim as words in a message: quoted, at most 200 characters. */
function shown(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}

const iso = (s: number) => new Date(s * 1000).toISOString();

/** jose's refusals in our words. */
function refusalOf(e: unknown, payload: JWTPayload): unknown {
  if (e instanceof joseErrors.JWTExpired) return new WorkloadTokenError('expired', `expired at ${iso(Number(payload.exp))} (leeway ${LEEWAY_S} s)`);
  if (e instanceof joseErrors.JWTClaimValidationFailed) {
    if (e.claim === 'nbf' && e.reason === 'check_failed')
      return new WorkloadTokenError('not_yet_valid', `not valid before ${iso(Number(payload.nbf))} (leeway ${LEEWAY_S} s)`);
    return new WorkloadTokenError('claims', `claim "${e.claim}": ${e.message}`);
  }
  if (e instanceof joseErrors.JWSSignatureVerificationFailed) return new WorkloadTokenError('signature', "the signature does not verify with the issuer's key");
  if (e instanceof joseErrors.JOSEAlgNotAllowed) return new WorkloadTokenError('algorithm', e.message);
  if (e instanceof joseErrors.JOSEError) return new WorkloadTokenError('malformed', e.message);
  return e;
}

/**
 * The tenant a workload token authenticates, carrying its identity; WorkloadTokenError naming the rule
 * it failed, IssuerUnavailableError when its issuer's keys cannot be had.
 */
export async function verifyWorkloadToken(ctx: CoreContext, token: string): Promise<Tenant> {
  let payload: JWTPayload;
  let alg: unknown;
  try {
    alg = decodeProtectedHeader(token).alg;
    payload = decodeJwt(token);
  } catch (e) {
    throw new WorkloadTokenError('malformed', `not a JWT (${e instanceof Error ? e.message : String(e)})`);
  }
  if (typeof alg !== 'string' || !ALGORITHMS.includes(alg)) {
    throw new WorkloadTokenError('algorithm', `algorithm ${shown(alg)} is not accepted (asymmetric only: ${ALGORITHMS.join(', ')})`);
  }
  if (typeof payload.iss !== 'string' || payload.iss === '') throw new WorkloadTokenError('claims', 'no iss claim');
  if (typeof payload.sub !== 'string' || payload.sub === '') throw new WorkloadTokenError('claims', 'no sub claim');
  const trust = await store.findTrustForToken(ctx.pool, payload.iss, payload.sub);
  if (!trust) throw new WorkloadTokenError('unknown_issuer', `issuer ${shown(payload.iss)} is not trusted`);

  const keys = issuerKeysOf(ctx);
  const now = nowMs(ctx) / 1000;
  try {
    await jwtVerify(token, (header, jws) => keys.keyFor(trust.issuer, header, jws), {
      issuer: trust.issuer.issuer,
      algorithms: ALGORITHMS,
      clockTolerance: LEEWAY_S,
      requiredClaims: ['exp', 'iat', 'aud'],
      currentDate: new Date(now * 1000),
    });
  } catch (e) {
    throw refusalOf(e, payload);
  }
  const { exp, iat } = payload as { exp: number; iat: number };
  if (iat > now + LEEWAY_S) throw new WorkloadTokenError('claims', `issued in the future (iat ${iso(iat)})`);
  if (exp - iat > MAX_LIFETIME_S) {
    throw new WorkloadTokenError('too_long_lived', `a lifetime of ${Math.round(exp - iat)} s (iat to exp) is over the ${MAX_LIFETIME_S} s allowed`);
  }
  const binding = trust.binding;
  if (!binding) throw new WorkloadTokenError('subject', `subject ${shown(payload.sub)} is not trusted for issuer ${shown(payload.iss)}`);
  const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if (!aud.includes(binding.audience)) {
    throw new WorkloadTokenError('audience', `audience ${shown(payload.aud)} is not the one trusted for this subject (${shown(binding.audience)})`);
  }
  if (binding.tenant.disabled) throw new WorkloadTokenError('disabled', "the subject's tenant is disabled");
  return asWorkload(binding.tenant, { issuer: trust.issuer.issuer, subject: payload.sub, bindingId: binding.id, expiresAt: new Date(exp * 1000) });
}

/**
 * The tenant a bearer token authenticates, whatever its kind: a workload token (a JWT, verified here
 * and kept in the token cache until its exp) or a static dnsplane token (tenants.ts authenticate).
 * `hashHex`: the token's tokenHashHex when the caller has it already (api/gate.ts). What every door
 * taking a bearer token calls (api/gate.ts, api/auth.ts).
 */
export async function authenticateCaller(ctx: CoreContext, token: string | undefined, hashHex?: string): Promise<Tenant> {
  if (!token || !isJwt(token)) return authenticate(ctx.pool, token, ctx.tokens, hashHex);
  const key = hashHex ?? tokenHashHex(token);
  const cached = ctx.tokens?.get(key);
  if (cached) return cached;
  const epoch = ctx.tokens?.epoch;
  let caller: Tenant;
  try {
    caller = await verifyWorkloadToken(ctx, token);
  } catch (e) {
    ctx.metrics?.workloadToken(e instanceof WorkloadTokenError ? e.rule : e instanceof UnauthenticatedError ? 'refused' : 'error');
    throw e;
  }
  ctx.metrics?.workloadToken('verified');
  const w = workloadOf(caller);
  if (epoch !== undefined && w) ctx.tokens?.set(key, caller, epoch, w.expiresAt);
  return caller;
}
