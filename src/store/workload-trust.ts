/**
 * The trusted_issuers and trusted_subjects tables (migrations/0025): which JWT issuers tenants trust,
 * where each issuer's keys come from, and which tenant each (issuer, subject) acts as
 * (core/credentials/workload-trust.ts manages them, core/credentials/workload-tokens.ts asks them).
 * Every change sends NOTIFY dnsplane_tenant with the name of each tenant it concerns, in the same
 * statement, as a change of that tenant's credentials: every replica drops the tokens it verified for
 * it (core/keys/cache.ts).
 */
import { AlreadyExistsError, NotFoundError } from './errors.js';
import { assertIdString, PG_UNIQUE_VIOLATION, errorCode, type Queryable } from './internal.js';
import { TENANT_CHANNEL } from './notify.js';
import { tenantColumns, toTenant, type Tenant, type TenantRow } from './tenants.js';

/** Where an issuer's keys come from: its discovery document, a JWKS URL, or a JWKS uploaded. */
export interface IssuerSource {
  /** Absent with `jwks` absent: {issuer}/.well-known/openid-configuration's jwks_uri. */
  jwksUrl?: string;
  /** A JWKS uploaded (`--jwks-file`): used as it is, never fetched. */
  jwks?: { keys: unknown[] };
  /** CA certificates (PEM) to trust for the issuer's HTTPS, instead of the system's. */
  caPem?: string;
}

export interface TrustedIssuer extends IssuerSource {
  issuer: string;
  /** Bumped by each change of the source: keys fetched for an older version are dropped. */
  version: string;
}

export interface TrustedSubject {
  id: string;
  issuer: string;
  subject: string;
  audience: string;
  tenantId: string;
  tenantName: string;
  createdAt: Date;
  lastSeenAt: Date | null;
  /** The issuer's key source. */
  source: IssuerSource;
}

interface IssuerRow {
  issuer: string;
  jwks_url: string | null;
  jwks: { keys: unknown[] } | null;
  ca_pem: string | null;
  version: string;
}

const ISSUER_COLUMNS = 'i.issuer, i.jwks_url, i.jwks, i.ca_pem, i.version::text AS version';

function toSource(r: IssuerRow): IssuerSource {
  return {
    ...(r.jwks_url !== null ? { jwksUrl: r.jwks_url } : {}),
    ...(r.jwks !== null ? { jwks: r.jwks } : {}),
    ...(r.ca_pem !== null ? { caPem: r.ca_pem } : {}),
  };
}

function toIssuer(r: IssuerRow): TrustedIssuer {
  return { issuer: r.issuer, version: r.version, ...toSource(r) };
}

type SubjectRow = IssuerRow & {
  id: string;
  subject: string;
  audience: string;
  tenant_id: string;
  tenant_name: string;
  created_at: Date;
  last_seen_at: Date | null;
};

function toSubject(r: SubjectRow): TrustedSubject {
  return {
    id: r.id,
    issuer: r.issuer,
    subject: r.subject,
    audience: r.audience,
    tenantId: r.tenant_id,
    tenantName: r.tenant_name,
    createdAt: r.created_at,
    lastSeenAt: r.last_seen_at,
    source: toSource(r),
  };
}

const SUBJECT_SELECT = `SELECT s.id::text AS id, s.subject, s.audience, s.tenant_id::text AS tenant_id, t.name AS tenant_name, s.created_at, s.last_seen_at, ${ISSUER_COLUMNS}
  FROM trusted_subjects s JOIN trusted_issuers i ON i.issuer = s.issuer JOIN tenants t ON t.id = s.tenant_id`;

/** The issuer as stored, or undefined. */
export async function getTrustedIssuer(q: Queryable, issuer: string): Promise<TrustedIssuer | undefined> {
  const { rows } = await q.query<IssuerRow>(`SELECT ${ISSUER_COLUMNS} FROM trusted_issuers i WHERE i.issuer = $1`, [issuer]);
  return rows[0] ? toIssuer(rows[0]) : undefined;
}

/**
 * Creates the issuer, or sets its key source (its version bumped, every tenant trusting it notified)
 * when `source` differs from the stored one. `keep`: an issuer that exists keeps its source.
 */
export async function putTrustedIssuer(
  q: Queryable,
  issuer: string,
  source: IssuerSource,
  keep: boolean,
): Promise<{ issuer: TrustedIssuer; changed: boolean }> {
  const params = [issuer, source.jwksUrl ?? null, source.jwks ? JSON.stringify(source.jwks) : null, source.caPem ?? null];
  const inserted = await q.query<IssuerRow>(
    `INSERT INTO trusted_issuers AS i (issuer, jwks_url, jwks, ca_pem) VALUES ($1, $2, $3::jsonb, $4)
     ON CONFLICT (issuer) DO NOTHING RETURNING ${ISSUER_COLUMNS}`,
    params,
  );
  if (inserted.rows[0]) return { issuer: toIssuer(inserted.rows[0]), changed: true };
  if (keep) return { issuer: (await getTrustedIssuer(q, issuer))!, changed: false };
  const { rows } = await q.query<IssuerRow & { notified: string | null }>(
    `UPDATE trusted_issuers i SET jwks_url = $2, jwks = $3::jsonb, ca_pem = $4, version = version + 1, updated_at = now()
      WHERE i.issuer = $1 AND (i.jwks_url, i.jwks, i.ca_pem) IS DISTINCT FROM ($2, $3::jsonb, $4)
      RETURNING ${ISSUER_COLUMNS},
        (SELECT string_agg(pg_notify('${TENANT_CHANNEL}', t.name)::text, '') FROM trusted_subjects s JOIN tenants t ON t.id = s.tenant_id WHERE s.issuer = i.issuer) AS notified`,
    params,
  );
  if (rows[0]) return { issuer: toIssuer(rows[0]), changed: true };
  return { issuer: (await getTrustedIssuer(q, issuer))!, changed: false };
}

/**
 * Binds (issuer, subject) to the tenant. AlreadyExistsError naming the tenant that holds it when the
 * pair is bound already (to this tenant or another).
 */
export async function addTrustedSubject(q: Queryable, t: { tenantId: string; issuer: string; subject: string; audience: string }): Promise<TrustedSubject> {
  assertIdString('tenant id', t.tenantId);
  const held = await findTrustedSubject(q, t.issuer, t.subject);
  if (held) throw new AlreadyExistsError('trusted subject', held.tenantName);
  try {
    await q.query(
      `INSERT INTO trusted_subjects (issuer, subject, tenant_id, audience) VALUES ($1, $2, $3::bigint, $4)
       RETURNING pg_notify('${TENANT_CHANNEL}', (SELECT name FROM tenants WHERE id = $3::bigint))::text`,
      [t.issuer, t.subject, t.tenantId, t.audience],
    );
  } catch (err) {
    // Bound by a concurrent trust since the look-up: which tenant is not known here.
    if (errorCode(err) === PG_UNIQUE_VIOLATION) throw new AlreadyExistsError('trusted subject', '');
    throw err;
  }
  return (await findTrustedSubject(q, t.issuer, t.subject))!;
}

/** The binding of (issuer, subject), whichever tenant holds it. */
export async function findTrustedSubject(q: Queryable, issuer: string, subject: string): Promise<TrustedSubject | undefined> {
  const { rows } = await q.query<SubjectRow>(`${SUBJECT_SELECT} WHERE s.issuer = $1 AND s.subject = $2`, [issuer, subject]);
  return rows[0] ? toSubject(rows[0]) : undefined;
}

/**
 * Removes the tenant's trust of (issuer, subject), and the issuer when no subject of it is left.
 * NotFoundError when the tenant does not trust it.
 */
export async function removeTrustedSubject(q: Queryable, tenantId: string, issuer: string, subject: string): Promise<TrustedSubject> {
  assertIdString('tenant id', tenantId);
  const before = await findTrustedSubject(q, issuer, subject);
  if (!before || before.tenantId !== tenantId) throw new NotFoundError('trusted subject', subject);
  await q.query(
    `DELETE FROM trusted_subjects s WHERE s.issuer = $1 AND s.subject = $2 AND s.tenant_id = $3::bigint
     RETURNING pg_notify('${TENANT_CHANNEL}', (SELECT name FROM tenants WHERE id = s.tenant_id))::text`,
    [issuer, subject, tenantId],
  );
  await q.query('DELETE FROM trusted_issuers i WHERE i.issuer = $1 AND NOT EXISTS (SELECT 1 FROM trusted_subjects s WHERE s.issuer = i.issuer)', [issuer]);
  return before;
}

/** Trusted subjects by tenant name, issuer, subject; `tenantId`: only that tenant's. */
export async function listTrustedSubjects(q: Queryable, tenantId?: string): Promise<TrustedSubject[]> {
  if (tenantId !== undefined) assertIdString('tenant id', tenantId);
  const { rows } = await q.query<SubjectRow>(`${SUBJECT_SELECT} WHERE ($1::bigint IS NULL OR s.tenant_id = $1::bigint) ORDER BY t.name, s.issuer, s.subject`, [
    tenantId ?? null,
  ]);
  return rows.map(toSubject);
}

/** How many subjects of `issuer` are trusted, by any tenant. */
export async function countTrustedSubjects(q: Queryable, issuer: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM trusted_subjects WHERE issuer = $1', [issuer]);
  return rows[0]?.n ?? 0;
}

/**
 * What a token naming `issuer` and `subject` meets, in one query: the issuer (undefined: no tenant
 * trusts it), and the subject's binding with its tenant as it is now (disabled or not: the caller decides).
 */
export async function findTrustForToken(
  q: Queryable,
  issuer: string,
  subject: string,
): Promise<{ issuer: TrustedIssuer; binding?: { id: string; audience: string; tenant: Tenant } } | undefined> {
  const { rows } = await q.query<IssuerRow & { binding_id: string | null; audience: string | null } & Partial<TenantRow>>(
    `SELECT ${ISSUER_COLUMNS}, s.id::text AS binding_id, s.audience, ${tenantColumns('t')}
       FROM trusted_issuers i
       LEFT JOIN trusted_subjects s ON s.issuer = i.issuer AND s.subject = $2
       LEFT JOIN tenants t ON t.id = s.tenant_id
      WHERE i.issuer = $1`,
    [issuer, subject],
  );
  const r = rows[0];
  if (!r) return undefined;
  const found = toIssuer(r);
  if (r.binding_id === null || r.audience === null || r.id === undefined || r.id === null) return { issuer: found };
  return { issuer: found, binding: { id: r.binding_id, audience: r.audience, tenant: toTenant(r as TenantRow) } };
}

/** Records when subjects last called, several at once (core coalesces them). A time never moves back. */
export async function noteSubjectsSeen(q: Queryable, uses: ReadonlyArray<{ id: string; at: Date }>): Promise<void> {
  if (uses.length === 0) return;
  for (const u of uses) assertIdString('trusted subject id', u.id);
  await q.query(
    `UPDATE trusted_subjects s SET last_seen_at = greatest(coalesce(s.last_seen_at, u.at), u.at)
       FROM unnest($1::bigint[], $2::timestamptz[]) AS u(id, at) WHERE s.id = u.id`,
    [uses.map((u) => u.id), uses.map((u) => u.at)],
  );
}
