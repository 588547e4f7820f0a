/**
 * Environment + flags -> one typed, validated Config. The only module that reads process.env is the
 * CLI, which hands the environment to loadConfig; nothing below server.ts reads it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SECRETS_KEY_RULE } from './core/credentials/secrets.js';
import { visibilityConfig, type VisibilityConfig } from './config-visibility.js';
import { healthConfig, HEALTH_SETTINGS, type HealthConfig } from './config-health.js';
import { InvalidInputError } from './dns/errors.js';
import { normalizeName } from './dns/names.js';
import { parseOvhEndpoint, type OvhEndpoint } from './ovh/endpoint.js';
import type { ExpandedListsMode } from './ovh/client/expanded-lists.js';
import type { OvhCredentials } from './ovh/client/signed-request.js';

export type Env = Record<string, string | undefined>;

export type OvhConfig =
  | { mode: 'remote'; endpoint: OvhEndpoint; credentials: OvhCredentials; extraCaPems: string[] }
  /**
   * Demo mode: an in-process simulator with a demo zone. Only when nothing is configured (no
   * DATABASE_URL, no OVH_*: `npm start` on a fresh clone) or when asked for (DNSPLANE_DEMO=true).
   */
  | { mode: 'simulator' }
  /**
   * No OVH credentials and no demo: `serve` refuses to start (before touching the database) with
   * `field: rule`; commands that only use the database (tenant, migrate) do not need OVH.
   */
  | { mode: 'unconfigured'; field: string; rule: string };

/** The three OVH credentials: all or none. */
export const OVH_CREDENTIALS = ['OVH_APPLICATION_KEY', 'OVH_APPLICATION_SECRET', 'OVH_CONSUMER_KEY'] as const;

const ASK_FOR_DEMO = 'DNSPLANE_DEMO=true (or dnsplane serve --demo)';

export interface Config {
  listen: { host: string; port: number };
  /** DNSPLANE_WEBHOOK_LISTEN: the external-dns webhook listener; undefined when set to "off". */
  webhookListen?: { host: string; port: number };
  /**
   * DNSPLANE_DNS_LISTEN: the DNS door (UPDATE with TSIG, queries, AXFR; UDP and TCP on one port);
   * undefined: off. 'demo': unset in demo mode, on a port kept across restarts in the data directory.
   */
  dnsListen?: { host: string; port: number } | 'demo';
  /** DNSPLANE_DNS_RATE: unsigned DNS messages per second one source address may send (burst: twice that). */
  dnsRate: number;
  /** DNSPLANE_DNS_UPDATE_WAIT: how long an UPDATE's NOERROR waits for its change to be visible; 0: not at all. */
  dnsUpdateWaitMs: number;
  /** DNSPLANE_DNS_CLIENT_TIMEOUT: how long the door's UPDATE clients wait for an answer (the wait ends before it). */
  dnsClientTimeoutMs: number;
  databaseUrl?: string;
  dataDir: string;
  /** Zones dnsplane manages; undefined: every zone GET /domain/zone returns. */
  zones?: string[];
  ovh: OvhConfig;
  ovhRate: number;
  ovhMaxConcurrent: number;
  ovhTimeoutMs: number;
  /** DNSPLANE_OVH_EXPANDED_LISTS: read record lists a page of full records per call (auto: when OVH answers them). */
  ovhExpandedLists: ExpandedListsMode;
  syncConcurrency: number;
  lockTimeoutMs: number;
  planTtlMs: number;
  /** DNSPLANE_PLAN_CONCURRENCY: Plans one tenant may have computing at once; the next is refused (ResourceExhausted). */
  planConcurrency: number;
  /** DNSPLANE_READ_CACHE_BYTES: what the Records cache keeps at most (zones' bases, answers, encoded bytes), in bytes. */
  readCacheBytes: number;
  /** DNSPLANE_DRIFT_INTERVAL: how often each zone is checked against OVH for changes made outside dnsplane; 0: never. */
  driftIntervalMs: number;
  /** DNSPLANE_SILENT_CHECK_INTERVAL: how often tenants silent past their withdraw_after are looked for (core/liveness.ts); 0: never. */
  silentCheckMs: number;
  /** DNSPLANE_LAST_SEEN_WRITE: a tenant's last_seen_at is written at most this often per process. */
  lastSeenWriteMs: number;
  shutdownTimeoutMs: number;
  /** DNSPLANE_APPLY_BATCH: operations per apply batch; 0: no batches. */
  applyBatch: number;
  /** DNSPLANE_APPLY_COALESCE: how long a group of one zone's coalesced applies keeps taking waiting applies (core/apply/holder.ts); 0: never coalesce. */
  applyCoalesceMs: number;
  logLevel: string;
  /** DNSPLANE_LOG_FORMAT: json, pretty, or auto (pretty on a terminal; see logFormatOf). */
  logFormat: LogFormatSetting;
  /** DNSPLANE_DRY_RUN: applies compute and report the OVH calls they would make and send none. */
  dryRun: boolean;
  /** DNSPLANE_CNAME_RELATIVE_ZONES: zones whose in-zone CNAME targets are sent relative (external-dns's --ovh-enable-cname-relative). */
  cnameRelativeZones: string[];
  /** DNSPLANE_CORS_ORIGINS: origins whose pages may call the API from a browser ("*": any); empty: none. */
  corsOrigins: string[];
  /** DNSPLANE_MAX_CHANGE_PERCENT: the change threshold (core/guard.ts) of tenants without their own. */
  maxChangePercent: number;
  /** Bounds on slow, silent and numerous clients, both HTTP ports (the HTTP front, api/front/). */
  http: { headersTimeoutMs: number; requestTimeoutMs: number; idleTimeoutMs: number; limits: { perAddress: number; total: number } };
  /** Failed logins per client address (core/login-limiter.ts): a burst, then this many per second. */
  login: { burst: number; perSecond: number };
  /**
   * The encryption keys of secrets kept at rest (core/credentials/secrets.ts), the one that seals first:
   * DNSPLANE_SECRETS_KEYS (new first, old after, while a rotation runs), or DNSPLANE_SECRETS_KEY
   * (one key). Unset: undefined (demo mode keeps its own).
   */
  secretsKeys?: Buffer[];
  /**
   * Where DNS clients reach dnsplane's DNS listener, host:port, for the configuration `tenant tsig`
   * prints: DNSPLANE_DNS_ADVERTISE, else DNSPLANE_DNS_LISTEN when it is host:port.
   */
  dnsAdvertise?: { host: string; port: number };
  /** The OVH API served per tenant at /ovh/1.0 (src/ovhapi/, docs/ovh-api.md). */
  ovhApi: OvhApiConfig;
  /** Each publish proved on the zone's authoritative servers (core/probe/; config-visibility.ts). */
  visibility: VisibilityConfig;
  /** Health checks per target (core/health/; config-health.ts). */
  health: HealthConfig;
}

/** The served OVH API's settings (DNSPLANE_OVH_API_*). */
export interface OvhApiConfig {
  /** DNSPLANE_OVH_API_ADVERTISE: the URL tools reach it at (OVH_ENDPOINT), ending in /ovh/1.0; undefined: not known. */
  advertise?: string;
  /** DNSPLANE_OVH_API_RATE: requests per second one tenant's tools may make, all keys together. */
  rate: number;
  /** DNSPLANE_OVH_API_BURST: requests a tenant may make at once before the rate applies. */
  burst: number;
  /** DNSPLANE_OVH_API_DRAFT_TTL: how long a staged write waits for its refresh before it is dropped. */
  draftTtlMs: number;
}

/** Where the served OVH API is mounted on the API port: tools sign URLs with this path in them. */
export const OVH_API_PATH = '/ovh/1.0';

/** The settings, for `--help` and the README's configuration table. */
export const SETTINGS: Array<{ name: string; default: string; help: string }> = [
  { name: 'DNSPLANE_LISTEN', default: '127.0.0.1:8080', help: 'host:port of the Connect/gRPC/gRPC-Web API (HTTP/1.1 and h2c)' },
  { name: 'DNSPLANE_WEBHOOK_LISTEN', default: '127.0.0.1:8888', help: 'host:port of the external-dns webhook protocol (HTTP Basic tenant:token); "off" to disable; an ephemeral port when DNSPLANE_LISTEN has port 0' },
  { name: 'DNSPLANE_DNS_LISTEN', default: '(off)', help: 'host:port of the DNS door (UPDATE signed with TSIG, queries, AXFR; UDP and TCP); unset: off, except in demo mode (127.0.0.1, a port kept across restarts); "off" to disable' },
  { name: 'DNSPLANE_DNS_RATE', default: '50', help: 'unsigned DNS messages per second one source address may send to the DNS door (burst twice that); more are dropped' },
  {
    name: 'DNSPLANE_DNS_UPDATE_WAIT',
    default: 'off',
    help: "a DNS UPDATE's NOERROR waits until its change is visible on the zone's authoritative servers, at most this long (e.g. 120s), and never past what the client waits (DNSPLANE_DNS_CLIENT_TIMEOUT); at the bound it answers NOERROR anyway, the change being applied. off: answer once published",
  },
  {
    name: 'DNSPLANE_DNS_CLIENT_TIMEOUT',
    default: '2s',
    help: "how long the DNS door's UPDATE clients wait for an answer: an UPDATE is answered 0.5 s before it, whatever DNSPLANE_DNS_UPDATE_WAIT says. 2s is miekg/dns's fixed timeout (cert-manager, external-dns); raise it only when every client waits longer (nsupdate -t, certbot, lego's RFC2136_DNS_TIMEOUT)",
  },
  { name: 'DATABASE_URL', default: '(embedded)', help: 'Postgres URL; unset: an embedded Postgres under DNSPLANE_DATA_DIR. With it, serve needs the OVH_* credentials (or DNSPLANE_DEMO=true)' },
  { name: 'DNSPLANE_DEMO', default: '', help: 'true: the demo (in-process OVH simulator, demo zone and tenants), also with DATABASE_URL; unset: the demo only when neither DATABASE_URL nor OVH_* is set; false: never' },
  { name: 'DNSPLANE_DATA_DIR', default: './.dnsplane', help: 'embedded Postgres data, simulator state and CA' },
  { name: 'DNSPLANE_ZONES', default: '(all)', help: 'comma list of zones to manage; unset: every zone of the OVH account' },
  { name: 'OVH_ENDPOINT', default: 'ovh-eu', help: 'ovh-eu, ovh-ca, ovh-us or an https://host:port URL' },
  { name: 'OVH_APPLICATION_KEY', default: '', help: 'OVH application key (the three OVH_* credentials: all or none; none and no DATABASE_URL: the demo)' },
  { name: 'OVH_APPLICATION_SECRET', default: '', help: 'OVH application secret (never logged)' },
  { name: 'OVH_CONSUMER_KEY', default: '', help: 'OVH consumer key (never logged)' },
  { name: 'OVH_CA_FILE', default: '', help: 'extra CA (PEM) to trust for the OVH endpoint, added to the system ones' },
  { name: 'DNSPLANE_OVH_RATE', default: '20', help: 'OVH requests per second for the OVH account (per application key), shared by every replica on the database' },
  { name: 'DNSPLANE_OVH_CONCURRENCY', default: '8', help: 'OVH calls in flight at most' },
  { name: 'DNSPLANE_OVH_TIMEOUT', default: '30s', help: 'OVH call timeout' },
  {
    name: 'DNSPLANE_OVH_EXPANDED_LISTS',
    default: 'auto',
    help: "auto, on or off: read a zone's records a page per call in OVH's expanded list mode (auto: try it, fall back to one GET per record if OVH does not answer it, and remember)",
  },
  { name: 'DNSPLANE_LOCK_TIMEOUT', default: '30s', help: 'how long an apply waits for its zone lock before Aborted' },
  { name: 'DNSPLANE_APPLY_BATCH', default: '100', help: 'an apply of more OVH operations than this goes in batches, each applied and published on its own, the zone lock released between them; 0: never' },
  {
    name: 'DNSPLANE_APPLY_COALESCE',
    default: '2s',
    help: "applies of one zone waiting for its lock in this process are taken as one group published by one refresh (each keeps its own plan, journal row and result), at most DNSPLANE_APPLY_BATCH operations, taking no more applies once it has run this long; 0 or off: one refresh per apply",
  },
  { name: 'DNSPLANE_SHUTDOWN_TIMEOUT', default: '30s', help: 'on SIGTERM: the process exits within this; applies under way stop sending in time to roll back, and answer Unavailable' },
  { name: 'DNSPLANE_PLAN_TTL', default: '15m', help: 'how long a stored plan can be applied' },
  { name: 'DNSPLANE_PLAN_CONCURRENCY', default: '2', help: 'Plans (Plan, PlanAs) one tenant may have computing at once; one more is refused with RESOURCE_EXHAUSTED' },
  {
    name: 'DNSPLANE_READ_CACHE_BYTES',
    default: '128Mi',
    help: "what the Records cache keeps in memory at most (each zone's records at its generation, the answers cut from them, their encoded bytes): a byte count, or with Ki, Mi or Gi; past it the least recently used is dropped and built again when asked. The default is a quarter of the manifests' 512Mi memory limit",
  },
  { name: 'DNSPLANE_DRIFT_INTERVAL', default: '5m', help: 'how often each zone is checked for changes made outside dnsplane (1 OVH call when none); 0 or off: never' },
  { name: 'DNSPLANE_LOG_LEVEL', default: 'info', help: 'fatal, error, warn, info, debug, trace' },
  { name: 'DNSPLANE_LOG_FORMAT', default: 'auto', help: 'json (one JSON object a line, for log collectors), pretty (human lines), or auto: pretty when stdout is a terminal, json otherwise' },
  { name: 'DNSPLANE_DRY_RUN', default: 'false', help: 'true: plans and applies run, the OVH calls applies would make are logged and returned, none is sent' },
  { name: 'DNSPLANE_CORS_ORIGINS', default: '', help: 'comma list of origins (https://host[:port]) whose browser pages may call the API (CORS); * for any; empty: none' },
  { name: 'DNSPLANE_MAX_CHANGE_PERCENT', default: '30', help: 'an apply updating or deleting more than this % of the record sets a tenant owns in a zone (when it owns 10 or more there) is refused unless forced; 0-100' },
  { name: 'DNSPLANE_HEADERS_TIMEOUT', default: '20s', help: 'a client must send complete request headers within this of connecting, or of its first byte on a kept-alive connection (both HTTP ports, HTTP/1.1 and h2c); a silent, half-sent or dripping request is closed (HTTP/1.1: 408)' },
  { name: 'DNSPLANE_REQUEST_TIMEOUT', default: '60s', help: 'a client must send its whole request, body included, within this of its start (both HTTP ports); else the connection is closed (h2: that stream is cancelled)' },
  { name: 'DNSPLANE_IDLE_TIMEOUT', default: '65s', help: 'an API connection (HTTP/1.1 keep-alive, or h2 session) with no request in flight is closed after this; the webhook port keeps at least 120s (external-dns reuses connections idle up to 90s)' },
  { name: 'DNSPLANE_MAX_CONNECTIONS', default: '1024', help: 'connections each HTTP port (API, webhook) holds at once; more are closed as they arrive (dnsplane_http_connections_refused_total, one summary log line per 10s)' },
  { name: 'DNSPLANE_MAX_CONNECTIONS_PER_ADDRESS', default: '128', help: 'connections each HTTP port holds at once from one client address (behind a proxy or ingress, its address: raise this to fit); more are closed as they arrive' },
  { name: 'DNSPLANE_LOGIN_BURST', default: '20', help: 'failed logins a client address may make at once; then it is refused (429 / RESOURCE_EXHAUSTED, Retry-After) until it regains some' },
  { name: 'DNSPLANE_LOGIN_RATE', default: '1', help: 'failed logins per second a client address regains' },
  { name: 'DNSPLANE_SECRETS_KEY', default: '', help: 'the key that seals secrets kept at rest (TSIG secrets, OVH application secrets): 32 random bytes in base64, e.g. `openssl rand -base64 32`; the same on every replica; never logged. Demo mode keeps one in its data dir' },
  { name: 'DNSPLANE_SECRETS_KEYS', default: '', help: 'instead of DNSPLANE_SECRETS_KEY, while its key is rotated: a comma list of such keys, the one that seals first, the others only open; `dnsplane secrets reseal` moves every secret to the first (docs/operations.md)' },
  { name: 'DNSPLANE_DNS_ADVERTISE', default: '', help: 'host:port where DNS clients (cert-manager, lego, certbot, nsupdate) reach the DNS listener, printed in the configuration `tenant tsig create` shows; unset: DNSPLANE_DNS_LISTEN' },
  { name: 'DNSPLANE_CNAME_RELATIVE_ZONES', default: '', help: 'comma list of zones whose in-zone CNAME targets are sent relative (like external-dns --ovh-enable-cname-relative)' },
  // The OVH API served per tenant at /ovh/1.0 on the API port (docs/ovh-api.md).
  { name: 'DNSPLANE_OVH_API_ADVERTISE', default: '', help: 'the URL tools reach the served OVH API at, ending in /ovh/1.0 (e.g. https://dnsplane.example.com/ovh/1.0), printed as OVH_ENDPOINT by `tenant ovh-key create`; unset: http://DNSPLANE_LISTEN/ovh/1.0 when that names a host' },
  { name: 'DNSPLANE_OVH_API_RATE', default: '50', help: "requests per second one tenant's tools may make to the served OVH API (all its keys together); over it: 429 with Retry-After, as OVH" },
  { name: 'DNSPLANE_OVH_API_BURST', default: '500', help: 'requests a tenant may make at once to the served OVH API before DNSPLANE_OVH_API_RATE applies' },
  { name: 'DNSPLANE_OVH_API_DRAFT_TTL', default: '1h', help: 'a write staged through the served OVH API that no refresh publishes within this is dropped' },
  // Visibility: each publish proved on the zone's authoritative servers (core/probe/, docs/ARCHITECTURE.md "Visibility").
  { name: 'DNSPLANE_AUTHORITATIVE_SERVERS', default: '(the zone\'s name servers)', help: "comma list of host[:port] (port 53 by default) the prober asks for every zone, instead of each zone's name servers as OVH lists them (GET /domain/zone/{zone}, once per zone and process): split horizons, tests" },
  { name: 'DNSPLANE_VISIBLE_TIMEOUT', default: '15m', help: "an apply not answered as published by every authoritative server within this after its refresh is not_visible (naming the servers and names still behind), or unverified when no server could be asked" },
  // Tenant liveness (core/liveness.ts, docs/operations.md "Silent tenants").
  { name: 'DNSPLANE_SILENT_CHECK_INTERVAL', default: '10s', help: "how often one replica looks for tenants silent past their withdraw_after (`tenant set NAME --withdraw-after`) and withdraws their targets of shared record sets; 0/off: never" },
  { name: 'DNSPLANE_LAST_SEEN_WRITE', default: '1m', help: "a tenant's latest call (last_seen_at) is written at most this often per replica; a tenant is silent once withdraw_after plus this has passed" },
  { name: 'DNSPLANE_PROBE_QUERIES', default: '16', help: 'DNS questions the prober has in flight at most, for the whole process' },
  { name: 'DNSPLANE_PROBE_BACKOFF', default: '1s..30s', help: "the wait between two rounds of questions about one refresh: from the first value, 1.25 times longer each round, up to the second" },
  // Health checks per target (core/health/, docs/failover.md).
  ...HEALTH_SETTINGS,
  { name: 'DNSPLANE_SIM_PROPAGATION', default: '2s..8s', help: "demo mode: each of the simulator's two name servers answers a refresh after a lag drawn in this range (or a fixed duration; 0: at once; never)" },
];

export function parseDuration(value: string, field: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
  if (!m) throw new InvalidInputError(field, `must be a duration like 500ms, 30s, 15m or 1h, got "${value}"`);
  const n = Number(m[1]);
  const unit = m[2] ?? 's';
  return Math.round(n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit]!);
}

function nonNegativeInteger(value: string, field: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n)) throw new InvalidInputError(field, `must be an integer >= 0, got "${value}"`);
  return n;
}

function positiveNumber(value: string, field: string, integer: boolean): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new InvalidInputError(field, `must be a positive ${integer ? 'integer' : 'number'}, got "${value}"`);
  }
  return n;
}

function oneOf<T extends string>(value: string, field: string, allowed: readonly T[]): T {
  const v = value.trim().toLowerCase();
  const found = allowed.find((a) => a === v);
  if (found === undefined) throw new InvalidInputError(field, `must be one of ${allowed.join(', ')}, got "${value}"`);
  return found;
}

/** A size in bytes: an integer, or one with the binary unit Ki, Mi or Gi (128Mi); at least 1Mi. */
export function parseByteSize(value: string, field: string): number {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(value.trim());
  const n = m ? Number(m[1]) * { '': 1, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 }[m[2] ?? '']! : NaN;
  if (!Number.isSafeInteger(n)) throw new InvalidInputError(field, `must be a size in bytes, as an integer or with the unit Ki, Mi or Gi (e.g. 134217728 or 128Mi), got "${value}"`);
  if (n < 2 ** 20) throw new InvalidInputError(field, `must be at least 1Mi (1048576 bytes), got "${value}"`);
  return n;
}

function percent(value: string, field: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 100) throw new InvalidInputError(field, `must be a whole percentage 0-100, got "${value}"`);
  return n;
}

export function parseBoolean(value: string, field: string): boolean {
  const v = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  throw new InvalidInputError(field, `must be true or false, got "${value}"`);
}

export function parseListen(value: string, field = 'DNSPLANE_LISTEN'): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new InvalidInputError(field, `must be host:port (port 0-65535), got "${value}"`);
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

/**
 * DNSPLANE_WEBHOOK_LISTEN: "off", host:port, or unset: 127.0.0.1:8888 — except when DNSPLANE_LISTEN
 * asks for an ephemeral port (port 0: tests, benches), where the webhook gets one too, so that
 * servers started side by side never fight over 8888.
 */
function webhookListen(value: string | undefined, api: string | undefined): { host: string; port: number } | undefined {
  if (value?.toLowerCase() === 'off') return undefined;
  if (value !== undefined) return parseListen(value, 'DNSPLANE_WEBHOOK_LISTEN');
  return { host: '127.0.0.1', port: api !== undefined && parseListen(api).port === 0 ? 0 : 8888 };
}

export function loadConfig(env: Env, cwd: string = process.cwd()): Config {
  const get = (name: string) => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };

  const demoRaw = get('DNSPLANE_DEMO');
  const demoAsked = demoRaw === undefined ? undefined : parseBoolean(demoRaw, 'DNSPLANE_DEMO');
  const given = OVH_CREDENTIALS.filter((n) => get(n) !== undefined);
  const missing = OVH_CREDENTIALS.filter((n) => get(n) === undefined);
  let ovh: OvhConfig;
  if (given.length > 0 && missing.length > 0) {
    // Half a configuration is a mistake (a Secret that mounted partly), whatever else is set.
    throw new InvalidInputError(
      missing.join(', '),
      `not set while ${given.join(', ')} ${given.length > 1 ? 'are' : 'is'}: the OVH credentials are all three or none. Set the missing ones to talk to OVH` +
        (demoAsked ? '; for the demo, unset every OVH_* variable' : `, or unset them all and ask for the demo on purpose with ${ASK_FOR_DEMO}`),
    );
  } else if (given.length === 0) {
    if (demoAsked === true || (demoAsked === undefined && get('DATABASE_URL') === undefined)) {
      ovh = { mode: 'simulator' };
    } else if (demoAsked === false) {
      ovh = { mode: 'unconfigured', field: OVH_CREDENTIALS.join(', '), rule: `not set and DNSPLANE_DEMO is false: set the three OVH credentials, or ask for the demo with ${ASK_FOR_DEMO}` };
    } else {
      ovh = {
        mode: 'unconfigured',
        field: OVH_CREDENTIALS.join(', '),
        rule: `not set while DATABASE_URL is: dnsplane will not serve a real database from the in-process OVH simulator. Set the three OVH credentials, or ask for the demo on purpose with ${ASK_FOR_DEMO}`,
      };
    }
  } else {
    if (demoAsked === true) {
      throw new InvalidInputError(
        'DNSPLANE_DEMO',
        `true runs the in-process OVH simulator, which cannot go with the OVH credentials that are set (${OVH_CREDENTIALS.join(', ')}): unset DNSPLANE_DEMO to talk to OVH, or unset the OVH_* variables for the demo`,
      );
    }
    const extraCaPems: string[] = [];
    const caFile = get('OVH_CA_FILE');
    if (caFile) {
      extraCaPems.push(readPem(caFile, 'OVH_CA_FILE'));
      // Setting our own CA list replaces Node's default store, which holds NODE_EXTRA_CA_CERTS: keep it.
      const nodeExtra = get('NODE_EXTRA_CA_CERTS');
      if (nodeExtra) extraCaPems.push(readPem(nodeExtra, 'NODE_EXTRA_CA_CERTS'));
    }
    ovh = {
      mode: 'remote',
      endpoint: parseOvhEndpoint(get('OVH_ENDPOINT') ?? 'ovh-eu'),
      credentials: {
        applicationKey: get('OVH_APPLICATION_KEY')!,
        applicationSecret: get('OVH_APPLICATION_SECRET')!,
        consumerKey: get('OVH_CONSUMER_KEY')!,
      },
      extraCaPems,
    };
  }

  const zonesRaw = get('DNSPLANE_ZONES');
  const zones = zonesRaw
    ?.split(',')
    .map((z) => z.trim())
    .filter((z) => z !== '')
    .map((z, i) => normalizeName(z, `DNSPLANE_ZONES[${i}]`));

  const logLevel = get('DNSPLANE_LOG_LEVEL') ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new InvalidInputError('DNSPLANE_LOG_LEVEL', `must be one of fatal, error, warn, info, debug, trace, silent, got "${logLevel}"`);
  }

  const logFormat = parseLogFormat(get('DNSPLANE_LOG_FORMAT'));

  const dnsRaw = get('DNSPLANE_DNS_LISTEN');
  const dnsListen = dnsRaw?.toLowerCase() === 'off' ? undefined : dnsRaw !== undefined ? parseListen(dnsRaw, 'DNSPLANE_DNS_LISTEN') : ovh.mode === 'simulator' ? ('demo' as const) : undefined;

  return {
    listen: parseListen(get('DNSPLANE_LISTEN') ?? '127.0.0.1:8080'),
    webhookListen: webhookListen(get('DNSPLANE_WEBHOOK_LISTEN'), get('DNSPLANE_LISTEN')),
    ...(dnsListen ? { dnsListen } : {}),
    dnsRate: positiveNumber(get('DNSPLANE_DNS_RATE') ?? '50', 'DNSPLANE_DNS_RATE', false),
    dnsUpdateWaitMs: /^(0|off)$/i.test(get('DNSPLANE_DNS_UPDATE_WAIT') ?? 'off') ? 0 : parseDuration(get('DNSPLANE_DNS_UPDATE_WAIT')!, 'DNSPLANE_DNS_UPDATE_WAIT'),
    dnsClientTimeoutMs: parseDuration(get('DNSPLANE_DNS_CLIENT_TIMEOUT') ?? '2s', 'DNSPLANE_DNS_CLIENT_TIMEOUT'),
    databaseUrl: get('DATABASE_URL'),
    dataDir: path.resolve(cwd, get('DNSPLANE_DATA_DIR') ?? '.dnsplane'),
    zones: zones && zones.length > 0 ? zones : undefined,
    ovh,
    ovhRate: positiveNumber(get('DNSPLANE_OVH_RATE') ?? '20', 'DNSPLANE_OVH_RATE', false),
    ovhMaxConcurrent: positiveNumber(get('DNSPLANE_OVH_CONCURRENCY') ?? '8', 'DNSPLANE_OVH_CONCURRENCY', true),
    ovhTimeoutMs: parseDuration(get('DNSPLANE_OVH_TIMEOUT') ?? '30s', 'DNSPLANE_OVH_TIMEOUT'),
    ovhExpandedLists: oneOf(get('DNSPLANE_OVH_EXPANDED_LISTS') ?? 'auto', 'DNSPLANE_OVH_EXPANDED_LISTS', ['auto', 'on', 'off'] as const),
    syncConcurrency: 8,
    lockTimeoutMs: parseDuration(get('DNSPLANE_LOCK_TIMEOUT') ?? '30s', 'DNSPLANE_LOCK_TIMEOUT'),
    planTtlMs: parseDuration(get('DNSPLANE_PLAN_TTL') ?? '15m', 'DNSPLANE_PLAN_TTL'),
    planConcurrency: positiveNumber(get('DNSPLANE_PLAN_CONCURRENCY') ?? '2', 'DNSPLANE_PLAN_CONCURRENCY', true),
    readCacheBytes: parseByteSize(get('DNSPLANE_READ_CACHE_BYTES') ?? '128Mi', 'DNSPLANE_READ_CACHE_BYTES'),
    driftIntervalMs: /^(0|off)$/i.test(get('DNSPLANE_DRIFT_INTERVAL') ?? '') ? 0 : parseDuration(get('DNSPLANE_DRIFT_INTERVAL') ?? '5m', 'DNSPLANE_DRIFT_INTERVAL'),
    silentCheckMs: /^(0|off)$/i.test(get('DNSPLANE_SILENT_CHECK_INTERVAL') ?? '') ? 0 : parseDuration(get('DNSPLANE_SILENT_CHECK_INTERVAL') ?? '10s', 'DNSPLANE_SILENT_CHECK_INTERVAL'),
    lastSeenWriteMs: parseDuration(get('DNSPLANE_LAST_SEEN_WRITE') ?? '1m', 'DNSPLANE_LAST_SEEN_WRITE'),
    applyBatch: nonNegativeInteger(get('DNSPLANE_APPLY_BATCH') ?? '100', 'DNSPLANE_APPLY_BATCH'),
    applyCoalesceMs: /^(0|off)$/i.test(get('DNSPLANE_APPLY_COALESCE') ?? '') ? 0 : parseDuration(get('DNSPLANE_APPLY_COALESCE') ?? '2s', 'DNSPLANE_APPLY_COALESCE'),
    shutdownTimeoutMs: parseDuration(get('DNSPLANE_SHUTDOWN_TIMEOUT') ?? '30s', 'DNSPLANE_SHUTDOWN_TIMEOUT'),
    logLevel,
    dryRun: parseBoolean(get('DNSPLANE_DRY_RUN') ?? 'false', 'DNSPLANE_DRY_RUN'),
    http: {
      headersTimeoutMs: parseDuration(get('DNSPLANE_HEADERS_TIMEOUT') ?? '20s', 'DNSPLANE_HEADERS_TIMEOUT'),
      requestTimeoutMs: parseDuration(get('DNSPLANE_REQUEST_TIMEOUT') ?? '60s', 'DNSPLANE_REQUEST_TIMEOUT'),
      idleTimeoutMs: parseDuration(get('DNSPLANE_IDLE_TIMEOUT') ?? '65s', 'DNSPLANE_IDLE_TIMEOUT'),
      limits: {
        total: positiveNumber(get('DNSPLANE_MAX_CONNECTIONS') ?? '1024', 'DNSPLANE_MAX_CONNECTIONS', true),
        perAddress: positiveNumber(get('DNSPLANE_MAX_CONNECTIONS_PER_ADDRESS') ?? '128', 'DNSPLANE_MAX_CONNECTIONS_PER_ADDRESS', true),
      },
    },
    login: {
      burst: positiveNumber(get('DNSPLANE_LOGIN_BURST') ?? '20', 'DNSPLANE_LOGIN_BURST', true),
      perSecond: positiveNumber(get('DNSPLANE_LOGIN_RATE') ?? '1', 'DNSPLANE_LOGIN_RATE', false),
    },
    maxChangePercent: percent(get('DNSPLANE_MAX_CHANGE_PERCENT') ?? '30', 'DNSPLANE_MAX_CHANGE_PERCENT'),
    cnameRelativeZones: (get('DNSPLANE_CNAME_RELATIVE_ZONES') ?? '')
      .split(',')
      .map((z) => z.trim())
      .filter((z) => z !== '')
      .map((z, i) => normalizeName(z, `DNSPLANE_CNAME_RELATIVE_ZONES[${i}]`)),
    corsOrigins: parseCorsOrigins(get('DNSPLANE_CORS_ORIGINS') ?? ''),
    logFormat,
    secretsKeys: parseSecretsKeys(get('DNSPLANE_SECRETS_KEY'), get('DNSPLANE_SECRETS_KEYS')),
    dnsAdvertise: dnsAdvertise(get('DNSPLANE_DNS_ADVERTISE'), get('DNSPLANE_DNS_LISTEN')),
    ovhApi: {
      advertise: ovhApiAdvertise(get('DNSPLANE_OVH_API_ADVERTISE'), get('DNSPLANE_LISTEN') ?? '127.0.0.1:8080'),
      rate: positiveNumber(get('DNSPLANE_OVH_API_RATE') ?? '50', 'DNSPLANE_OVH_API_RATE', false),
      burst: positiveNumber(get('DNSPLANE_OVH_API_BURST') ?? '500', 'DNSPLANE_OVH_API_BURST', true),
      draftTtlMs: parseDuration(get('DNSPLANE_OVH_API_DRAFT_TTL') ?? '1h', 'DNSPLANE_OVH_API_DRAFT_TTL'),
    },
    visibility: visibilityConfig(get, parseDuration),
    health: healthConfig(get, parseDuration),
  };
}

/**
 * DNSPLANE_OVH_API_ADVERTISE: an http(s) URL whose path is exactly /ovh/1.0 (tools sign the URL they
 * call, path included, so a proxy must not rewrite it; go-ovh refuses a trailing slash). Unset:
 * http://DNSPLANE_LISTEN/ovh/1.0 when the listener names a host (not every address, not port 0).
 */
export function ovhApiAdvertise(value: string | undefined, listen: string, field = 'DNSPLANE_OVH_API_ADVERTISE'): string | undefined {
  if (value === undefined) {
    const { host, port } = parseListen(listen);
    if (['0.0.0.0', '::', ''].includes(host) || port === 0) return undefined;
    return `http://${host.includes(':') ? `[${host}]` : host}:${port}${OVH_API_PATH}`;
  }
  const rule = `must be the http(s) URL tools reach the served OVH API at, ending in ${OVH_API_PATH} without a trailing slash (e.g. https://dnsplane.example.com${OVH_API_PATH})`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidInputError(field, `${rule}, got "${value}"`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.pathname !== OVH_API_PATH || url.search || url.hash || url.username || url.password) {
    throw new InvalidInputError(field, `${rule}, got "${value}"`);
  }
  return `${url.origin}${OVH_API_PATH}`;
}

export type LogFormatSetting = 'json' | 'pretty' | 'auto';

/** DNSPLANE_LOG_FORMAT: json, pretty or auto (the default). */
export function parseLogFormat(value: string | undefined): LogFormatSetting {
  const v = (value ?? 'auto').trim().toLowerCase();
  if (v !== 'json' && v !== 'pretty' && v !== 'auto') throw new InvalidInputError('DNSPLANE_LOG_FORMAT', `must be json, pretty or auto, got "${value}"`);
  return v;
}

/** The format logs are written in: auto is pretty when stdout is a terminal, json otherwise. */
export function logFormatOf(setting: LogFormatSetting, stdoutIsTty: boolean): 'json' | 'pretty' {
  return setting === 'auto' ? (stdoutIsTty ? 'pretty' : 'json') : setting;
}

/**
 * The keys of DNSPLANE_SECRETS_KEY or DNSPLANE_SECRETS_KEYS (not both), each 32 bytes in base64, none
 * twice. Messages never show a value (a secret), only which entry is wrong.
 */
export function parseSecretsKeys(one: string | undefined, list: string | undefined): Buffer[] | undefined {
  if (list === undefined) {
    const key = parseSecretsKey(one);
    return key ? [key] : undefined;
  }
  if (one !== undefined) throw new InvalidInputError('DNSPLANE_SECRETS_KEYS', 'set either DNSPLANE_SECRETS_KEY (one key) or DNSPLANE_SECRETS_KEYS (a list, while rotating), not both');
  const entries = list.split(',').map((e) => e.trim());
  if (entries.some((e) => e === '')) throw new InvalidInputError('DNSPLANE_SECRETS_KEYS', `must be a comma list of keys with no empty entry; ${SECRETS_KEY_RULE} each`);
  const keys = entries.map((e, i) => parseSecretsKey(e, `DNSPLANE_SECRETS_KEYS[${i}]`)!);
  keys.forEach((k, i) => {
    const first = keys.findIndex((o) => o.equals(k));
    if (first !== i) throw new InvalidInputError(`DNSPLANE_SECRETS_KEYS[${i}]`, `is the same key as DNSPLANE_SECRETS_KEYS[${first}]; list each key once`);
  });
  return keys;
}

/** DNSPLANE_SECRETS_KEY: exactly 32 bytes in base64. The message never shows the value (a secret). */
export function parseSecretsKey(value: string | undefined, field = 'DNSPLANE_SECRETS_KEY'): Buffer | undefined {
  if (value === undefined) return undefined;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value) || value.length % 4 !== 0) throw new InvalidInputError(field, `${SECRETS_KEY_RULE}; the value set is not base64 (${value.length} characters)`);
  const key = Buffer.from(value, 'base64');
  if (key.length !== 32) throw new InvalidInputError(field, `${SECRETS_KEY_RULE}; the value set decodes to ${key.length} bytes`);
  return key;
}

/** DNSPLANE_DNS_ADVERTISE (host:port), else DNSPLANE_DNS_LISTEN when it is one; undefined otherwise. */
function dnsAdvertise(advertise: string | undefined, listen: string | undefined): { host: string; port: number } | undefined {
  if (advertise !== undefined) return parseListen(advertise, 'DNSPLANE_DNS_ADVERTISE');
  if (listen === undefined || !/^(\[[^\]]+\]|[^:]*):\d{1,5}$/.test(listen)) return undefined;
  return parseListen(listen, 'DNSPLANE_DNS_LISTEN');
}

/**
 * DNSPLANE_CORS_ORIGINS: "*" alone, or origins as a browser sends them (scheme://host[:port], no
 * path); each is normalized (lower-case host, default port dropped) so that it matches the Origin header.
 */
export function parseCorsOrigins(value: string, field = 'DNSPLANE_CORS_ORIGINS'): string[] {
  const items = value
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  if (items.includes('*')) {
    if (items.length > 1) throw new InvalidInputError(field, `"*" allows every origin and cannot be combined with others, got "${value}"`);
    return ['*'];
  }
  return items.map((item, i) => {
    let url: URL | undefined;
    try {
      url = new URL(item);
    } catch {
      url = undefined;
    }
    const bare = url && /^[a-z][a-z0-9+.-]*:\/\/[^/?#]+\/?$/i.test(item) && !url.username && !url.password;
    if (!url || !bare || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw new InvalidInputError(`${field}[${i}]`, `must be an origin like https://console.example.com or http://localhost:5173 (scheme, host, optional port; no path), got "${item}"`);
    }
    return url.origin;
  });
}

function readPem(file: string, field: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new InvalidInputError(field, `cannot read "${file}": ${(e as Error).message}`);
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----')) throw new InvalidInputError(field, `"${file}" holds no PEM certificate`);
  return text;
}
