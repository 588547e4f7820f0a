/**
 * `dnsplane tenant tsig create|list|rotate|delete`: a tenant's TSIG keys, managed in the database
 * directly like `dnsplane tenant` (beside a running serve through its connection file). A new secret
 * is printed once, with the configuration of cert-manager, lego, certbot, external-dns and nsupdate
 * for it (cli/tsig-config.ts). The secret is sealed under DNSPLANE_SECRETS_KEY (demo mode: the key in
 * its data dir), which must be the servers' key.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DNS_DOOR_PORT_FILE } from '../demo.js';
import { createTsigKey, deleteTsigKey, listTsigKeys, rotateTsigKey, type IssuedTsigKey, type TsigKeyView } from '../core/credentials/tsig-admin.js';
import { DEFAULT_TSIG_ALGORITHM, TSIG_ALGORITHMS } from '../core/credentials/tsig.js';
import { parseListen } from '../config.js';
import { oldStops } from '../core/credentials/admin.js';
import { configFrom, type CliIo } from './command.js';
import { keyJson, runCredential, when, type CredentialKind } from './credential-command.js';
import { PLACEHOLDER_HOST, renderTsigConfigs, tsigConfigs, type DnsServer } from './tsig-config.js';

export const TSIG_HELP = `Usage:
  dnsplane tenant tsig create TENANT [--algorithm ALG] [--name NAME] [--acme-only] [--server HOST:PORT] [--json]
  dnsplane tenant tsig list [TENANT] [--json]
  dnsplane tenant tsig rotate NAME [--grace DURATION] [--server HOST:PORT] [--json]
  dnsplane tenant tsig delete NAME [--json]

TSIG keys (RFC 8945) let DNS UPDATE clients — cert-manager's rfc2136 solver, lego, certbot, external-dns,
nsupdate — write through dnsplane's DNS listener as the key's tenant: its zones, its suffixes, its
ownership, like Apply. No OVH credential in the cluster.

create: a new key for TENANT. Its secret is printed once, with ready-to-paste configuration for
  cert-manager, lego, certbot, external-dns and nsupdate; dnsplane keeps it sealed (AES-256-GCM) and
  never shows it again (rotate issues a new one).
  --algorithm   ${TSIG_ALGORITHMS.join(', ')}
                (default ${DEFAULT_TSIG_ALGORITHM}). cert-manager takes hmac-md5, -sha1, -sha256 and
                -sha512; lego all but hmac-md5; certbot, external-dns and nsupdate all six.
  --name        the key's name, a DNS name unique across tenants (default: TENANT-<8 hex>.dnsplane).
                Written with or without the trailing dot; kept lowercase without it.
  --acme-only   the key may only add and delete TXT records named _acme-challenge.* in the tenant's
                zones: enough for certificates (DNS-01), nothing else.
  --server      where clients reach dnsplane's DNS listener, for the printed configuration (default:
                DNSPLANE_DNS_ADVERTISE, else DNSPLANE_DNS_LISTEN, else the demo's DNS door of this
                DNSPLANE_DATA_DIR, else a placeholder to replace). Run beside the servers (kubectl
                exec into a dnsplane pod has DNSPLANE_DNS_ADVERTISE), or pass --server.
list: the keys (of TENANT, or of every tenant): name, algorithm, scope, created, rotated, last used
  (to within a minute), until when an old secret still works. Never a secret.
rotate: a new secret for the key (same name, algorithm and scope), printed once like create; the old
  secret stops working at once, on every replica, or with --grace (e.g. 10m, at most 7d) once that
  grace ends: clients not updated yet keep working meanwhile. A grace still running ends.
delete: the key stops working at once, on every replica.
--json: the answer as JSON (create and rotate: the key, its secret and each tool's configuration).

The secret is sealed under DNSPLANE_SECRETS_KEY (32 random bytes in base64; the servers' value): create
and rotate refuse without it, or with another key than the one the stored secrets were sealed with.
In demo mode the key kept in the data dir is used. Every change is in the journal (ListJournal).`;

/**
 * --server, else what the configuration says (DNSPLANE_DNS_ADVERTISE, DNSPLANE_DNS_LISTEN), else the
 * door a demo server of this data directory recorded (127.0.0.1, its kept port), else a placeholder.
 */
function dnsServer(flag: string | undefined, io: CliIo): DnsServer {
  if (flag !== undefined) return { ...parseListen(flag, '--server'), source: '--server' };
  const config = configFrom(io);
  const advertised = config.dnsAdvertise;
  if (advertised) {
    const source = io.env['DNSPLANE_DNS_ADVERTISE']?.trim() ? 'DNSPLANE_DNS_ADVERTISE' : 'DNSPLANE_DNS_LISTEN';
    // A listener on every address says nothing of where clients reach it.
    const host = ['0.0.0.0', '::', ''].includes(advertised.host) ? PLACEHOLDER_HOST : advertised.host;
    return { host, port: advertised.port, source: host === PLACEHOLDER_HOST ? 'placeholder' : source };
  }
  const recorded = Number(readIfThere(path.join(config.dataDir, DNS_DOOR_PORT_FILE)).trim());
  if (Number.isInteger(recorded) && recorded > 0 && recorded < 65536)
    return { host: '127.0.0.1', port: recorded, source: `the demo's DNS door (${path.join(config.dataDir, DNS_DOOR_PORT_FILE)})` };
  return { host: PLACEHOLDER_HOST, port: 53, source: 'placeholder' };
}

function readIfThere(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function printIssued(io: CliIo, issued: IssuedTsigKey, server: DnsServer, json: boolean, verb: 'created' | 'rotated'): void {
  const { key } = issued;
  const secret = issued.secret.toString('base64');
  const forConfig = { name: key.name, algorithm: key.algorithm, secret, tenant: key.tenant, zones: issued.tenant.zones, acmeOnly: key.acmeOnly };
  if (json) {
    io.out(
      JSON.stringify(
        {
          key: keyJson(key),
          secret,
          server: { host: server.host, port: server.port, source: server.source },
          config: tsigConfigs(forConfig, server, configFrom(io).ovhRate),
        },
        null,
        2,
      ),
    );
    return;
  }
  io.out(
    `${verb} TSIG key "${key.name}." (${key.algorithm}, ${key.acmeOnly ? 'acme-only: _acme-challenge TXT records only' : 'acting as the tenant'}) for tenant "${key.tenant}"${verb === 'rotated' ? `; ${oldStops('secret', key.oldSecretValidUntil?.toISOString())}` : ''}`,
  );
  io.out('its secret (base64) follows; it is shown only this once (dnsplane keeps it sealed; rotate issues a new one):');
  io.out(secret);
  io.out('');
  for (const line of renderTsigConfigs(forConfig, server, configFrom(io).ovhRate)) io.out(line);
}

const TSIG: CredentialKind<TsigKeyView, IssuedTsigKey, DnsServer> = {
  command: 'tsig',
  what: 'TSIG key',
  nameArg: 'NAME',
  createOptions: { algorithm: { type: 'string' }, name: { type: 'string' }, 'acme-only': { type: 'boolean' } },
  doorFlag: 'server',
  door: dnsServer,
  create: (pool, secrets, tenant, v) =>
    createTsigKey(
      { pool, secrets, actor: null },
      { tenant, algorithm: v.algorithm as string | undefined, name: v.name as string | undefined, acmeOnly: v['acme-only'] === true },
    ),
  list: (pool, tenant) => listTsigKeys(pool, tenant),
  rotate: (pool, secrets, name, graceMs) => rotateTsigKey({ pool, secrets, actor: null }, name, graceMs, '--grace'),
  remove: (pool, name) => deleteTsigKey({ pool, actor: null }, name),
  header: ['NAME', 'TENANT', 'ALGORITHM', 'SCOPE', 'CREATED', 'ROTATED', 'LAST USED', 'OLD SECRET UNTIL'],
  row: (k) => [
    `${k.name}.`,
    k.tenant,
    k.algorithm,
    k.acmeOnly ? 'acme-only' : 'tenant',
    when(k.createdAt),
    when(k.rotatedAt),
    when(k.lastUsedAt, 'never'),
    when(k.oldSecretValidUntil),
  ],
  label: (k) => `"${k.name}."`,
  printIssued,
};

export async function runTsig(sub: string | undefined, rest: string[], io: CliIo): Promise<number> {
  return runCredential(TSIG, sub, rest, io);
}
