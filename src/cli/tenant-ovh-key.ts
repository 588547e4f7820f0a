/**
 * `dnsplane tenant ovh-key create|list|rotate|delete`: a tenant's OVH-style keys, managed in the
 * database directly like `dnsplane tenant` (beside a running serve through its connection file). A
 * new key is printed once — the four values a tool changes (OVH_ENDPOINT and the three keys) and
 * each tool's configuration (cli/ovh-key-config.ts). The application secret is sealed under
 * DNSPLANE_SECRETS_KEY (demo mode: the key in its data dir), which must be the servers' key.
 */
import { ovhApiAdvertise, parseDuration } from '../config.js';
import { oldStops } from '../core/credentials/admin.js';
import { createOvhKey, deleteOvhKey, listOvhKeys, rotateOvhKey, type IssuedOvhKey, type OvhKeyView } from '../core/credentials/ovh-admin.js';
import { configFrom, type CliIo } from './command.js';
import { keyJson, runCredential, when, type CredentialKind } from './credential-command.js';
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

function printIssued(io: CliIo, issued: IssuedOvhKey, endpoint: OvhApiEndpoint, json: boolean, verb: 'created' | 'rotated'): void {
  const { key } = issued;
  const forConfig = {
    applicationKey: key.applicationKey,
    applicationSecret: issued.applicationSecret,
    consumerKey: issued.consumerKey,
    tenant: key.tenant,
    zones: issued.tenant.zones,
  };
  if (json) {
    io.out(
      JSON.stringify(
        {
          key: keyJson(key),
          endpoint: { url: endpoint.url, source: endpoint.source },
          values: {
            OVH_ENDPOINT: endpoint.url,
            OVH_APPLICATION_KEY: key.applicationKey,
            OVH_APPLICATION_SECRET: issued.applicationSecret,
            OVH_CONSUMER_KEY: issued.consumerKey,
          },
          config: ovhKeyConfigs(forConfig, endpoint),
        },
        null,
        2,
      ),
    );
    return;
  }
  const expiry = key.expiresAt ? `, valid until ${key.expiresAt.toISOString()}` : '';
  io.out(
    `${verb} OVH key ${key.applicationKey} for tenant "${key.tenant}"${expiry}${verb === 'rotated' ? `; ${oldStops('secret and consumer key', key.oldSecretValidUntil?.toISOString())}` : ''}`,
  );
  io.out(
    "its secret and consumer key follow; they are shown only this once (dnsplane keeps the secret sealed and the consumer key's sha-256; rotate issues new ones):",
  );
  io.out('');
  for (const line of renderOvhKeyConfigs(forConfig, endpoint)) io.out(line);
}

const OVH_KEY: CredentialKind<OvhKeyView, IssuedOvhKey, OvhApiEndpoint> = {
  command: 'ovh-key',
  what: 'OVH key',
  nameArg: 'APPLICATION_KEY',
  createOptions: { 'expires-in': { type: 'string' } },
  doorFlag: 'endpoint',
  door: endpointOf,
  create: (pool, secrets, tenant, v) =>
    createOvhKey(
      { pool, secrets, actor: null },
      { tenant, expiresInMs: typeof v['expires-in'] === 'string' ? parseDuration(v['expires-in'], '--expires-in') : undefined },
    ),
  list: (pool, tenant) => listOvhKeys({ pool, actor: null }, tenant),
  rotate: (pool, secrets, applicationKey, graceMs) => rotateOvhKey({ pool, secrets, actor: null }, applicationKey, graceMs, '--grace'),
  remove: (pool, applicationKey) => deleteOvhKey({ pool, actor: null }, applicationKey),
  header: ['APPLICATION KEY', 'TENANT', 'CREATED', 'ROTATED', 'LAST USED', 'EXPIRES', 'OLD SECRET UNTIL'],
  row: (k) => [
    k.applicationKey,
    k.tenant,
    when(k.createdAt),
    when(k.rotatedAt),
    when(k.lastUsedAt, 'never'),
    when(k.expiresAt, 'never'),
    when(k.oldSecretValidUntil),
  ],
  label: (k) => k.applicationKey,
  printIssued,
};

export async function runOvhKey(sub: string | undefined, rest: string[], io: CliIo): Promise<number> {
  return runCredential(OVH_KEY, sub, rest, io);
}
