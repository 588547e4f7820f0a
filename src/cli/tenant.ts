/**
 * `dnsplane tenant create|list|rotate|disable`: tenants, managed directly in the database (DATABASE_URL
 * or the embedded one) — the way to make the first admin, before any token exists. A token is printed
 * once, as the last line; dnsplane keeps only its SHA-256. Over the API, AdminService does the same.
 */
import { parseArgs } from 'node:util';
import {
  createTenantInManagedZones,
  listTenants,
  rotateTenantToken,
  setTenantDisabled,
  setTenantMaxChangePercent,
  setTenantWithdrawAfter,
  type Tenant,
  type ZoneSources,
} from '../core/tenants/tenants.js';
import { OvhApi } from '../ovh/client.js';
import { InvalidInputError } from '../dns/errors.js';
import { parseDuration, type Config } from '../config/config.js';
import { configFrom, type CliIo, type Command } from './command.js';
import { withDatabase } from './migrate.js';
import { table } from './text.js';
import { CONNECTION_FILE } from '../store/index.js';
import { OVH_KEY_HELP, runOvhKey, runTsig, TSIG_HELP } from './tenant-keys.js';
import { runTrust, TRUST_HELP } from './tenant-trust.js';
import { LIFE_HELP, runDrain, runHandover, runRetire } from './tenant-life.js';
import { setWriteQuota } from '../core/tenants/write-quota.js';

const HELP = `Usage:
  dnsplane tenant create NAME --zone ZONE [--zone …] [--suffix SUFFIX …] [--admin]
  dnsplane tenant list [--output text|json]
  dnsplane tenant rotate NAME [--grace DURATION]
  dnsplane tenant disable NAME [--enable]
  dnsplane tenant set-max-change NAME PERCENT|default
  dnsplane tenant set NAME --withdraw-after DURATION|off
  dnsplane tenant set NAME --writes-per-day N --write-burst M | --writes-per-day off
  dnsplane tenant show NAME [--output text|json]
  dnsplane tenant trust NAME --issuer URL --subject SUBJECT [--audience AUD] [--jwks-url URL | --jwks-file FILE] [--ca-file FILE]
  dnsplane tenant untrust NAME --issuer URL --subject SUBJECT   (dnsplane tenant trust --help)
  dnsplane tenant tsig create|list|rotate|delete …   (dnsplane tenant tsig --help)
  dnsplane tenant ovh-key create|list|rotate|delete … (dnsplane tenant ovh-key --help)
  dnsplane tenant handover OLD NEW [--zone ZONE] [--suffix SUFFIX] [--dry-run]   (dnsplane tenant handover --help)
  dnsplane tenant drain|undrain NAME [--zone ZONE]                               (dnsplane tenant drain --help)
  dnsplane tenant retire NAME --handover-to OTHER | --delete-records [--plan ID]  (dnsplane tenant retire --help)

create: a tenant allowed to manage records in the given zones (and, with --suffix, only names under
  those suffixes, e.g. --suffix cluster1.example.com). Each zone must be one dnsplane manages
  (\`dnsplane serve\` registers DNSPLANE_ZONES, or every zone OVH lists, when it starts), or one this
  command finds exists: DNSPLANE_ZONES names it, or (with the OVH_* credentials set) the OVH account
  holds it; it is then registered, and the server reads it at its first use.
  --admin adds the admin scope; an admin with no --zone may use every zone. The bearer token is
  printed once, as the last line.
rotate: a new token (printed once, last line); the old one stops working at once, or with --grace
  (e.g. 10m, 1h; at most 7 days) only after that: external-dns treats a 401 as fatal, so give the
  clusters' Secrets time to be updated. A grace still running from an earlier rotation ends.
disable: the tenant's token stops working; its records and ownership stay. --enable undoes it.
set-max-change: the tenant's own change threshold: an apply updating or deleting more than PERCENT
  (0-100) of the record sets it owns in a zone (when it owns 10 or more there) is refused unless
  forced; "default" puts back the server's DNSPLANE_MAX_CHANGE_PERCENT.
set --withdraw-after: when the tenant makes no authenticated call for DURATION (e.g. 5m, 30s; whole
  seconds, 1s to 30 days) its targets of shared record sets are withdrawn from OVH — never the last
  target of a set; exclusive sets stay — and restored at its next call (docs/failover.md). "off"
  turns it off; what was withdrawn for its silence comes back within DNSPLANE_SILENT_CHECK_INTERVAL.
set --writes-per-day N --write-burst M: the tenant's write quota (off by default): the OVH writes
  its applies cause (creates and updates; never deletions, nor withdrawals) come from a bucket of M
  writes refilled at N a day, one count shared by every replica. An apply that would exceed it is
  refused before anything is sent, naming the quota and when it refills (docs/operations.md).
  "--writes-per-day off" turns it off.
show: the tenant, and the workload subjects it trusts with when each last called.
trust, untrust: a workload identity (a Kubernetes ServiceAccount's projected token, a SPIRE
  JWT-SVID) whose JWTs act as the tenant instead of its token: no long-lived secret in the cluster;
  see dnsplane tenant trust --help.
tsig: the tenant's TSIG keys, for DNS UPDATE clients (cert-manager, lego, certbot, external-dns,
  nsupdate); see dnsplane tenant tsig --help.
ovh-key: the tenant's OVH-style keys, for tools that speak the OVH API (external-dns --provider=ovh,
  cert-manager-webhook-ovh, lego, Traefik, Caddy, Terraform); see dnsplane tenant ovh-key --help.
handover: a cluster replaced — OLD's ownership becomes NEW's, no OVH call, undone with journal
  revert; over the API with an admin token; see dnsplane tenant handover --help.
drain, undrain: the tenant's targets of shared sets withdrawn from OVH for maintenance, and back;
  over the API with an admin token; see dnsplane tenant drain --help.
retire: the tenant ended: its records handed over or deleted (an apply), then disabled; over the API
  with an admin token; see dnsplane tenant retire --help.

Works on the database directly (DATABASE_URL, or the embedded one under DNSPLANE_DATA_DIR). Beside a
running \`dnsplane serve\` on the embedded database, it connects through the connection file the server
keeps in the data dir (${CONNECTION_FILE}, mode 0600).`;

/**
 * Where `tenant create` may learn that a zone not managed yet exists: DNSPLANE_ZONES, else the OVH
 * account (one GET /domain/zone) when the OVH credentials are set.
 */
function zoneSources(cfg: Config): ZoneSources {
  if (cfg.ovh.mode !== 'remote') return cfg.zones ? { configured: cfg.zones } : {};
  const { endpoint, credentials, extraCaPems } = cfg.ovh;
  return {
    ...(cfg.zones ? { configured: cfg.zones } : {}),
    listOvh: () => new OvhApi({ endpoint, credentials, extraCaPems, timeoutMs: cfg.ovhTimeoutMs, ratePerSecond: cfg.ovhRate, maxConcurrent: 1 }).listZones(),
  };
}

/** --writes-per-day N --write-burst M as numbers, or "off" (both null); the rules themselves are core's (setWriteQuota). */
function quotaFlags(perDay: string | undefined, burst: string | undefined): { perDay: number | null; burst: number | null } {
  if (perDay === 'off') {
    if (burst !== undefined) throw new InvalidInputError('--write-burst', 'must not be given with --writes-per-day off');
    return { perDay: null, burst: null };
  }
  const num = (v: string | undefined, flag: string) => {
    if (v === undefined) return null;
    if (!/^[0-9]+$/.test(v)) throw new InvalidInputError(flag, `must be a whole number, got "${v}"`);
    return Number(v);
  };
  return { perDay: num(perDay, '--writes-per-day'), burst: num(burst, '--write-burst') };
}

function one(positionals: string[]): string {
  if (positionals.length !== 1) throw new InvalidInputError('NAME', 'exactly one tenant name is required');
  return positionals[0]!;
}

/** When the old token of a rotation with grace stops working, while it still works. */
function oldTokenUntil(t: Tenant): Date | undefined {
  return t.previousTokenValidUntil && t.previousTokenValidUntil.getTime() > Date.now() ? t.previousTokenValidUntil : undefined;
}

function describe(t: Tenant): string {
  return `tenant "${t.name}"${t.scopes.length ? ` (scopes: ${t.scopes.join(', ')})` : ''}, zones: ${t.zones.join(', ') || '(all)'}${t.suffixes.length ? `, suffixes: ${t.suffixes.join(', ')}` : ''}`;
}

async function run(sub: string | undefined, rest: string[], io: CliIo): Promise<number> {
  switch (sub) {
    case 'create': {
      const { values, positionals } = parseArgs({
        args: rest,
        options: { zone: { type: 'string', multiple: true }, suffix: { type: 'string', multiple: true }, admin: { type: 'boolean' } },
        allowPositionals: true,
        strict: true,
      });
      const name = one(positionals);
      const cfg = configFrom(io);
      return withDatabase(io, async (db) => {
        const {
          tenant: t,
          token,
          registered,
        } = await createTenantInManagedZones(
          db.pool,
          { name, zones: values.zone ?? [], suffixes: values.suffix ?? [], admin: values.admin ?? false },
          zoneSources(cfg),
        );
        for (const zone of registered)
          io.out(
            `registered zone ${zone} (${cfg.zones?.includes(zone) ? 'DNSPLANE_ZONES names it' : 'the OVH account holds it'}): the server reads it from OVH at its first use`,
          );
        io.out(`created ${describe(t)}`);
        io.out('its bearer token follows; it is shown only this once:');
        io.out(token);
        return 0;
      });
    }
    case 'list': {
      const { values, positionals } = parseArgs({ args: rest, options: { output: { type: 'string' } }, allowPositionals: true, strict: true });
      if (positionals.length) throw new InvalidInputError('arguments', `unexpected "${positionals[0]}"`);
      const output = values.output ?? 'text';
      if (output !== 'text' && output !== 'json') throw new InvalidInputError('--output', `must be text or json, got "${output}"`);
      return withDatabase(io, async (db) => {
        const tenants = await listTenants(db.pool);
        if (output === 'json') {
          io.out(
            JSON.stringify(
              tenants.map((t) => ({
                ...t,
                createdAt: t.createdAt.toISOString(),
                tokenRotatedAt: t.tokenRotatedAt.toISOString(),
                previousTokenValidUntil: oldTokenUntil(t)?.toISOString(),
                lastSeenAt: t.lastSeenAt?.toISOString(),
              })),
              null,
              2,
            ),
          );
          return 0;
        }
        const rows = [['NAME', 'SCOPES', 'ZONES', 'SUFFIXES', 'DISABLED', 'TOKEN SET', 'OLD TOKEN UNTIL', 'WITHDRAW AFTER', 'LAST SEEN', 'FROM']];
        for (const t of tenants) {
          rows.push([
            t.name,
            t.scopes.join(',') || '-',
            t.zones.join(',') || '(all)',
            t.suffixes.join(',') || '-',
            t.disabled ? 'yes' : 'no',
            t.tokenRotatedAt.toISOString(),
            oldTokenUntil(t)?.toISOString() ?? '-',
            t.withdrawAfterMs === undefined ? 'off' : `${t.withdrawAfterMs / 1000}s`,
            t.lastSeenAt?.toISOString() ?? '-',
            t.lastSeenFrom ?? '-',
          ]);
        }
        for (const line of table(rows)) io.out(line);
        return 0;
      });
    }
    case 'rotate': {
      const { values, positionals } = parseArgs({ args: rest, options: { grace: { type: 'string' } }, allowPositionals: true, strict: true });
      const name = one(positionals);
      const graceMs = values.grace === undefined ? 0 : parseDuration(values.grace, '--grace');
      return withDatabase(io, async (db) => {
        const { tenant: t, token } = await rotateTenantToken(db.pool, name, graceMs, '--grace');
        const until = t.previousTokenValidUntil;
        io.out(`rotated the token of ${describe(t)}; ${until ? `the old token still works until ${until.toISOString()}` : 'the old token no longer works'}`);
        io.out('the new bearer token follows; it is shown only this once:');
        io.out(token);
        return 0;
      });
    }
    case 'disable': {
      const { values, positionals } = parseArgs({ args: rest, options: { enable: { type: 'boolean' } }, allowPositionals: true, strict: true });
      const name = one(positionals);
      return withDatabase(io, async (db) => {
        const t = await setTenantDisabled(db.pool, name, !values.enable);
        io.out(t.disabled ? `disabled ${describe(t)}; its token no longer works, its records stay` : `enabled ${describe(t)}`);
        return 0;
      });
    }
    case 'set-max-change': {
      const { positionals } = parseArgs({ args: rest, options: {}, allowPositionals: true, strict: true });
      if (positionals.length !== 2) throw new InvalidInputError('arguments', 'NAME and PERCENT (0-100, or "default") are required');
      const [name, value] = positionals as [string, string];
      const percent = value === 'default' ? null : /^\d+$/.test(value) ? Number(value) : NaN;
      if (Number.isNaN(percent)) throw new InvalidInputError('PERCENT', `must be 0-100 or "default", got "${value}"`);
      return withDatabase(io, async (db) => {
        const t = await setTenantMaxChangePercent(db.pool, name, percent);
        io.out(
          `tenant "${t.name}": change threshold ${t.maxChangePercent === null ? "the server's default (DNSPLANE_MAX_CHANGE_PERCENT)" : `${t.maxChangePercent}%`}`,
        );
        return 0;
      });
    }
    case 'set': {
      const { values, positionals } = parseArgs({
        args: rest,
        options: { 'withdraw-after': { type: 'string' }, 'writes-per-day': { type: 'string' }, 'write-burst': { type: 'string' } },
        allowPositionals: true,
        strict: true,
      });
      const name = one(positionals);
      const value = values['withdraw-after'];
      const quota = values['writes-per-day'] !== undefined || values['write-burst'] !== undefined;
      if (value === undefined && !quota)
        throw new InvalidInputError(
          '--withdraw-after',
          'is required (a duration like 5m or 30s, or "off"), or --writes-per-day N --write-burst M (or --writes-per-day off)',
        );
      const ms = value === undefined ? undefined : value === 'off' ? null : parseDuration(value, '--withdraw-after');
      const q = quota ? quotaFlags(values['writes-per-day'], values['write-burst']) : undefined;
      return withDatabase(io, async (db) => {
        if (ms !== undefined) {
          const t = await setTenantWithdrawAfter(db.pool, name, ms);
          io.out(
            `tenant "${t.name}": ${t.withdrawAfterMs === undefined ? 'withdraw-after off: nothing is withdrawn for its silence' : `its targets of shared record sets are withdrawn after ${t.withdrawAfterMs / 1000}s without a call`}`,
          );
        }
        if (q) {
          const t = await setWriteQuota(db.pool, name, q.perDay, q.burst, { perDay: '--writes-per-day', burst: '--write-burst' });
          io.out(
            `tenant "${t.name}": ${t.writeQuota === undefined ? 'no write quota' : `write quota ${t.writeQuota.perDay} OVH writes a day, burst ${t.writeQuota.burst} (deletions never counted)`}`,
          );
        }
        return 0;
      });
    }
    case 'show':
    case 'trust':
    case 'untrust':
      return runTrust(sub, rest, io);
    case 'tsig':
      return runTsig(rest[0], rest.slice(1), io);
    case 'ovh-key':
      return runOvhKey(rest[0], rest.slice(1), io);
    case 'handover':
      return runHandover(rest, io);
    case 'drain':
    case 'undrain':
      return runDrain(rest, io, sub === 'undrain');
    case 'retire':
      return runRetire(rest, io);
    default:
      throw new InvalidInputError(
        'tenant',
        `unknown subcommand "${sub ?? ''}"; use create, list, show, rotate, disable, set-max-change, set, trust, untrust, tsig, ovh-key, handover, drain, undrain or retire (dnsplane tenant --help)`,
      );
  }
}

export const tenantCommand: Command = {
  summary:
    'manage tenants: create (prints the token as the last line), list, show, rotate, disable, set --withdraw-after|--writes-per-day, trust/untrust (workload identity), tsig, ovh-key, handover, drain/undrain, retire',
  help: HELP,
  helpFor: (args) =>
    args[0] === 'tsig'
      ? TSIG_HELP
      : args[0] === 'ovh-key'
        ? OVH_KEY_HELP
        : args[0] === 'trust' || args[0] === 'untrust'
          ? TRUST_HELP
          : ['handover', 'drain', 'undrain', 'retire'].includes(args[0] ?? '')
            ? LIFE_HELP
            : HELP,
  run: ([sub, ...rest], io) => run(sub, rest, io),
};
