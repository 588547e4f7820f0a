/**
 * `dnsplane tenant ovh-key create|list|rotate|delete`: a tenant's OVH-style keys, managed in the
 * database directly like `dnsplane tenant` (beside a running serve through its connection file). A
 * new key is printed once — the four values a tool changes (OVH_ENDPOINT and the three keys) and
 * each tool's configuration (cli/ovh-key-config.ts). The application secret is sealed under
 * DNSPLANE_SECRETS_KEY (demo mode: the key in its data dir), which must be the servers' key.
 */
import { parseArgs } from 'node:util';
import { ovhApiAdvertise, parseDuration } from '../config.js';
import { oldStops } from '../core/credentials/admin.js';
import { createOvhKey, deleteOvhKey, listOvhKeys, rotateOvhKey, type IssuedOvhKey, type OvhKeyView } from '../core/credentials/ovh-admin.js';
import { secretBoxFor } from '../demo.js';
import { InvalidInputError } from '../dns/errors.js';
import { configFrom, type CliIo } from './command.js';
import { withDatabase } from './migrate.js';
import { table } from './text.js';
import { ovhKeyConfigs, PLACEHOLDER_ENDPOINT, renderOvhKeyConfigs, type OvhApiEndpoint } from './ovh-key-config.js';

export const OVH_KEY_HELP = `Usage:
  dnsplane tenant ovh-key create TENANT [--expires-in DURATION] [--endpoint URL] [--json]
  dnsplane tenant ovh-key list [TENANT] [--json]
  dnsplane tenant ovh-key rotate APPLICATION_KEY [--grace DURATION] [--endpoint URL] [--json]
  dnsplane tenant ovh-key delete APPLICATION_KEY [--json]

OVH keys let tools that speak the OVH API — external-dns --provider=ovh, cert-manager-webhook-ovh,
lego, Traefik, Caddy, Terraform — use the OVH API dnsplane serves at /ovh/1.0 as the key's tenant: its
zones, its suffixes, its ownership; their writes are staged and published by their refresh through
dnsplane's apply (serialized per zone, minimal, coalesced, journaled). No OVH credential in the cluster.

create: a new key for TENANT: an application key, an application secret and a consumer key, printed
  once with OVH_ENDPOINT (the four values a tool changes) and ready-to-paste configuration for each
  tool; dnsplane keeps the secret sealed (AES-256-GCM) and only the consumer key's sha-256, and never
  shows them again (rotate issues new ones).
  --expires-in  the consumer key stops working after this (e.g. 720h); default: never.
  --endpoint    the URL tools reach the served OVH API at, ending in /ovh/1.0 (default:
                DNSPLANE_OVH_API_ADVERTISE, else http://DNSPLANE_LISTEN/ovh/1.0, else a placeholder).
list: the keys (of TENANT, or of every tenant): application key, created, rotated, last used (to
  within a minute), expiry, until when an old secret still works. Never a secret or a consumer key.
rotate: a new application secret and consumer key for the key (same application key, same expiry),
  printed once like create; the old ones stop working at once, on every replica, or with --grace
  (e.g. 10m, at most 7d) once that grace ends. A grace still running ends.
delete: the key stops working at once, on every replica.
--json: the answer as JSON (create and rotate: the key, the four values and each tool's configuration).

The secret is sealed under DNSPLANE_SECRETS_KEY (32 random bytes in base64; the servers' value): create
and rotate refuse without it, or with another key than the one the stored secrets were sealed with.
In demo mode the key kept in the data dir is used. Every change is in the journal (ListJournal).`;

/** --endpoint, else what the configuration says, else a placeholder. */
function endpointOf(flag: string | undefined, io: CliIo): OvhApiEndpoint {
  if (flag !== undefined) return { url: ovhApiAdvertise(flag, '0.0.0.0:0', '--endpoint')!, source: '--endpoint' };
  const advertised = configFrom(io).ovhApi.advertise;
  if (advertised) return { url: advertised, source: io.env['DNSPLANE_OVH_API_ADVERTISE']?.trim() ? 'DNSPLANE_OVH_API_ADVERTISE' : 'DNSPLANE_LISTEN' };
  return { url: PLACEHOLDER_ENDPOINT, source: 'placeholder' };
}

function keyJson(k: OvhKeyView): Record<string, unknown> {
  return {
    applicationKey: k.applicationKey,
    tenant: k.tenant,
    createdAt: k.createdAt.toISOString(),
    rotatedAt: k.rotatedAt?.toISOString() ?? null,
    lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
    expiresAt: k.expiresAt?.toISOString() ?? null,
    oldSecretValidUntil: k.oldSecretValidUntil?.toISOString() ?? null,
  };
}

function printIssued(io: CliIo, issued: IssuedOvhKey, endpoint: OvhApiEndpoint, json: boolean, verb: 'created' | 'rotated'): void {
  const { key } = issued;
  const forConfig = { applicationKey: key.applicationKey, applicationSecret: issued.applicationSecret, consumerKey: issued.consumerKey, tenant: key.tenant, zones: issued.tenant.zones };
  if (json) {
    io.out(
      JSON.stringify(
        {
          key: keyJson(key),
          endpoint: { url: endpoint.url, source: endpoint.source },
          values: { OVH_ENDPOINT: endpoint.url, OVH_APPLICATION_KEY: key.applicationKey, OVH_APPLICATION_SECRET: issued.applicationSecret, OVH_CONSUMER_KEY: issued.consumerKey },
          config: ovhKeyConfigs(forConfig, endpoint),
        },
        null,
        2,
      ),
    );
    return;
  }
  const expiry = key.expiresAt ? `, valid until ${key.expiresAt.toISOString()}` : '';
  io.out(`${verb} OVH key ${key.applicationKey} for tenant "${key.tenant}"${expiry}${verb === 'rotated' ? `; ${oldStops('secret and consumer key', key.oldSecretValidUntil?.toISOString())}` : ''}`);
  io.out('its secret and consumer key follow; they are shown only this once (dnsplane keeps the secret sealed and the consumer key\'s sha-256; rotate issues new ones):');
  io.out('');
  for (const line of renderOvhKeyConfigs(forConfig, endpoint)) io.out(line);
}

function onePositional(positionals: string[], what: string): string {
  if (positionals.length !== 1) throw new InvalidInputError(what, `exactly one ${what} is required (dnsplane tenant ovh-key --help)`);
  return positionals[0]!;
}

export async function runOvhKey(sub: string | undefined, rest: string[], io: CliIo): Promise<number> {
  switch (sub) {
    case 'create': {
      const { values, positionals } = parseArgs({
        args: rest,
        options: { 'expires-in': { type: 'string' }, endpoint: { type: 'string' }, json: { type: 'boolean' } },
        allowPositionals: true,
        strict: true,
      });
      const tenant = onePositional(positionals, 'TENANT');
      const endpoint = endpointOf(values.endpoint, io);
      const expiresInMs = values['expires-in'] === undefined ? undefined : parseDuration(values['expires-in'], '--expires-in');
      return withDatabase(io, async (db) => {
        const secrets = await secretBoxFor(configFrom(io));
        const issued = await createOvhKey({ pool: db.pool, secrets, actor: null }, { tenant, expiresInMs });
        printIssued(io, issued, endpoint, values.json ?? false, 'created');
        return 0;
      });
    }
    case 'list': {
      const { values, positionals } = parseArgs({ args: rest, options: { json: { type: 'boolean' } }, allowPositionals: true, strict: true });
      if (positionals.length > 1) throw new InvalidInputError('arguments', `unexpected "${positionals[1]}": at most one TENANT`);
      return withDatabase(io, async (db) => {
        const keys = await listOvhKeys({ pool: db.pool, actor: null }, positionals[0] ?? '');
        if (values.json) {
          io.out(JSON.stringify(keys.map(keyJson), null, 2));
          return 0;
        }
        if (keys.length === 0) {
          io.out(positionals[0] ? `tenant "${positionals[0]}" has no OVH key (dnsplane tenant ovh-key create ${positionals[0]})` : 'no OVH key');
          return 0;
        }
        const time = (d: Date | null, none: string) => d?.toISOString() ?? none;
        const rows = [['APPLICATION KEY', 'TENANT', 'CREATED', 'ROTATED', 'LAST USED', 'EXPIRES', 'OLD SECRET UNTIL']];
        for (const k of keys) rows.push([k.applicationKey, k.tenant, time(k.createdAt, '-'), time(k.rotatedAt, '-'), time(k.lastUsedAt, 'never'), time(k.expiresAt, 'never'), time(k.oldSecretValidUntil, '-')]);
        for (const line of table(rows)) io.out(line);
        return 0;
      });
    }
    case 'rotate': {
      const { values, positionals } = parseArgs({ args: rest, options: { grace: { type: 'string' }, endpoint: { type: 'string' }, json: { type: 'boolean' } }, allowPositionals: true, strict: true });
      const applicationKey = onePositional(positionals, 'APPLICATION_KEY');
      const graceMs = values.grace === undefined ? 0 : parseDuration(values.grace, '--grace');
      const endpoint = endpointOf(values.endpoint, io);
      return withDatabase(io, async (db) => {
        const secrets = await secretBoxFor(configFrom(io));
        const issued = await rotateOvhKey({ pool: db.pool, secrets, actor: null }, applicationKey, graceMs, '--grace');
        printIssued(io, issued, endpoint, values.json ?? false, 'rotated');
        return 0;
      });
    }
    case 'delete': {
      const { values, positionals } = parseArgs({ args: rest, options: { json: { type: 'boolean' } }, allowPositionals: true, strict: true });
      const applicationKey = onePositional(positionals, 'APPLICATION_KEY');
      return withDatabase(io, async (db) => {
        const key = await deleteOvhKey({ pool: db.pool, actor: null }, applicationKey);
        if (values.json) io.out(JSON.stringify({ deleted: keyJson(key) }, null, 2));
        else io.out(`deleted OVH key ${key.applicationKey} of tenant "${key.tenant}"; it no longer works`);
        return 0;
      });
    }
    default:
      throw new InvalidInputError('tenant ovh-key', `unknown subcommand "${sub ?? ''}"; use create, list, rotate or delete (dnsplane tenant ovh-key --help)`);
  }
}
