/**
 * `dnsplane tenant trust|untrust|show`: the workload identities a tenant trusts (core/credentials/
 * workload-trust.ts) — a Kubernetes ServiceAccount or a SPIFFE ID whose JWTs then act as the tenant
 * instead of a dnsplane token — managed directly in the database, as `tenant create` is. Over the API,
 * AdminService.TrustSubject, UntrustSubject and ListTrustedSubjects do the same.
 */
import { parseArgs } from 'node:util';
import { DEFAULT_AUDIENCE, listTrust, trustSubject, untrustSubject, type TrustView } from '../core/credentials/workload-trust.js';
import { InvalidInputError } from '../dns/errors.js';
import * as store from '../store/index.js';
import { readFileFlag, type CliIo } from './command.js';
import { withDatabase } from './migrate.js';
import { table } from './text.js';

export const TRUST_HELP = `Usage:
  dnsplane tenant trust NAME --issuer URL --subject SUBJECT [--audience AUD]
                        [--jwks-url URL | --jwks-file FILE] [--ca-file FILE]
  dnsplane tenant untrust NAME --issuer URL --subject SUBJECT
  dnsplane tenant show NAME [--output text|json]

trust: tokens that ISSUER signed for SUBJECT act as tenant NAME, instead of a dnsplane token: a
  Kubernetes projected ServiceAccount token (SUBJECT system:serviceaccount:NAMESPACE:SERVICEACCOUNT,
  ISSUER the cluster's service-account issuer: kubectl get --raw /.well-known/openid-configuration)
  or a SPIRE JWT-SVID (SUBJECT the SPIFFE ID, ISSUER SPIRE's OIDC discovery provider). SUBJECT and
  ISSUER are compared exactly with the token's sub and iss. A subject acts as exactly one tenant; a
  tenant may trust several. The token must be made for --audience (its aud) [${DEFAULT_AUDIENCE}], live at
  most an hour, and be signed with an asymmetric key of ISSUER.
  The issuer's keys come from its discovery document (ISSUER/.well-known/openid-configuration) unless
  --jwks-url names its JWKS, or --jwks-file gives the JWKS itself, for an issuer dnsplane cannot reach
  (kubectl get --raw /openid/v1/jwks > cluster1.jwks; upload it again when the cluster's keys change).
  --ca-file: the CA (PEM) of the issuer's HTTPS, instead of the system's. Where the keys come from is
  the issuer's: given here, it changes for every tenant trusting that issuer; not given, an issuer
  trusted already keeps its own.
untrust: the subject's tokens stop acting as the tenant at once, on every replica.
show: the tenant and the subjects it trusts, each with its issuer, audience, where the keys come from
  and when it last called (written at most once per DNSPLANE_LAST_SEEN_WRITE).

Works on the database directly (DATABASE_URL, or the embedded one), as tenant create does.
See docs/credentials.md ("Workload identity") and docs/kubernetes.md.`;

function one(positionals: string[]): string {
  if (positionals.length !== 1) throw new InvalidInputError('NAME', 'exactly one tenant name is required');
  return positionals[0]!;
}

/** Field names of core's errors as the command's flags. */
const FLAGS: Record<string, string> = {
  issuer: '--issuer',
  subject: '--subject',
  audience: '--audience',
  jwksUrl: '--jwks-url',
  jwks: '--jwks-file',
  caPem: '--ca-file',
};
function asFlags<T>(p: Promise<T>): Promise<T> {
  return p.catch((e: unknown) => {
    if (e instanceof InvalidInputError && FLAGS[e.field]) throw new InvalidInputError(FLAGS[e.field]!, e.rule);
    throw e;
  });
}

function trustRows(trusts: TrustView[]): string[] {
  const rows = [['ISSUER', 'SUBJECT', 'AUDIENCE', 'KEYS', 'TRUSTED SINCE', 'LAST SEEN']];
  for (const t of trusts) rows.push([t.issuer, t.subject, t.audience, t.keys, t.createdAt.toISOString(), t.lastSeenAt?.toISOString() ?? '-']);
  return table(rows);
}

export async function runTrust(sub: 'trust' | 'untrust' | 'show', rest: string[], io: CliIo): Promise<number> {
  if (sub === 'show') {
    const { values, positionals } = parseArgs({ args: rest, options: { output: { type: 'string' } }, allowPositionals: true, strict: true });
    const name = one(positionals);
    const output = values.output ?? 'text';
    if (output !== 'text' && output !== 'json') throw new InvalidInputError('--output', `must be text or json, got "${output}"`);
    return withDatabase(io, async (db) => {
      const tenant = await store.getTenantByName(db.pool, name);
      if (!tenant) throw new store.NotFoundError('tenant', name);
      const trusts = await listTrust({ pool: db.pool, actor: null }, name);
      if (output === 'json') {
        io.out(JSON.stringify({ ...tenant, trustedSubjects: trusts }, null, 2));
        return 0;
      }
      io.out(`tenant "${tenant.name}"${tenant.disabled ? ' (disabled)' : ''}`);
      io.out(`  scopes: ${tenant.scopes.join(', ') || '-'}; zones: ${tenant.zones.join(', ') || '(all)'}; suffixes: ${tenant.suffixes.join(', ') || '-'}`);
      io.out(`  token set: ${tenant.tokenRotatedAt.toISOString()}; last seen: ${tenant.lastSeenAt?.toISOString() ?? '-'}`);
      if (trusts.length === 0) {
        io.out('  trusted subjects: none (only its dnsplane token authenticates it)');
        return 0;
      }
      io.out(`  trusted subjects (${trusts.length}):`);
      for (const line of trustRows(trusts)) io.out(`    ${line}`);
      return 0;
    });
  }
  const flags = sub === 'trust' ? ['issuer', 'subject', 'audience', 'jwks-url', 'jwks-file', 'ca-file'] : ['issuer', 'subject'];
  const options = Object.fromEntries(flags.map((f) => [f, { type: 'string' as const }]));
  const { values, positionals } = parseArgs({ args: rest, options, allowPositionals: true, strict: true });
  const name = one(positionals);
  const v = values as Record<string, string | undefined>;
  if (v['issuer'] === undefined) throw new InvalidInputError('--issuer', "is required: the issuer's URL, exactly as the tokens' iss");
  if (v['subject'] === undefined) throw new InvalidInputError('--subject', "is required: the subject, exactly as the tokens' sub");
  if (v['jwks-url'] !== undefined && v['jwks-file'] !== undefined) throw new InvalidInputError('--jwks-file', 'give --jwks-url or --jwks-file, not both');
  const jwks = readFileFlag(v['jwks-file'], '--jwks-file');
  const caPem = readFileFlag(v['ca-file'], '--ca-file');
  return withDatabase(io, async (db) => {
    const admin = { pool: db.pool, actor: null };
    if (sub === 'untrust') {
      const t = await asFlags(untrustSubject(admin, { tenant: name, issuer: v['issuer']!, subject: v['subject']! }));
      io.out(`tenant "${t.tenant}" no longer trusts subject ${t.subject} of issuer ${t.issuer}: its tokens stop working at once`);
      return 0;
    }
    const { trust, sourceChanged, others } = await asFlags(
      trustSubject(admin, {
        tenant: name,
        issuer: v['issuer']!,
        subject: v['subject']!,
        ...(v['audience'] !== undefined ? { audience: v['audience'] } : {}),
        ...(v['jwks-url'] !== undefined ? { jwksUrl: v['jwks-url'] } : {}),
        ...(jwks !== undefined ? { jwks } : {}),
        ...(caPem !== undefined ? { caPem } : {}),
      }),
    );
    io.out(`tenant "${trust.tenant}" trusts subject ${trust.subject} of issuer ${trust.issuer}, audience ${trust.audience}; keys: ${trust.keys}`);
    if (sourceChanged && others > 0) io.out(`the issuer's keys now come from there for the ${others} other subject(s) trusted of it too`);
    return 0;
  });
}
