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
import { createHash } from 'node:crypto';
import dc from 'node:diagnostics_channel';
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import https from 'node:https';
import querystring from 'node:querystring';
import tls from 'node:tls';
import ovh from '@ovhcloud/node-ovh';
import type { OvhClient } from '@ovhcloud/node-ovh';
import { decodeTxt } from '../dns/index.js';
import type { OvhEndpoint } from './endpoint.js';
import { OvhError, kindOfStatus } from './errors.js';
import { joinOvhSplitTxt } from './mapping.js';
import { currentOvhFlow, limiterFor, type RateLimiter } from './ratelimit.js';
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
  /** Time spent waiting for a concurrency slot and the rate limit. */
  waitedMs: number;
  /**
   * When the rate limiter granted this attempt its token (performance.now() of this process): the
   * point where the rate is enforced; the request is sent right after.
   */
  grantedAt: number;
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
  /** DNSPLANE_OVH_EXPANDED_LISTS: read records in OVH's expanded list mode (see listRecordsOrIds). Default 'auto'. */
  expandedLists?: ExpandedListsMode;
  /** Records asked per page in expanded mode (X-Pagination-Size). Default 5000. */
  expandedPageSize?: number;
  /** Notices logged once per process (what the expanded list mode turned out to be); never given secrets. */
  info?: (msg: string, fields?: Record<string, unknown>) => void;
}

/**
 * auto: try OVH's expanded list mode, fall back to one GET per id when OVH does not answer it, and
 * remember which for the process; on: expanded only (an answer that is not records is an error);
 * off: one GET per id, as external-dns reads.
 */
export type ExpandedListsMode = 'auto' | 'on' | 'off';

/** What this process knows of the expanded list mode: untried, answered with records, or not. */
export type ExpandedListsState = 'unknown' | 'yes' | 'no';

/** A record listing: full records (expanded mode), or ids to GET one by one. `calls`: the OVH calls it took. */
export type RecordListing = { records: OvhRecord[]; calls: number } | { ids: string[]; calls: number };

export const EXPANDED_MODE_HEADER = 'CachedObjectList-Pages';

/** Records asked per expanded page unless told otherwise (OVH's own console asks 5000 on such routes). */
export const DEFAULT_EXPANDED_PAGE_SIZE = 5000;

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
  /** The answer's headers (paging headers are read from them). */
  headers?: IncomingHttpHeaders;
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
    ctx.headers = response.headers;
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

// --- write guards (fencing) ---

/**
 * Something that must agree before each write attempt (anything but a GET) leaves: core's zone fence
 * (the zone lock is still held) and the shutdown deadline. It runs after the rate limiter, right
 * before the request, for every attempt (retries included), and refuses by throwing: the attempt is
 * not sent and the error (not an OvhError) ends the call without retries.
 */
export interface WriteGuard {
  beforeWrite(method: string, path: string): Promise<void>;
}

const guardStore = new AsyncLocalStorage<WriteGuard>();

// --- trusted CAs ---

const extraCas = new Set<string>();

/**
 * Trusts more CAs for the process's global https agent (node-ovh cannot be given an agent). The
 * system roots stay trusted. NODE_EXTRA_CA_CERTS keeps working on its own when nothing is added here;
 * when something is, its contents must be passed too (config does that).
 *
 * As one secure context built once, not as the agent's `ca` option: the agent turns `ca` (here the
 * ~150 system roots and ours, ~200 KB of PEM) into its connection-pool key string several times per
 * request, and TLS parses every root again for each new connection — about 1 ms of CPU per OVH call.
 */
export function trustExtraCas(pems: string[]): void {
  let added = false;
  for (const pem of pems) {
    if (!extraCas.has(pem)) {
      extraCas.add(pem);
      added = true;
    }
  }
  if (added) {
    const options = https.globalAgent.options as https.AgentOptions & { secureContext?: tls.SecureContext };
    options.secureContext = tls.createSecureContext({ ca: [...tls.rootCertificates, ...extraCas] });
    delete options.ca;
  }
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
  readonly expandedListsMode: ExpandedListsMode;
  readonly expandedPageSize: number;
  private expandedState: ExpandedListsState;
  private readonly observers = new Set<(info: OvhCallInfo) => void>();

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
    this.expandedListsMode = opts.expandedLists ?? 'auto';
    if (!['auto', 'on', 'off'].includes(this.expandedListsMode)) throw new RangeError(`expandedLists: expected auto, on or off, got ${String(this.expandedListsMode)}`);
    this.expandedPageSize = opts.expandedPageSize ?? DEFAULT_EXPANDED_PAGE_SIZE;
    if (!(Number.isInteger(this.expandedPageSize) && this.expandedPageSize >= 1)) throw new RangeError(`expandedPageSize: expected an integer >= 1, got ${this.expandedPageSize}`);
    this.expandedState = this.expandedListsMode === 'off' ? 'no' : this.expandedListsMode === 'on' ? 'yes' : 'unknown';
  }

  /** Whether record lists are read in expanded mode: not tried yet, yes, or no (off, or OVH did not answer it). */
  get expandedLists(): ExpandedListsState {
    return this.expandedState;
  }

  /**
   * Another listener of every call, beside `onCall` (which feeds the metrics): e.g. a test that needs
   * the grant times of the calls a running server makes. Returns the function that removes it.
   */
  observeCalls(fn: (info: OvhCallInfo) => void): () => void {
    this.observers.add(fn);
    return () => this.observers.delete(fn);
  }

  /** Runs fn with `guard` consulted before every write attempt fn makes through any OvhApi (async context). */
  guarded<T>(guard: WriteGuard, fn: () => Promise<T>): Promise<T> {
    return guardStore.run(guard, fn);
  }

  /** The process-wide limiter this client's calls go through (shared per application key). */
  get rateLimiter(): RateLimiter {
    return this.limiter;
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

  /**
   * The zone's records matching the filter, in as few calls as OVH allows.
   *
   * Expanded mode (unless `off`, or OVH already refused it in this process): GET …/record with
   * `X-Pagination-Mode: CachedObjectList-Pages`, `X-Pagination-Size` (expandedPageSize),
   * `X-Pagination-Number` (1, 2, …) and `Pragma: no-cache` on every page (OVH caches the list on its
   * side; a page served from that cache could be older than our last write). The answer is a page of
   * full records and `X-Pagination-Elements` the total: the remaining pages are asked at once (each
   * under the rate limit), with the page size the server says it used. Pages read while the zone
   * changes may overlap or skip: the pages are read again once when their totals disagree or the ids
   * do not add up, and the ids are listed instead after a second mismatch.
   *
   * When the answer is not an array of records — an array of ids (the mode ignored), or a 4xx other
   * than 401/403/404/429 (the mode refused) — `auto` falls back: `{ ids }` (the ids answered, when
   * they are the whole list, else one plain listing), remembers it for the process and logs it once;
   * `on` throws. The caller then GETs the ids one by one. An empty answer proves nothing either way.
   * Errors that would fail a plain listing too (5xx after retries, auth, unknown zone) are thrown.
   */
  async listRecordsOrIds(zone: string, filter: { fieldType?: string; subDomain?: string } = {}): Promise<RecordListing> {
    if (this.expandedState === 'no') return { ids: await this.listRecordIds(zone, filter), calls: 1 };
    let calls = 0;
    for (let round = 0; round < 2; round++) {
      const read = await this.readExpanded(zone, filter);
      calls += read.calls;
      if ('refused' in read) {
        if (this.expandedListsMode === 'on') {
          throw new OvhError('GET', `/domain/zone/${zone}/record`, read.status, 'unknown', `OVH did not answer an expanded record list (${read.refused}) and DNSPLANE_OVH_EXPANDED_LISTS is "on"; set it to "auto" to fall back to one GET per record`);
        }
        this.noteExpanded('no', read.refused);
        if (read.ids) return { ids: read.ids, calls };
        return { ids: await this.listRecordIds(zone, filter), calls: calls + 1 };
      }
      if ('records' in read) {
        if (read.records.length > 0) this.noteExpanded('yes');
        return { records: read.records, calls };
      }
      this.opts.warn?.('OVH record list pages did not add up (the zone changed while it was read)', { zone, ...filter, round: round + 1 });
    }
    return { ids: await this.listRecordIds(zone, filter), calls: calls + 1 };
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

  /**
   * Every page of one expanded listing. `records`: the whole list; `refused`: the answer was not
   * records (`ids` when it was the complete id list); `inconsistent`: the pages did not add up.
   */
  private async readExpanded(
    zone: string,
    filter: { fieldType?: string; subDomain?: string },
  ): Promise<{ records: OvhRecord[]; calls: number } | { refused: string; status: number; ids?: string[]; calls: number } | { inconsistent: true; calls: number }> {
    const path = `/domain/zone/${zone}/record`;
    const params: Record<string, unknown> = {};
    if (filter.fieldType !== undefined) params['fieldType'] = filter.fieldType;
    if (filter.subDomain !== undefined) params['subDomain'] = filter.subDomain;
    const page = (number: number, size: number) =>
      this.exchange('GET', path, params, true, {
        headers: { 'X-Pagination-Mode': EXPANDED_MODE_HEADER, 'X-Pagination-Size': String(size), 'X-Pagination-Number': String(number), Pragma: 'no-cache' },
      });

    let first: { body: unknown; headers: IncomingHttpHeaders };
    try {
      first = await page(1, this.expandedPageSize);
    } catch (e) {
      if (e instanceof OvhError && e.status >= 400 && e.status < 500 && ![401, 403, 404, 408, 429].includes(e.status)) {
        return { refused: `${e.status} ${e.message}`, status: e.status, calls: 1 };
      }
      throw e;
    }
    const total = headerInt(first.headers, 'x-pagination-elements');
    const parsed = parseRecordPage(first.body, zone);
    if (!parsed.ok) {
      // Ids with no paging header: the mode was ignored and this is the whole plain listing.
      const ids = parsed.ids && total === undefined ? parsed.ids : undefined;
      return { refused: parsed.why, status: 200, ...(ids ? { ids } : {}), calls: 1 };
    }
    const records = parsed.records;
    if (total === undefined || total <= records.length) return { records, calls: 1 };
    // The size the server used (it may serve smaller pages than asked).
    const size = headerInt(first.headers, 'x-pagination-size') ?? records.length;
    if (size < 1 || records.length !== Math.min(size, total)) return { inconsistent: true, calls: 1 };
    const count = Math.ceil(total / size);
    const rest = await Promise.all(Array.from({ length: count - 1 }, (_, i) => page(i + 2, size)));
    const seen = new Set(records.map((r) => r.id));
    for (const answer of rest) {
      const p = parseRecordPage(answer.body, zone);
      if (!p.ok || headerInt(answer.headers, 'x-pagination-elements') !== total) return { inconsistent: true, calls: count };
      for (const r of p.records) {
        if (seen.has(r.id)) return { inconsistent: true, calls: count };
        seen.add(r.id);
        records.push(r);
      }
    }
    if (records.length !== total) return { inconsistent: true, calls: count };
    return { records, calls: count };
  }

  /** Remembers (auto) what OVH made of the expanded mode, and says so once. */
  private noteExpanded(state: 'yes' | 'no', why?: string): void {
    if (this.expandedListsMode !== 'auto' || this.expandedState === state) return;
    this.expandedState = state;
    if (state === 'yes') this.opts.info?.('OVH answers expanded record lists: zones are read a page of records per call', { pageSize: this.expandedPageSize });
    else this.opts.info?.('OVH does not answer expanded record lists: records are read one GET per id for the rest of this process', { answer: why });
  }

  private async findCreated(zone: string, body: OvhRecordBody, knownIds: ReadonlySet<string>): Promise<OvhRecord | undefined> {
    const matches = (r: OvhRecord) => r.subDomain === body.subDomain.toLowerCase() && r.fieldType === body.fieldType && sameTarget(body.fieldType, body.target, r.target);
    const listing = await this.listRecordsOrIds(zone, { fieldType: body.fieldType, subDomain: body.subDomain });
    if ('records' in listing) {
      return listing.records.filter((r) => !knownIds.has(r.id)).sort((a, b) => compareIdsDescending(a.id, b.id)).find(matches);
    }
    const candidates = listing.ids.filter((id) => !knownIds.has(id)).sort(compareIdsDescending);
    for (const id of candidates) {
      let r: OvhRecord;
      try {
        r = await this.getRecord(zone, id, 2);
      } catch (e) {
        if (e instanceof OvhError && e.kind === 'not_found') continue; // deleted meanwhile
        throw e;
      }
      if (matches(r)) return r;
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
    return (await this.exchange(method, path, params, safe, { needsTime })).body;
  }

  /** call(), with request headers of our own and the answer's headers. */
  private async exchange(
    method: string,
    path: string,
    params: Record<string, unknown> | undefined,
    safe: boolean,
    opts: { needsTime?: boolean; headers?: Record<string, string> } = {},
  ): Promise<{ body: unknown; headers: IncomingHttpHeaders }> {
    if (this.opts.readOnly && method !== 'GET') throw new OvhError(method, path, 0, 'unknown', 'not sent: this client is read-only (DNSPLANE_DRY_RUN)');
    if (opts.needsTime ?? true) await this.ensureTime();
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once(method, path, params, attempt, opts.headers);
      } catch (e) {
        if (!(e instanceof OvhError) || !safe || !e.transient || attempt + 1 >= this.retry.attempts) throw e;
        const delay = this.retryDelay(e, attempt);
        if (delay === undefined) throw e;
        this.opts.warn?.('OVH call failed, retrying', { method, path, status: e.status, attempt: attempt + 1, delayMs: delay });
        await this.sleep(delay);
      }
    }
  }

  private async once(
    method: string,
    path: string,
    params: Record<string, unknown> | undefined,
    attempt: number,
    headers?: Record<string, string>,
  ): Promise<{ body: unknown; headers: IncomingHttpHeaders }> {
    // In turn with the other tenants and zones waiting (the flow core set around this work).
    const { waitedMs, grantedAt } = await this.limiter.acquire(currentOvhFlow());
    if (method !== 'GET') {
      const guard = guardStore.getStore();
      // Refused: not sent, not reported as a call; the guard's error ends the call as it is.
      if (guard) await guard.beforeWrite(method, path).catch((e: unknown) => {
        this.limiter.release();
        throw e;
      });
    }
    const ctx: CallContext = {};
    const start = performance.now();
    const report = (status: number) => {
      const info: OvhCallInfo = { method, path, route: routeOf(path), status, durationMs: performance.now() - start, waitedMs, grantedAt, attempt, queryId: ctx.queryId };
      this.opts.onCall?.(info);
      for (const fn of this.observers) fn(info);
    };
    let timer: NodeJS.Timeout | undefined;
    try {
      const answer = callStore.run(ctx, () => (headers ? this.requestWithHeaders(method, path, params, headers) : this.client.requestPromised(method, path, params)));
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          // node-ovh's callback then rejects `answer`, which the race below has already left.
          ctx.request?.destroy();
          reject(new OvhError(method, path, 0, 'network', `no answer within ${this.timeoutMs} ms`, ctx.queryId));
        }, this.timeoutMs);
      });
      const result = await Promise.race([answer, timeout]);
      report(ctx.status ?? 200);
      return { body: result, headers: ctx.headers ?? {} };
    } catch (e) {
      const err = e instanceof OvhError ? e : toOvhError(method, path, e, ctx);
      report(err.status);
      throw err;
    } finally {
      clearTimeout(timer);
      this.limiter.release();
    }
  }

  /**
   * A request node-ovh cannot make: it sends no header of the caller's (and returns none). Built and
   * signed exactly as node-ovh 3.x builds and signs its own (same path, query string, headers, and
   * signature over `https://` + host without the port + path), on the same global https agent, with the
   * extra headers added; settles like requestPromised (a rejection `{error: status | errno, message}`)
   * so that errors, timeouts and the diagnostics channel work the same. GET only (no body).
   */
  private requestWithHeaders(method: string, path: string, params: Record<string, unknown> | undefined, extra: Record<string, string>): Promise<unknown> {
    if (method !== 'GET') throw new Error('requestWithHeaders: GET only');
    const { endpoint, credentials } = this.opts;
    const query = Object.fromEntries(Object.entries(params ?? {}).filter(([, v]) => v !== undefined && v !== null));
    const fullPath = `${endpoint.basePath}${path}${Object.keys(query).length > 0 ? `?${querystring.stringify(query as querystring.ParsedUrlQueryInput)}` : ''}`;
    const timestamp = Math.round(Date.now() / 1000) + (this.client.apiTimeDiff ?? 0);
    const signature = `$1$${createHash('sha1')
      .update([credentials.applicationSecret, credentials.consumerKey, method, `https://${endpoint.host}${fullPath}`, '', timestamp].join('+'))
      .digest('hex')}`;
    const headers = {
      ...extra,
      'Content-Type': 'application/json',
      'X-Ovh-Application': credentials.applicationKey,
      'X-Ovh-Timestamp': String(timestamp),
      'X-Ovh-Consumer': credentials.consumerKey,
      'X-Ovh-Signature': signature,
    };
    return new Promise((resolve, reject) => {
      const req = https.request({ host: endpoint.host, port: endpoint.port, method, path: fullPath, headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('error', (e: NodeJS.ErrnoException) => reject({ error: e.errno ?? e }));
        res.on('end', () => {
          let body: unknown = null;
          if (text.length > 0) {
            try {
              body = JSON.parse(text) as unknown;
            } catch {
              reject({ error: '[OVH] Unable to parse JSON reponse' });
              return;
            }
          }
          const status = res.statusCode ?? 0;
          if (status < 200 || status > 299) {
            const message = body !== null && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string' ? (body as { message: string }).message : null;
            reject({ error: status, message });
          } else resolve(body);
        });
      });
      req.on('error', (e: NodeJS.ErrnoException) => reject({ error: e.errno ?? e }));
      req.end();
    });
  }
}

function headerInt(headers: IncomingHttpHeaders, name: string): number | undefined {
  const v = headers[name];
  const text = Array.isArray(v) ? v[0] : v;
  if (text === undefined || !/^\s*\d+\s*$/.test(text)) return undefined;
  return Number(text);
}

/** An expanded page: records, or why not (with the ids when it is an array of ids). */
function parseRecordPage(body: unknown, zone: string): { ok: true; records: OvhRecord[] } | { ok: false; why: string; ids?: string[] } {
  if (!Array.isArray(body)) return { ok: false, why: `expected an array, got ${body === null ? 'null' : typeof body}` };
  if (body.length > 0 && body.every((x) => typeof x === 'number' || (typeof x === 'string' && /^\d+$/.test(x)))) {
    return { ok: false, why: 'an array of record ids', ids: body.map((x) => String(x)) };
  }
  const records: OvhRecord[] = [];
  for (const x of body) {
    if (x === null || typeof x !== 'object') return { ok: false, why: 'an array that is not of records' };
    const o = x as Record<string, unknown>;
    const id = o['id'];
    if (!((typeof id === 'number' && Number.isSafeInteger(id) && id > 0) || (typeof id === 'string' && /^\d+$/.test(id))) || typeof o['fieldType'] !== 'string' || typeof o['subDomain'] !== 'string' || typeof o['target'] !== 'string') {
      return { ok: false, why: 'an array of objects that are not records (id, fieldType, subDomain, target)' };
    }
    records.push(toRecord(o, zone));
  }
  return { ok: true, records };
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
