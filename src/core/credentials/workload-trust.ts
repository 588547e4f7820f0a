/**
 * Trust of workload identities (issue 45): a tenant trusts subjects of JWT issuers — a Kubernetes
 * cluster's ServiceAccount (`system:serviceaccount:external-dns:external-dns`), a SPIFFE ID
 * (`spiffe://example.org/ns/nsm-system/sa/registry`) — whose tokens then act as it
 * (workload-tokens.ts). Several subjects per tenant; one tenant per (issuer, subject), refused at
 * trust otherwise. Where an issuer's keys come from is the issuer's, shared by every tenant trusting
 * it (store/workload-trust.ts): its discovery document unless a JWKS URL or a JWKS (the file a
 * cluster whose issuer dnsplane cannot reach gives with `kubectl get --raw /openid/v1/jwks`) is given;
 * giving one changes it for all. For AdminService (an admin acting: the admin scope checked first) and
 * `dnsplane tenant trust|untrust|show` (database access, no acting tenant); each change journaled in
 * its transaction, every replica notified, this replica's cache dropping the tenant's verified tokens
 * at once. Nothing here is secret: issuers, subjects, public keys, CA certificates.
 */
import { X509Certificate } from 'node:crypto';
import type pg from 'pg';
import * as store from '../../store/index.js';
import { InvalidInputError, NotFoundError } from '../errors.js';
import { actedBy, auditAdminAction } from '../journal/audit.js';
import { requireAdmin } from '../tenants/gate.js';
import type { Tenant } from '../tenants/tenants.js';
import { publicKeysOf } from './issuer-keys.js';

/** The audience a trust expects when none is given. */
export const DEFAULT_AUDIENCE = 'dnsplane';

/** Who acts: `actor` null for the command line (else it must be an admin); `tokens`: this replica's token cache. */
export interface TrustAdmin {
  pool: pg.Pool;
  actor: Tenant | null;
  tokens?: { forget(tenant: string): void };
}

export interface TrustInput {
  tenant: string;
  issuer: string;
  subject: string;
  /** '' or absent: DEFAULT_AUDIENCE. */
  audience?: string;
  /** The issuer's JWKS at this URL instead of its discovery document's jwks_uri. */
  jwksUrl?: string;
  /** The issuer's JWKS itself (JSON text), for an issuer dnsplane cannot reach. */
  jwks?: string;
  /** CA certificates (PEM) for the issuer's HTTPS. */
  caPem?: string;
}

/** A trusted subject as listings show it. */
export interface TrustView {
  tenant: string;
  issuer: string;
  subject: string;
  audience: string;
  /** discovery, jwks-url URL, or jwks-file (n keys): where the issuer's keys come from. */
  keys: string;
  createdAt: Date;
  lastSeenAt: Date | null;
}

const MAX_URL = 1024;
const MAX_CLAIM = 2048;
const MAX_JWKS_BYTES = 1024 * 1024;

function httpsUrl(raw: string, field: string, what: string): string {
  if (raw === '') throw new InvalidInputError(field, 'is required');
  if (raw.length > MAX_URL) throw new InvalidInputError(field, `at most ${MAX_URL} characters`);
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new InvalidInputError(field, `must be an https URL (${what}), got ${JSON.stringify(raw)}`);
  }
  if (u.protocol !== 'https:') throw new InvalidInputError(field, `must be an https URL (${what}), got ${JSON.stringify(raw)}`);
  if (u.search || u.hash || u.username || u.password) throw new InvalidInputError(field, 'must have no query, fragment or credentials');
  return raw;
}

function claimValue(raw: string, field: string, what: string): string {
  if (raw === '') throw new InvalidInputError(field, `is required: ${what}`);
  if (raw.length > MAX_CLAIM) throw new InvalidInputError(field, `at most ${MAX_CLAIM} characters`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing them is the point
  if (/[\u0000-\u001f\u007f]/.test(raw) || raw.trim() !== raw)
    throw new InvalidInputError(field, 'must be printable, without leading or trailing spaces (it is compared exactly)');
  return raw;
}

function jwksOf(raw: string, field: string): { keys: unknown[] } {
  if (Buffer.byteLength(raw) > MAX_JWKS_BYTES) throw new InvalidInputError(field, `at most ${MAX_JWKS_BYTES} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new InvalidInputError(field, 'must be a JWKS (JSON: {"keys": [...]}), as `kubectl get --raw /openid/v1/jwks` prints it');
  }
  try {
    return publicKeysOf(parsed);
  } catch (e) {
    throw new InvalidInputError(field, `${(e as Error).message}; symmetric and private keys are never trusted`);
  }
}

function caOf(raw: string, field: string): string {
  const blocks = raw.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (!blocks) throw new InvalidInputError(field, 'must hold PEM certificates (-----BEGIN CERTIFICATE-----)');
  for (const [i, pem] of blocks.entries()) {
    try {
      new X509Certificate(pem);
    } catch (e) {
      throw new InvalidInputError(field, `certificate ${i + 1} does not parse: ${(e as Error).message}`);
    }
  }
  return blocks.join('\n');
}

function viewOf(s: store.TrustedSubject): TrustView {
  const keys = s.source.jwks ? `jwks-file (${s.source.jwks.keys.length} key(s))` : s.source.jwksUrl ? `jwks-url ${s.source.jwksUrl}` : 'discovery';
  return { tenant: s.tenantName, issuer: s.issuer, subject: s.subject, audience: s.audience, keys, createdAt: s.createdAt, lastSeenAt: s.lastSeenAt };
}

async function tenantOf(q: store.Queryable, name: string): Promise<Tenant> {
  if (name === '') throw new InvalidInputError('tenant', 'a tenant name is required');
  const t = await store.getTenantByName(q, name);
  if (!t) throw new NotFoundError('tenant', name, `tenant "${name}" does not exist`);
  return t;
}

/**
 * The tenant trusts tokens of `issuer` for `subject` (audience: DEFAULT_AUDIENCE unless given). With a
 * JWKS URL, a JWKS or a CA, the issuer's key source becomes that, for every tenant trusting it.
 * InvalidInput naming the field (a subject another tenant — or this one — trusts already, among others).
 */
export async function trustSubject(a: TrustAdmin, input: TrustInput): Promise<{ trust: TrustView; sourceChanged: boolean; others: number }> {
  if (a.actor) requireAdmin(a.actor);
  const issuer = httpsUrl(input.issuer, 'issuer', "the token's iss exactly, e.g. https://container.googleapis.com/v1/projects/p/locations/l/clusters/c");
  const subject = claimValue(input.subject, 'subject', "the token's sub exactly, e.g. system:serviceaccount:external-dns:external-dns");
  const audience = claimValue(input.audience || DEFAULT_AUDIENCE, 'audience', 'the audience the token is made for');
  if (input.jwksUrl && input.jwks) throw new InvalidInputError('jwksUrl', 'give a JWKS URL or a JWKS, not both');
  const source: store.IssuerSource = {
    ...(input.jwksUrl ? { jwksUrl: httpsUrl(input.jwksUrl, 'jwksUrl', "the issuer's JWKS") } : {}),
    ...(input.jwks ? { jwks: jwksOf(input.jwks, 'jwks') } : {}),
    ...(input.caPem ? { caPem: caOf(input.caPem, 'caPem') } : {}),
  };
  const given = source.jwksUrl !== undefined || source.jwks !== undefined || source.caPem !== undefined;
  return store.withTransaction(a.pool, async (tx) => {
    const tenant = await tenantOf(tx, input.tenant);
    const put = await store.putTrustedIssuer(tx, issuer, source, !given);
    let added: store.TrustedSubject;
    try {
      added = await store.addTrustedSubject(tx, { tenantId: tenant.id, issuer, subject, audience });
    } catch (e) {
      if (!(e instanceof store.AlreadyExistsError)) throw e;
      const holder =
        e.key === tenant.name
          ? 'this tenant already trusts it (untrust it first to change its audience)'
          : e.key
            ? `tenant "${e.key}" trusts it`
            : 'another tenant has just trusted it';
      throw new InvalidInputError('subject', `${JSON.stringify(subject)} of issuer ${issuer} acts as exactly one tenant, and ${holder}`);
    }
    // The issuer's other subjects (the one just added counted too, in this transaction).
    const others = (await store.countTrustedSubjects(tx, issuer)) - 1;
    const trust = viewOf(added);
    await auditAdminAction(
      tx,
      null,
      a.actor,
      'trust-subject',
      `tenant ${tenant.name} trusts subject ${subject} of issuer ${issuer} (audience ${audience}; keys: ${trust.keys}) ${actedBy(a.actor)}`,
      { tenant: tenant.name, issuer, subject, audience, keys: trust.keys, sourceChanged: put.changed },
    );
    a.tokens?.forget(tenant.name);
    return { trust, sourceChanged: put.changed && given, others };
  });
}

/** The tenant no longer trusts `subject` of `issuer`: its verified tokens stop at once, on every replica. */
export async function untrustSubject(a: TrustAdmin, input: { tenant: string; issuer: string; subject: string }): Promise<TrustView> {
  if (a.actor) requireAdmin(a.actor);
  if (input.issuer === '') throw new InvalidInputError('issuer', 'is required');
  if (input.subject === '') throw new InvalidInputError('subject', 'is required');
  return store.withTransaction(a.pool, async (tx) => {
    const tenant = await tenantOf(tx, input.tenant);
    let removed: store.TrustedSubject;
    try {
      removed = await store.removeTrustedSubject(tx, tenant.id, input.issuer, input.subject);
    } catch (e) {
      if (!(e instanceof store.NotFoundError)) throw e;
      throw new NotFoundError(
        'trusted subject',
        input.subject,
        `tenant "${tenant.name}" does not trust subject ${JSON.stringify(input.subject)} of issuer ${input.issuer}`,
      );
    }
    await auditAdminAction(
      tx,
      null,
      a.actor,
      'untrust-subject',
      `tenant ${tenant.name} no longer trusts subject ${removed.subject} of issuer ${removed.issuer} ${actedBy(a.actor)}`,
      {
        tenant: tenant.name,
        issuer: removed.issuer,
        subject: removed.subject,
      },
    );
    a.tokens?.forget(tenant.name);
    return viewOf(removed);
  });
}

/** Trusted subjects by tenant, issuer, subject; `tenant` '' or absent: every tenant's. */
export async function listTrust(a: TrustAdmin, tenant?: string): Promise<TrustView[]> {
  if (a.actor) requireAdmin(a.actor);
  const id = tenant ? (await tenantOf(a.pool, tenant)).id : undefined;
  return (await store.listTrustedSubjects(a.pool, id)).map(viewOf);
}
