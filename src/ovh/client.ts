/**
 * The typed OVH DNS client: @ovhcloud/node-ovh underneath, with what it lacks on top —
 * a shared rate limit, a bound on calls in flight, retries that are safe, OVH's known bugs worked
 * around (POST answering id 0, a timed-out POST that did happen, 404 on DELETE), and errors that
 * keep the HTTP status, OVH's message and the X-Ovh-Queryid (node-ovh drops the last two; we read
 * them from Node's http diagnostics channel).
 */
import dc from 'node:diagnostics_channel';
import type { ClientRequest, IncomingMessage } from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import ovh from '@ovhcloud/node-ovh';
import type { OvhClient } from '@ovhcloud/node-ovh';
import type { OvhEndpoint } from './endpoint.js';
import { OvhError, kindOfStatus } from './errors.js';
import { limiterFor, type RateLimiter } from './ratelimit.js';
import type { OvhRecord, OvhRecordBody } from './types.js';

export interface OvhCredentials {
  applicationKey: string;
  applicationSecret: string;
  consumerKey: string;
}

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

/** Reported once per HTTP call (each attempt is one call). */
export interface OvhCallInfo {
  method: string;
  path: string;
  /** The path with zone and id replaced by placeholders, for metrics. */
  route: string;
  status: number;
  durationMs: number;
  /** Time spent waiting for the rate limit. */
  waitedMs: number;
  attempt: number;
  queryId?: string;
}

export interface OvhApiOptions {
  endpoint: OvhEndpoint;
  credentials: OvhCredentials;
  /** Extra trusted CAs (PEM), added to the system ones for this process's https agent. */
  extraCaPems?: string[];
  timeoutMs?: number;
  ratePerSecond?: number;
  maxConcurrent?: number;
  retry?: Partial<RetryPolicy>;
  onCall?: (info: OvhCallInfo) => void;
  /** Warnings (retries, lookups); never given secrets. */
  warn?: (msg: string, fields?: Record<string, unknown>) => void;
  /** For tests: how to sleep between retries. */
  sleep?: (ms: number) => Promise<void>;
}

export interface OvhZoneInfo {
  name: string;
  nameServers: string[];
  lastUpdate?: string;
}

export interface OvhSoa {
  serial: number;
  ttl: number;
  nxDomainTtl: number;
}

// --- http diagnostics: which of our calls a request belongs to, and what its answer's headers said ---

interface CallContext {
  status?: number;
  queryId?: string;
  retryAfterMs?: number;
}

let pendingContext: CallContext | undefined;
const contexts = new WeakMap<ClientRequest, CallContext>();
let diagnosticsInstalled = false;

function installDiagnostics(): void {
  if (diagnosticsInstalled) return;
  diagnosticsInstalled = true;
  dc.subscribe('http.client.request.start', (message) => {
    const { request } = message as { request: ClientRequest };
    // node-ovh calls https.request synchronously inside requestPromised(), so the context set just
    // before that call is this request's.
    if (pendingContext) {
      contexts.set(request, pendingContext);
      pendingContext = undefined;
    }
  });
  dc.subscribe('http.client.response.finish', (message) => {
    const { request, response } = message as { request: ClientRequest; response: IncomingMessage };
    const ctx = contexts.get(request);
    if (!ctx) return;
    ctx.status = response.statusCode;
    const qid = response.headers['x-ovh-queryid'];
    if (typeof qid === 'string') ctx.queryId = qid;
    ctx.retryAfterMs = parseRetryAfter(response.headers['retry-after']);
  });
}

function parseRetryAfter(value: string | string[] | undefined): number | undefined {
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const secs = Number(value);
  if (Number.isFinite(secs) && secs >= 0) return secs * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

// --- trusted CAs ---

const extraCas = new Set<string>();

/**
 * Trusts more CAs for the process's global https agent (node-ovh cannot be given an agent). The
 * system roots stay trusted. NODE_EXTRA_CA_CERTS keeps working on its own when nothing is added here;
 * when something is, its contents must be passed too (config does that).
 */
export function trustExtraCas(pems: string[]): void {
  let added = false;
  for (const pem of pems) {
    if (!extraCas.has(pem)) {
      extraCas.add(pem);
      added = true;
    }
  }
  if (added) https.globalAgent.options.ca = [...tls.rootCertificates, ...extraCas];
}

// --- the client ---

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function routeOf(path: string): string {
  return path
    .replace(/^\/domain\/zone\/[^/]+/, '/domain/zone/{zone}')
    .replace(/\/record\/\d+$/, '/record/{id}');
}

export class OvhApi {
  private readonly client: OvhClient;
  private readonly limiter: RateLimiter;
  private readonly retry: RetryPolicy;
  private readonly sleep: (ms: number) => Promise<void>;
  private timeSynced: Promise<void> | undefined;

  constructor(private readonly opts: OvhApiOptions) {
    installDiagnostics();
    if (opts.extraCaPems?.length) trustExtraCas(opts.extraCaPems);
    this.client = ovh({
      host: opts.endpoint.host,
      port: opts.endpoint.port,
      basePath: opts.endpoint.basePath,
      appKey: opts.credentials.applicationKey,
      appSecret: opts.credentials.applicationSecret,
      consumerKey: opts.credentials.consumerKey,
      timeout: opts.timeoutMs ?? 30_000,
    });
    this.limiter = limiterFor(
      `${opts.endpoint.host}:${opts.endpoint.port}|${opts.credentials.applicationKey}`,
      opts.ratePerSecond ?? 20,
      opts.maxConcurrent ?? 8,
    );
    this.retry = { attempts: 4, baseDelayMs: 200, maxDelayMs: 5_000, ...opts.retry };
    this.sleep = opts.sleep ?? defaultSleep;
  }

  get endpointLabel(): string {
    return this.opts.endpoint.label;
  }

  // --- DNS calls ---

  async listZones(): Promise<string[]> {
    const zones = await this.call('GET', '/domain/zone', undefined, true);
    return asArray(zones, 'GET /domain/zone').map((z) => String(z).toLowerCase());
  }

  async getZoneInfo(zone: string): Promise<OvhZoneInfo> {
    const z = asObject(await this.call('GET', `/domain/zone/${zone}`, undefined, true), 'zone');
    return {
      name: String(z['name']),
      nameServers: Array.isArray(z['nameServers']) ? z['nameServers'].map(String) : [],
      lastUpdate: typeof z['lastUpdate'] === 'string' ? z['lastUpdate'] : undefined,
    };
  }

  async getSoa(zone: string): Promise<OvhSoa> {
    const s = asObject(await this.call('GET', `/domain/zone/${zone}/soa`, undefined, true), 'soa');
    return { serial: Number(s['serial']), ttl: Number(s['ttl']), nxDomainTtl: Number(s['nxDomainTtl']) };
  }

  /** Record ids, optionally filtered (OVH matches subDomain case-insensitively). */
  async listRecordIds(zone: string, filter: { fieldType?: string; subDomain?: string } = {}): Promise<string[]> {
    const params: Record<string, unknown> = {};
    if (filter.fieldType !== undefined) params['fieldType'] = filter.fieldType;
    if (filter.subDomain !== undefined) params['subDomain'] = filter.subDomain;
    const ids = await this.call('GET', `/domain/zone/${zone}/record`, params, true);
    return asArray(ids, 'record ids').map((id) => String(id));
  }

  /** One record. OVH sometimes answers 404 right after a creation: `retryNotFound` retries that. */
  async getRecord(zone: string, id: string, retryNotFound = 0): Promise<OvhRecord> {
    for (let i = 0; ; i++) {
      try {
        return toRecord(await this.call('GET', `/domain/zone/${zone}/record/${id}`, undefined, true), zone);
      } catch (e) {
        if (e instanceof OvhError && e.kind === 'not_found' && i < retryNotFound) {
          await this.sleep(this.backoff(i));
          continue;
        }
        throw e;
      }
    }
  }

  /**
   * Creates one record, never two. A POST is not safe to repeat: when its answer is lost (timeout,
   * dropped connection, 5xx) or OVH answers id 0, the record is looked up by name, type and target
   * among the ids that are not in `knownIds` before anything is sent again.
   */
  async createRecord(zone: string, body: OvhRecordBody, knownIds: ReadonlySet<string>): Promise<OvhRecord> {
    const path = `/domain/zone/${zone}/record`;
    for (let attempt = 0; ; attempt++) {
      let lastError: OvhError | undefined;
      try {
        const created = toRecord(await this.call('POST', path, { ...body }, false), zone);
        if (created.id !== '0') return created;
        this.opts.warn?.('OVH answered id 0 to a record creation; looking the record up', { zone, subDomain: body.subDomain, fieldType: body.fieldType });
      } catch (e) {
        if (!(e instanceof OvhError) || !e.transient) throw e;
        lastError = e;
      }
      const found = await this.findCreated(zone, body, knownIds);
      if (found) return found;
      if (!lastError) throw new OvhError('POST', path, 200, 'unknown', 'OVH answered id 0 and the record cannot be found');
      if (attempt + 1 >= this.retry.attempts) throw lastError;
      await this.sleep(lastError.retryAfterMs ?? this.backoff(attempt));
    }
  }

  /** PUT is safe to repeat: it sets the same target and TTL again. */
  async updateRecord(zone: string, id: string, body: { subDomain?: string; target?: string; ttl?: number }): Promise<void> {
    await this.call('PUT', `/domain/zone/${zone}/record/${id}`, { ...body }, true);
  }

  /** A 404 means the record is already gone: that counts as done. */
  async deleteRecord(zone: string, id: string): Promise<void> {
    try {
      await this.call('DELETE', `/domain/zone/${zone}/record/${id}`, undefined, true);
    } catch (e) {
      if (e instanceof OvhError && e.kind === 'not_found') return;
      throw e;
    }
  }

  /** Publishes the zone's draft. Safe to repeat (publishing twice publishes the same thing). */
  async refresh(zone: string): Promise<void> {
    await this.call('POST', `/domain/zone/${zone}/refresh`, undefined, true);
  }

  // --- plumbing ---

  private async findCreated(zone: string, body: OvhRecordBody, knownIds: ReadonlySet<string>): Promise<OvhRecord | undefined> {
    const ids = await this.listRecordIds(zone, { fieldType: body.fieldType, subDomain: body.subDomain });
    for (const id of ids) {
      if (knownIds.has(id)) continue;
      const r = await this.getRecord(zone, id, 2);
      if (sameTarget(body.fieldType, body.target, r.target)) return r;
    }
    return undefined;
  }

  private backoff(attempt: number): number {
    const exp = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** attempt);
    return Math.round(exp / 2 + Math.random() * (exp / 2)); // "equal jitter"
  }

  private async ensureTime(): Promise<void> {
    // node-ovh would fetch /auth/time lazily inside the first call, out of our rate limit and context.
    this.timeSynced ??= (async () => {
      const time = await this.call('GET', '/auth/time', undefined, true, false);
      this.client.apiTimeDiff = Number(time) - Math.round(Date.now() / 1000);
    })().catch((e: unknown) => {
      this.timeSynced = undefined;
      throw e;
    });
    return this.timeSynced;
  }

  /** One logical call: rate limited, retried when `safe` and the failure is transient. */
  private async call(method: string, path: string, params: Record<string, unknown> | undefined, safe: boolean, needsTime = true): Promise<unknown> {
    if (needsTime) await this.ensureTime();
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once(method, path, params, attempt);
      } catch (e) {
        if (!(e instanceof OvhError) || !safe || !e.transient || attempt + 1 >= this.retry.attempts) throw e;
        const delay = e.retryAfterMs ?? this.backoff(attempt);
        this.opts.warn?.('OVH call failed, retrying', { method, path, status: e.status, attempt: attempt + 1, delayMs: delay });
        await this.sleep(delay);
      }
    }
  }

  private async once(method: string, path: string, params: Record<string, unknown> | undefined, attempt: number): Promise<unknown> {
    const waitedMs = await this.limiter.acquire();
    const ctx: CallContext = {};
    const start = performance.now();
    const report = (status: number) =>
      this.opts.onCall?.({ method, path, route: routeOf(path), status, durationMs: performance.now() - start, waitedMs, attempt, queryId: ctx.queryId });
    try {
      pendingContext = ctx;
      const promise = this.client.requestPromised(method, path, params);
      pendingContext = undefined;
      const result = await promise;
      report(ctx.status ?? 200);
      return result;
    } catch (e) {
      pendingContext = undefined;
      const err = toOvhError(method, path, e, ctx);
      report(err.status);
      throw err;
    } finally {
      this.limiter.release();
    }
  }
}

function toOvhError(method: string, path: string, rejection: unknown, ctx: CallContext): OvhError {
  const r = (rejection ?? {}) as { error?: unknown; message?: unknown };
  let status = typeof r.error === 'number' && r.error > 0 ? r.error : 0;
  // A string error means an unparsable body (e.g. OVH's HTML 408): the status was seen on the wire.
  if (status === 0 && typeof r.error === 'string' && ctx.status) status = ctx.status;
  const message =
    typeof r.message === 'string'
      ? r.message
      : typeof r.error === 'string'
        ? r.error
        : r.error instanceof Error
          ? r.error.message
          : typeof r.error === 'number' && r.error < 0
            ? `connection error (errno ${r.error})`
            : '';
  return new OvhError(method, path, status, kindOfStatus(status, message), message, ctx.queryId, ctx.retryAfterMs);
}

function asArray(v: unknown, what: string): unknown[] {
  if (!Array.isArray(v)) throw new OvhError('GET', what, 200, 'unknown', `expected an array, got ${typeof v}`);
  return v;
}

function asObject(v: unknown, what: string): Record<string, unknown> {
  if (v === null || typeof v !== 'object') throw new OvhError('GET', what, 200, 'unknown', `expected an object, got ${typeof v}`);
  return v as Record<string, unknown>;
}

function toRecord(v: unknown, zone: string): OvhRecord {
  const r = asObject(v, 'record');
  return {
    id: String(r['id'] ?? '0'),
    zone,
    subDomain: String(r['subDomain'] ?? '').toLowerCase(),
    fieldType: String(r['fieldType'] ?? ''),
    target: String(r['target'] ?? ''),
    ttl: Number(r['ttl'] ?? 0),
  };
}

/** Whether a record OVH answered has the target we sent (OVH quotes TXT in its answers). */
function sameTarget(fieldType: string, sent: string, answered: string): boolean {
  if (fieldType === 'TXT') {
    const unq = answered.startsWith('"') ? answered.slice(1, -1).split('" "').join('') : answered;
    return unq === sent;
  }
  return sent.toLowerCase() === answered.toLowerCase();
}
