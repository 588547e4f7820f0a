/**
 * Environment + flags -> one typed, validated Config. The only module that reads process.env is the
 * CLI, which hands the environment to loadConfig; nothing below server/server.ts reads it.
 */
import path from 'node:path';
import { visibilityConfig, type VisibilityConfig } from './visibility.js';
import { healthConfig, type HealthConfig } from './health.js';
import { InvalidInputError } from '../dns/errors.js';
import { normalizeName } from '../dns/names.js';
import { parseTrustedProxies } from '../net/address.js';
import { FORWARDED_HEADERS, type ForwardedHeader } from '../net/forwarded.js';
import type { ExpandedListsMode } from '../ovh/client/expanded-lists.js';
import { ovhApiAdvertise, ovhConfig, type OvhConfig } from './ovh.js';
import { DEFAULT_HEAP_GROWTH } from './settings.js';
import {
  nonNegativeInteger,
  oneOf,
  parseBoolean,
  parseByteSize,
  parseCorsOrigins,
  parseDuration,
  parseHeapGrowth,
  parseListen,
  parseLogFormat,
  parseSecretsKeys,
  percent,
  positiveNumber,
  type LogFormatSetting,
} from './values.js';

// The value syntaxes and the OVH settings, where the CLI and the tests have always found them.
export {
  logFormatOf,
  parseBoolean,
  parseByteSize,
  parseCorsOrigins,
  parseDuration,
  parseListen,
  parseLogFormat,
  parseSecretsKey,
  parseSecretsKeys,
  type LogFormatSetting,
} from './values.js';
export { OVH_API_PATH, OVH_CREDENTIALS, ovhApiAdvertise, type OvhConfig } from './ovh.js';
export { SETTINGS } from './settings.js';

export type Env = Record<string, string | undefined>;

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
  /** DNS UPDATEs per tenant (DNSPLANE_DNS_UPDATE_RATE, _BURST): keyed by tenant, not address. */
  dnsUpdateRate: { perSecond: number; burst: number };
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
  /** DNSPLANE_SYNC_CONCURRENCY: zones read whole from OVH at once by first syncs. */
  firstSyncs: number;
  lockTimeoutMs: number;
  planTtlMs: number;
  /** DNSPLANE_PLAN_CONCURRENCY: Plans one tenant may have computing at once; the next is refused (ResourceExhausted). */
  planConcurrency: number;
  /** DNSPLANE_READ_CACHE_BYTES: what the Records cache keeps at most (zones' bases, answers, encoded bytes), in bytes; undefined: from the heap limit (core/reads/read-cache.ts). */
  readCacheBytes: number | undefined;
  /** DNSPLANE_HEAP_GROWTH: how far the heap grows past what is live before a full collection, in percent; undefined: V8's own (server/heap.ts). */
  heapGrowthPercent: number | undefined;
  /** DNSPLANE_DRIFT_INTERVAL: how often each zone is checked against OVH for changes made outside dnsplane; 0: never. */
  driftIntervalMs: number;
  /** DNSPLANE_SILENT_CHECK_INTERVAL: how often tenants silent past their withdraw_after are looked for (core/withdrawals/liveness.ts); 0: never. */
  silentCheckMs: number;
  /** DNSPLANE_LAST_SEEN_WRITE: a tenant's last_seen_at is written at most this often per process. */
  lastSeenWriteMs: number;
  /** Workload tokens (core/credentials/issuer-keys.ts): DNSPLANE_JWKS_REFRESH, DNSPLANE_JWKS_COOLDOWN, DNSPLANE_JWKS_MAX_AGE. */
  jwks: { refreshMs: number; cooldownMs: number; maxAgeMs: number };
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
  /** DNSPLANE_MAX_CHANGE_PERCENT: the change threshold (core/plan/guard.ts) of tenants without their own. */
  maxChangePercent: number;
  /** Bounds on slow, silent and numerous clients, both HTTP ports (the HTTP front, api/front/). */
  http: {
    headersTimeoutMs: number;
    requestTimeoutMs: number;
    idleTimeoutMs: number;
    limits: { perAddress: number; total: number };
    /** DNSPLANE_TRUSTED_PROXIES (canonical CIDRs) and the header they write the client into (net/). */
    trustedProxies: string[];
    clientAddressHeader: ForwardedHeader;
  };
  /** Failed logins per client address (core/tenants/login-limiter.ts): a burst, then this many per second. */
  login: { burst: number; perSecond: number };
  /**
   * The encryption keys of secrets kept at rest (core/keys/secrets.ts), the one that seals first:
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
  /** Each publish proved on the zone's authoritative servers (core/probe/; config/visibility.ts). */
  visibility: VisibilityConfig;
  /** Health checks per target (core/health/; config/health.ts). */
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

  const ovh = ovhConfig(get);

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
  const dnsListen =
    dnsRaw?.toLowerCase() === 'off'
      ? undefined
      : dnsRaw !== undefined
        ? parseListen(dnsRaw, 'DNSPLANE_DNS_LISTEN')
        : ovh.mode === 'simulator'
          ? ('demo' as const)
          : undefined;

  return {
    listen: parseListen(get('DNSPLANE_LISTEN') ?? '127.0.0.1:8080'),
    webhookListen: webhookListen(get('DNSPLANE_WEBHOOK_LISTEN'), get('DNSPLANE_LISTEN')),
    ...(dnsListen ? { dnsListen } : {}),
    dnsRate: positiveNumber(get('DNSPLANE_DNS_RATE') ?? '50', 'DNSPLANE_DNS_RATE', false),
    dnsUpdateRate: {
      perSecond: positiveNumber(get('DNSPLANE_DNS_UPDATE_RATE') ?? '10', 'DNSPLANE_DNS_UPDATE_RATE', false),
      burst: positiveNumber(get('DNSPLANE_DNS_UPDATE_BURST') ?? '50', 'DNSPLANE_DNS_UPDATE_BURST', true),
    },
    dnsUpdateWaitMs: /^(0|off)$/i.test(get('DNSPLANE_DNS_UPDATE_WAIT') ?? 'off')
      ? 0
      : parseDuration(get('DNSPLANE_DNS_UPDATE_WAIT')!, 'DNSPLANE_DNS_UPDATE_WAIT'),
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
    firstSyncs: positiveNumber(get('DNSPLANE_SYNC_CONCURRENCY') ?? '4', 'DNSPLANE_SYNC_CONCURRENCY', true),
    lockTimeoutMs: parseDuration(get('DNSPLANE_LOCK_TIMEOUT') ?? '30s', 'DNSPLANE_LOCK_TIMEOUT'),
    planTtlMs: parseDuration(get('DNSPLANE_PLAN_TTL') ?? '15m', 'DNSPLANE_PLAN_TTL'),
    planConcurrency: positiveNumber(get('DNSPLANE_PLAN_CONCURRENCY') ?? '2', 'DNSPLANE_PLAN_CONCURRENCY', true),
    readCacheBytes: get('DNSPLANE_READ_CACHE_BYTES') === undefined ? undefined : parseByteSize(get('DNSPLANE_READ_CACHE_BYTES')!, 'DNSPLANE_READ_CACHE_BYTES'),
    heapGrowthPercent: parseHeapGrowth(get('DNSPLANE_HEAP_GROWTH') ?? DEFAULT_HEAP_GROWTH, 'DNSPLANE_HEAP_GROWTH'),
    driftIntervalMs: /^(0|off)$/i.test(get('DNSPLANE_DRIFT_INTERVAL') ?? '')
      ? 0
      : parseDuration(get('DNSPLANE_DRIFT_INTERVAL') ?? '5m', 'DNSPLANE_DRIFT_INTERVAL'),
    silentCheckMs: /^(0|off)$/i.test(get('DNSPLANE_SILENT_CHECK_INTERVAL') ?? '')
      ? 0
      : parseDuration(get('DNSPLANE_SILENT_CHECK_INTERVAL') ?? '10s', 'DNSPLANE_SILENT_CHECK_INTERVAL'),
    lastSeenWriteMs: parseDuration(get('DNSPLANE_LAST_SEEN_WRITE') ?? '1m', 'DNSPLANE_LAST_SEEN_WRITE'),
    jwks: {
      refreshMs: parseDuration(get('DNSPLANE_JWKS_REFRESH') ?? '10m', 'DNSPLANE_JWKS_REFRESH'),
      cooldownMs: parseDuration(get('DNSPLANE_JWKS_COOLDOWN') ?? '30s', 'DNSPLANE_JWKS_COOLDOWN'),
      maxAgeMs: parseDuration(get('DNSPLANE_JWKS_MAX_AGE') ?? '24h', 'DNSPLANE_JWKS_MAX_AGE'),
    },
    applyBatch: nonNegativeInteger(get('DNSPLANE_APPLY_BATCH') ?? '100', 'DNSPLANE_APPLY_BATCH'),
    applyCoalesceMs: /^(0|off)$/i.test(get('DNSPLANE_APPLY_COALESCE') ?? '')
      ? 0
      : parseDuration(get('DNSPLANE_APPLY_COALESCE') ?? '2s', 'DNSPLANE_APPLY_COALESCE'),
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
      trustedProxies: parseTrustedProxies(get('DNSPLANE_TRUSTED_PROXIES') ?? ''),
      clientAddressHeader: oneOf(
        (get('DNSPLANE_CLIENT_ADDRESS_HEADER') ?? 'x-forwarded-for').toLowerCase(),
        'DNSPLANE_CLIENT_ADDRESS_HEADER',
        FORWARDED_HEADERS,
      ),
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

/** DNSPLANE_DNS_ADVERTISE (host:port), else DNSPLANE_DNS_LISTEN when it is one; undefined otherwise. */
function dnsAdvertise(advertise: string | undefined, listen: string | undefined): { host: string; port: number } | undefined {
  if (advertise !== undefined) return parseListen(advertise, 'DNSPLANE_DNS_ADVERTISE');
  if (listen === undefined || !/^(\[[^\]]+\]|[^:]*):\d{1,5}$/.test(listen)) return undefined;
  return parseListen(listen, 'DNSPLANE_DNS_LISTEN');
}
