/**
 * `dnsplane tenant tsig` and `dnsplane tenant ovh-key` (create|list|rotate|delete): a tenant's keys,
 * managed in the database directly like `dnsplane tenant` (beside a running serve through its
 * connection file), both by one skeleton (runKeys). A new secret is printed once, with each tool's
 * configuration (cli/key-configs.ts); it is sealed under DNSPLANE_SECRETS_KEY
 * (demo mode: the key in its data dir), which must be the servers' key. A kind (KeyCommand) says only
 * what differs: its help and options, where clients reach the door, its listing and what it prints.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ovhApiAdvertise, parseDuration, parseListen } from '../config/config.js';
import { oldStops, type Issued, type KeyAdmin, type KeyView } from '../core/credentials/admin.js';
import { createOvhKey, OVH_KEY_ADMIN, type IssuedOvhKey, type OvhKeyView } from '../core/credentials/ovh-admin.js';
import { createTsigKey, TSIG_KEY_ADMIN, type IssuedTsigKey, type TsigKeyView } from '../core/credentials/tsig-admin.js';
import { DEFAULT_TSIG_ALGORITHM, TSIG_ALGORITHMS } from '../dns/tsig-keys.js';
import { DNS_DOOR_PORT_FILE, secretBoxFor } from '../demo/demo.js';
import { InvalidInputError } from '../dns/errors.js';
import { configFrom, type CliIo } from './command.js';
import { withDatabase } from './migrate.js';
import {
  ovhKeyConfigs,
  PLACEHOLDER_ENDPOINT,
  PLACEHOLDER_HOST,
  renderOvhKeyConfigs,
  renderTsigConfigs,
  tsigConfigs,
  type DnsServer,
  type OvhApiEndpoint,
} from './key-configs.js';
import { table } from './text.js';

type Options = NonNullable<ParseArgsConfig['options']>;
type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** What a kind of key differs in on the command line. `V`: a key as listed; `M`: what is minted; `W`: where clients reach the door. */
interface KeyCommand<V extends KeyView, M, W> {
  /** The subcommand of `dnsplane tenant` ("tsig"). */
  command: string;
  /** The positional rotate and delete take ("NAME"). */
  nameArg: string;
  /** create's options beyond --json and the door flag, and the key they ask for. */
  createOptions: Options;
  create(admin: KeyAdmin, tenant: string, values: Values): Promise<Issued<V, M>>;
  /** The kind's entry points (core/credentials/admin.ts keyAdmin), with its words: a key in messages ("TSIG key"), what a rotation replaces ("secret"). */
  admin: {
    what: string;
    replaces: string;
    list(admin: KeyAdmin, tenant: string): Promise<V[]>;
    rotate(admin: KeyAdmin, name: string, graceMs: number, graceField: string): Promise<Issued<V, M>>;
    remove(admin: KeyAdmin, name: string): Promise<V>;
  };
  /** The flag that says where clients reach the door ("server"), and what it says else. */
  doorFlag: string;
  door(flag: string | undefined, io: CliIo): W;
  /** The listing's header and a key's row; how a key is named in "deleted …" (`"name."`, an application key). */
  header: string[];
  row(k: V): string[];
  label(k: V): string;
  /** A key issued: the first line after "created "/"rotated ", the lines that follow it, the JSON beside `key`. */
  headline(k: V): string;
  lines(issued: Issued<V, M>, door: W, io: CliIo): string[];
  json(issued: Issued<V, M>, door: W, io: CliIo): Record<string, unknown>;
}

/** A time for a listing's cell; `none` when there is none. */
function when(d: Date | null, none = '-'): string {
  return d?.toISOString() ?? none;
}

/** A key as JSON: its fields, times as ISO strings. */
function keyJson(k: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(k).map(([f, v]) => [f, v instanceof Date ? v.toISOString() : v]));
}

async function runKeys<V extends KeyView, M, W>(kind: KeyCommand<V, M, W>, sub: string | undefined, rest: string[], io: CliIo): Promise<number> {
  const { what, replaces } = kind.admin;
  const parse = (options: Options): { values: Values; positionals: string[] } =>
    parseArgs({ args: rest, options: { ...options, json: { type: 'boolean' } }, allowPositionals: true, strict: true });
  const one = (positionals: string[], arg: string): string => {
    if (positionals.length !== 1) throw new InvalidInputError(arg, `exactly one ${arg} is required (dnsplane tenant ${kind.command} --help)`);
    return positionals[0]!;
  };
  switch (sub) {
    case 'create':
    case 'rotate': {
      const { values, positionals } = parse(
        sub === 'create' ? { ...kind.createOptions, [kind.doorFlag]: { type: 'string' } } : { grace: { type: 'string' }, [kind.doorFlag]: { type: 'string' } },
      );
      const name = one(positionals, sub === 'create' ? 'TENANT' : kind.nameArg);
      const graceMs = typeof values.grace === 'string' ? parseDuration(values.grace, '--grace') : 0;
      const door = kind.door(values[kind.doorFlag] as string | undefined, io);
      return withDatabase(io, async (db) => {
        const admin = { pool: db.pool, secrets: await secretBoxFor(configFrom(io)), actor: null };
        const issued = sub === 'create' ? await kind.create(admin, name, values) : await kind.admin.rotate(admin, name, graceMs, '--grace');
        if (values.json) io.out(JSON.stringify({ key: keyJson(issued.key), ...kind.json(issued, door, io) }, null, 2));
        else {
          const until = sub === 'rotate' ? `; ${oldStops(replaces, issued.key.oldSecretValidUntil?.toISOString())}` : '';
          for (const line of [`${sub === 'create' ? 'created' : 'rotated'} ${kind.headline(issued.key)}${until}`, ...kind.lines(issued, door, io)])
            io.out(line);
        }
        return 0;
      });
    }
    case 'list': {
      const { values, positionals } = parse({});
      if (positionals.length > 1) throw new InvalidInputError('arguments', `unexpected "${positionals[1]}": at most one TENANT`);
      return withDatabase(io, async (db) => {
        const keys = await kind.admin.list({ pool: db.pool, secrets: undefined, actor: null }, positionals[0] ?? '');
        if (values.json) io.out(JSON.stringify(keys.map(keyJson), null, 2));
        else if (keys.length === 0)
          io.out(positionals[0] ? `tenant "${positionals[0]}" has no ${what} (dnsplane tenant ${kind.command} create ${positionals[0]})` : `no ${what}`);
        else for (const line of table([kind.header, ...keys.map(kind.row)])) io.out(line);
        return 0;
      });
    }
    case 'delete': {
      const { values, positionals } = parse({});
      const name = one(positionals, kind.nameArg);
      return withDatabase(io, async (db) => {
        const key = await kind.admin.remove({ pool: db.pool, secrets: undefined, actor: null }, name);
        if (values.json) io.out(JSON.stringify({ deleted: keyJson(key) }, null, 2));
        else io.out(`deleted ${what} ${kind.label(key)} of tenant "${key.tenant}"; it no longer works`);
        return 0;
      });
    }
    default:
      throw new InvalidInputError(
        `tenant ${kind.command}`,
        `unknown subcommand "${sub ?? ''}"; use create, list, rotate or delete (dnsplane tenant ${kind.command} --help)`,
      );
  }
}

/** The end of both helps: how secrets are kept. */
const SEALED_HELP = `The secret is sealed under DNSPLANE_SECRETS_KEY (32 random bytes in base64; the servers' value): create
and rotate refuse without it, or with another key than the one the stored secrets were sealed with.
In demo mode the key kept in the data dir is used. Every change is in the journal (ListJournal).`;

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

${SEALED_HELP}`;

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
  const file = path.join(config.dataDir, DNS_DOOR_PORT_FILE);
  let recorded = Number.NaN;
  try {
    recorded = Number(readFileSync(file, 'utf8').trim());
  } catch {}
  if (Number.isInteger(recorded) && recorded > 0 && recorded < 65536) return { host: '127.0.0.1', port: recorded, source: `the demo's DNS door (${file})` };
  return { host: PLACEHOLDER_HOST, port: 53, source: 'placeholder' };
}

/** What the configuration printer is told of a TSIG key issued. */
function tsigForConfig({ key, secret, tenant }: IssuedTsigKey) {
  return { name: key.name, algorithm: key.algorithm, secret: secret.toString('base64'), tenant: key.tenant, zones: tenant.zones, acmeOnly: key.acmeOnly };
}

const TSIG: KeyCommand<TsigKeyView, { secret: Buffer }, DnsServer> = {
  command: 'tsig',
  nameArg: 'NAME',
  createOptions: { algorithm: { type: 'string' }, name: { type: 'string' }, 'acme-only': { type: 'boolean' } },
  create: (admin, tenant, v) =>
    createTsigKey(admin, { tenant, algorithm: v.algorithm as string | undefined, name: v.name as string | undefined, acmeOnly: v['acme-only'] === true }),
  admin: TSIG_KEY_ADMIN,
  doorFlag: 'server',
  door: dnsServer,
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
  headline: (k) =>
    `TSIG key "${k.name}." (${k.algorithm}, ${k.acmeOnly ? 'acme-only: _acme-challenge TXT records only' : 'acting as the tenant'}) for tenant "${k.tenant}"`,
  lines: (issued, server, io) => [
    'its secret (base64) follows; it is shown only this once (dnsplane keeps it sealed; rotate issues a new one):',
    issued.secret.toString('base64'),
    '',
    ...renderTsigConfigs(tsigForConfig(issued), server, configFrom(io).ovhRate),
  ],
  json: (issued, server, io) => ({
    secret: issued.secret.toString('base64'),
    server: { host: server.host, port: server.port, source: server.source },
    config: tsigConfigs(tsigForConfig(issued), server, configFrom(io).ovhRate),
  }),
};

export async function runTsig(sub: string | undefined, rest: string[], io: CliIo): Promise<number> {
  return runKeys(TSIG, sub, rest, io);
}

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

${SEALED_HELP}`;

/** --endpoint, else what the configuration says, else a placeholder. */
function endpointOf(flag: string | undefined, io: CliIo): OvhApiEndpoint {
  if (flag !== undefined) return { url: ovhApiAdvertise(flag, '0.0.0.0:0', '--endpoint')!, source: '--endpoint' };
  const advertised = configFrom(io).ovhApi.advertise;
  if (advertised) return { url: advertised, source: io.env['DNSPLANE_OVH_API_ADVERTISE']?.trim() ? 'DNSPLANE_OVH_API_ADVERTISE' : 'DNSPLANE_LISTEN' };
  return { url: PLACEHOLDER_ENDPOINT, source: 'placeholder' };
}

/** What the configuration printer is told of an OVH key issued. */
function ovhForConfig({ key, applicationSecret, consumerKey, tenant }: IssuedOvhKey) {
  return { applicationKey: key.applicationKey, applicationSecret, consumerKey, tenant: key.tenant, zones: tenant.zones };
}

const OVH_KEY: KeyCommand<OvhKeyView, { applicationSecret: string; consumerKey: string }, OvhApiEndpoint> = {
  command: 'ovh-key',
  nameArg: 'APPLICATION_KEY',
  createOptions: { 'expires-in': { type: 'string' } },
  create: (admin, tenant, v) =>
    createOvhKey(admin, { tenant, expiresInMs: typeof v['expires-in'] === 'string' ? parseDuration(v['expires-in'], '--expires-in') : undefined }),
  admin: OVH_KEY_ADMIN,
  doorFlag: 'endpoint',
  door: endpointOf,
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
  headline: (k) => `OVH key ${k.applicationKey} for tenant "${k.tenant}"${k.expiresAt ? `, valid until ${k.expiresAt.toISOString()}` : ''}`,
  lines: (issued, endpoint) => [
    "its secret and consumer key follow; they are shown only this once (dnsplane keeps the secret sealed and the consumer key's sha-256; rotate issues new ones):",
    '',
    ...renderOvhKeyConfigs(ovhForConfig(issued), endpoint),
  ],
  json: (issued, endpoint) => ({
    endpoint: { url: endpoint.url, source: endpoint.source },
    values: {
      OVH_ENDPOINT: endpoint.url,
      OVH_APPLICATION_KEY: issued.key.applicationKey,
      OVH_APPLICATION_SECRET: issued.applicationSecret,
      OVH_CONSUMER_KEY: issued.consumerKey,
    },
    config: ovhKeyConfigs(ovhForConfig(issued), endpoint),
  }),
};

export async function runOvhKey(sub: string | undefined, rest: string[], io: CliIo): Promise<number> {
  return runKeys(OVH_KEY, sub, rest, io);
}
