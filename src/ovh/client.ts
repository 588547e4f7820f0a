/**
 * The typed OVH DNS client: @ovhcloud/node-ovh underneath, with what it lacks on top —
 * a shared rate limit, a bound on calls in flight, retries that are safe, OVH's known bugs worked
 * around (POST answering id 0, a timed-out POST that did happen, 404 on DELETE), and errors that
 * keep the HTTP status, OVH's message and the X-Ovh-Queryid (node-ovh drops the last two; we read
 * them from Node's http diagnostics channel).
 *
 * Retries (RetryPolicy): a call that is safe to repeat (every GET, PUT — it sets the same values —,
 * DELETE — a repeat answers 404, which counts as done —, and POST …/refresh) is sent again after a
 * 5xx, a 408, a 429 or no answer (reset, dropped, timed out), up to `attempts` times in all. The wait
 * is the answer's Retry-After when it has one (a Retry-After longer than `maxRetryAfterMs` ends the
 * retries at once: waiting that long while holding a zone lock helps nobody), otherwise exponential
 * backoff with "equal jitter": attempt n waits a random time in [d/2, d], d = min(max, base * 2^n).
 * A record creation (POST …/record) is never repeated blindly: see createRecord.
 *
 * Timeouts are ours, not node-ovh's: node-ovh's own timeout handling adds a listener to the
 * keep-alive socket on every request (a leak) and only idles the socket. Ours destroys the request
 * after `timeoutMs`, which is then a failure with status 0 ("no answer").
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import dc from 'node:diagnostics_channel';
import type { ClientRequest, IncomingMessage } from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import ovh from '@ovhcloud/node-ovh';
import type { OvhClient } from '@ovhcloud/node-ovh';
import { decodeTxt } from '../dns/index.js';
import type { OvhEndpoint } from './endpoint.js';
import { OvhError, kindOfStatus } from './errors.js';
import { joinOvhSplitTxt } from './mapping.js';
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
  /** A Retry-After longer than this is not waited for: the call fails at once. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 4, baseDelayMs: 200, maxDelayMs: 5_000, maxRetryAfterMs: 30_000 };

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
  /** DNSPLANE_DRY_RUN's last line of defence: any call but a GET throws before it is sent. */
  readOnly?: boolean;
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
  request?: ClientRequest;
  status?: number;
  queryId?: string;
  retryAfterMs?: number;
}

/**
 * node-ovh calls https.request synchronously inside requestPromised(), which we run inside
 * callStore.run(ctx): Node publishes http.client.request.start later (once the request has a socket),
 * in the async context of that call, so getStore() there is this request's context.
 */
const callStore = new AsyncLocalStorage<CallContext>();
const contexts = new WeakMap<ClientRequest, CallContext>();
let diagnosticsInstalled = false;

function installDiagnostics(): void {
  if (diagnosticsInstalled) return;
  diagnosticsInstalled = true;
  dc.subscribe('http.client.request.start', (message) => {
    const { request } = message as { request: ClientRequest };
    const ctx = callStore.getStore();
    if (ctx && !ctx.request) {
      ctx.request = request;
      contexts.set(request, ctx);
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
  readonly retry: RetryPolicy;
  readonly timeoutMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private timeSynced: Promise<void> | undefined;

  constructor(private readonly opts: OvhApiOptions) {
    installDiagnostics();
    if (opts.extraCaPems?.length) trustExtraCas(opts.extraCaPems);
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    if (!(this.timeoutMs > 0)) throw new RangeError(`timeoutMs: expected a positive number, got ${this.timeoutMs}`);
    this.client = ovh({
      host: opts.endpoint.host,
      port: opts.endpoint.port,
      basePath: opts.endpoint.basePath,
      appKey: opts.credentials.applicationKey,
      appSecret: opts.credentials.applicationSecret,
      consumerKey: opts.credentials.consumerKey,
      // No `timeout`: see the module comment; once() enforces this.timeoutMs.
    });
    this.limiter = limiterFor(
      `${opts.endpoint.host}:${opts.endpoint.port}|${opts.credentials.applicationKey}`,
      opts.ratePerSecond ?? 20,
      opts.maxConcurrent ?? 8,
    );
    this.retry = { ...DEFAULT_RETRY, ...opts.retry };
    if (!(Number.isInteger(this.retry.attempts) && this.retry.attempts >= 1)) throw new RangeError(`retry.attempts: expected an integer >= 1, got ${this.retry.attempts}`);
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
    const serial = Number(s['serial']);
    if (!Number.isInteger(serial) || serial < 0) throw new OvhError('GET', `/domain/zone/${zone}/soa`, 200, 'unknown', `the SOA serial is not a number: ${JSON.stringify(s['serial'])}`);
    return { serial, ttl: Number(s['ttl']), nxDomainTtl: Number(s['nxDomainTtl']) };
  }

  /** The zone file OVH generates from the zone's records (BIND text, no record ids). One call. */
  async getExport(zone: string): Promise<string> {
    const text = await this.call('GET', `/domain/zone/${zone}/export`, undefined, true);
    if (typeof text !== 'string') throw new OvhError('GET', `/domain/zone/${zone}/export`, 200, 'unknown', `expected a string, got ${typeof text}`);
    return text;
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
   * dropped connection, 5xx, 408) it may have been done. So after such a failure the client waits
   * (backoff, or Retry-After), then looks the record up — by subDomain and fieldType (one GET of the
   * ids), then the ids that are not in `knownIds`, newest first, until one has the target sent — and
   * only sends the POST again when nothing is found. A 429 is a refusal (nothing was done): retried
   * after its Retry-After without a look-up. An answer with id 0 (OVH's known bug: the record was
   * created) is resolved by the same look-up. Anything else (400, 403, 404) fails at once.
   *
   * `knownIds`: the ids the caller already knows in this zone (its cache, plus what it created), so
   * that an identical record that existed before is not taken for the new one.
   */
  async createRecord(zone: string, body: OvhRecordBody, knownIds: ReadonlySet<string>): Promise<OvhRecord> {
    const path = `/domain/zone/${zone}/record`;
    for (let attempt = 0; ; attempt++) {
      let failure: OvhError | undefined;
      try {
        const created = toRecord(await this.call('POST', path, { ...body }, false), zone);
        if (created.id !== '0') return created;
        this.opts.warn?.('OVH answered id 0 to a record creation; looking the record up', { zone, subDomain: body.subDomain, fieldType: body.fieldType });
      } catch (e) {
        if (!(e instanceof OvhError) || !e.transient) throw e;
        failure = e;
      }
      const last = attempt + 1 >= this.retry.attempts;
      if (failure) {
        if (failure.kind === 'rate_limited' && last) throw failure;
        const delay = this.retryDelay(failure, attempt);
        if (delay === undefined) throw failure;
        this.opts.warn?.('OVH record creation failed; looking it up before sending it again', { zone, subDomain: body.subDomain, fieldType: body.fieldType, status: failure.status, attempt: attempt + 1, delayMs: delay });
        await this.sleep(delay);
        if (failure.kind === 'rate_limited') continue;
      }
      const found = await this.findCreated(zone, body, knownIds);
      if (found) return found;
      if (!failure) throw new OvhError('POST', path, 200, 'unknown', 'OVH answered id 0 and no matching record could be found');
      if (last) throw failure;
    }
  }

  /** PUT is safe to repeat: it sets the same target and TTL again. */
  async updateRecord(zone: string, id: string, body: { subDomain?: string; target?: string; ttl?: number }): Promise<void> {
    await this.call('PUT', `/domain/zone/${zone}/record/${id}`, { ...body }, true);
  }

  /** A 404 means the record is already gone: that counts as done (so does a repeat after a lost answer). */
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
    const candidates = ids.filter((id) => !knownIds.has(id)).sort(compareIdsDescending);
    for (const id of candidates) {
      let r: OvhRecord;
      try {
        r = await this.getRecord(zone, id, 2);
      } catch (e) {
        if (e instanceof OvhError && e.kind === 'not_found') continue; // deleted meanwhile
        throw e;
      }
      if (r.subDomain === body.subDomain.toLowerCase() && r.fieldType === body.fieldType && sameTarget(body.fieldType, body.target, r.target)) return r;
    }
    return undefined;
  }

  /** Equal jitter: a random time in [d/2, d], d = min(maxDelayMs, baseDelayMs * 2^attempt). */
  backoff(attempt: number): number {
    const exp = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** attempt);
    return Math.round(exp / 2 + Math.random() * (exp / 2));
  }

  /** How long to wait before attempt `attempt + 1`; undefined: do not retry (Retry-After too long). */
  private retryDelay(e: OvhError, attempt: number): number | undefined {
    if (e.retryAfterMs !== undefined) return e.retryAfterMs > this.retry.maxRetryAfterMs ? undefined : e.retryAfterMs;
    return this.backoff(attempt);
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
    if (this.opts.readOnly && method !== 'GET') throw new OvhError(method, path, 0, 'unknown', 'not sent: this client is read-only (DNSPLANE_DRY_RUN)');
    if (needsTime) await this.ensureTime();
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once(method, path, params, attempt);
      } catch (e) {
        if (!(e instanceof OvhError) || !safe || !e.transient || attempt + 1 >= this.retry.attempts) throw e;
        const delay = this.retryDelay(e, attempt);
        if (delay === undefined) throw e;
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
    let timer: NodeJS.Timeout | undefined;
    try {
      const answer = callStore.run(ctx, () => this.client.requestPromised(method, path, params));
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          // node-ovh's callback then rejects `answer`, which the race below has already left.
          ctx.request?.destroy();
          reject(new OvhError(method, path, 0, 'network', `no answer within ${this.timeoutMs} ms`, ctx.queryId));
        }, this.timeoutMs);
      });
      const result = await Promise.race([answer, timeout]);
      report(ctx.status ?? 200);
      return result;
    } catch (e) {
      const err = e instanceof OvhError ? e : toOvhError(method, path, e, ctx);
      report(err.status);
      throw err;
    } finally {
      clearTimeout(timer);
      this.limiter.release();
    }
  }
}

function compareIdsDescending(a: string, b: string): number {
  const x = /^[0-9]+$/.test(a) ? BigInt(a) : -1n;
  const y = /^[0-9]+$/.test(b) ? BigInt(b) : -1n;
  return x > y ? -1 : x < y ? 1 : 0;
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
  // A long TXT comes back split in pieces of 255 with its own quotes unescaped: joinOvhSplitTxt first.
  if (fieldType === 'TXT') return (joinOvhSplitTxt(answered) ?? decodeTxt(answered)) === decodeTxt(sent);
  return sent.trim().replace(/\s+/g, ' ').toLowerCase() === answered.trim().replace(/\s+/g, ' ').toLowerCase();
}
