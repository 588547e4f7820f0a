/**
 * The typed OVH DNS client, OvhApi: the DNS calls dnsplane makes, over @ovhcloud/node-ovh, with what
 * node-ovh lacks on top — a shared rate limit, a bound on calls in flight, retries that are safe
 * (client/transport.ts), OVH's known bugs worked around (POST answering id 0 and a timed-out POST that
 * did happen: client/create-record.ts; 404 on DELETE, here), record lists read a page of records per
 * call where OVH allows it (client/expanded-lists.ts), and errors that keep the HTTP status, OVH's
 * message and the X-Ovh-Queryid (node-ovh drops the last two: client/diagnostics.ts reads them from
 * Node's http diagnostics channel). A call's scope (client/scope.ts) rides with the client that makes
 * it: `scoped()` hands core a client whose calls take a flow's share of the rate and whose writes
 * pass a guard (the zone fence); client/ca-trust.ts makes the process trust a private endpoint's CA.
 */
import { OvhError } from './errors.js';
import type { RateLimiter } from './ratelimit.js';
import type { OvhRecord, OvhRecordBody } from './types.js';
import { asArray, asObject, filterParams, toRecord, type RecordFilter } from './client/answers.js';
import { trustExtraCas } from './client/ca-trust.js';
import { createRecordOnce } from './client/create-record.js';
import { ExpandedLists, type ExpandedListsMode, type ExpandedListsState, type RecordListing } from './client/expanded-lists.js';
import { OvhTransport, type OvhCallInfo, type RetryPolicy, type TransportOptions } from './client/transport.js';
import { NO_SCOPE, within, type OvhScope } from './client/scope.js';

export interface OvhApiOptions extends TransportOptions {
  /** Extra trusted CAs (PEM), added to the system ones for this process's https agent. */
  extraCaPems?: string[];
  /** DNSPLANE_OVH_EXPANDED_LISTS: read records in OVH's expanded list mode (see listRecordsOrIds). Default 'auto'. */
  expandedLists?: ExpandedListsMode;
  /** Records asked per page in expanded mode (X-Pagination-Size). Default 5000. */
  expandedPageSize?: number;
  /** Notices logged once per process (what the expanded list mode turned out to be); never given secrets. */
  info?: (msg: string, fields?: Record<string, unknown>) => void;
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

export class OvhApi {
  private readonly transport: OvhTransport;
  private readonly expanded: ExpandedLists;
  /** What every call of this client is made in (set by scoped() on its views; the root's is NO_SCOPE). */
  protected readonly scope: OvhScope = NO_SCOPE;

  constructor(private readonly opts: OvhApiOptions) {
    if (opts.extraCaPems?.length) trustExtraCas(opts.extraCaPems);
    this.transport = new OvhTransport(opts);
    this.expanded = new ExpandedLists(this.transport, { mode: opts.expandedLists, pageSize: opts.expandedPageSize, warn: opts.warn, info: opts.info });
  }

  get retry(): RetryPolicy {
    return this.transport.retry;
  }

  get timeoutMs(): number {
    return this.transport.timeoutMs;
  }

  get expandedListsMode(): ExpandedListsMode {
    return this.expanded.mode;
  }

  get expandedPageSize(): number {
    return this.expanded.pageSize;
  }

  /** Whether record lists are read in expanded mode: not tried yet, yes, or no (off, or OVH did not answer it). */
  get expandedLists(): ExpandedListsState {
    return this.expanded.state;
  }

  /**
   * Another listener of every call, beside `onCall` (which feeds the metrics): e.g. a test that needs
   * the grant times of the calls a running server makes. Returns the function that removes it.
   */
  observeCalls(fn: (info: OvhCallInfo) => void): () => void {
    return this.transport.observeCalls(fn);
  }

  /**
   * This client, its calls made in `scope` within this one's (client/scope.ts: the flow's fields
   * merged, the guard replaced when given): the same transport, limiter and expanded-list state, so a
   * view costs one object. Core scopes a client per use case (a zone's lock, a group's member) and
   * hands it down; nothing is kept in async context.
   */
  scoped(scope: OvhScope): OvhApi {
    const view = Object.create(this) as OvhApi;
    (view as unknown as { scope: OvhScope }).scope = within(this.scope, scope);
    return view;
  }

  /** The process-wide limiter this client's calls go through (shared per application key). */
  get rateLimiter(): RateLimiter {
    return this.transport.limiter;
  }

  get endpointLabel(): string {
    return this.opts.endpoint.label;
  }

  /** Equal jitter: a random time in [d/2, d], d = min(maxDelayMs, baseDelayMs * 2^attempt). */
  backoff(attempt: number): number {
    return this.transport.backoff(attempt);
  }

  // --- DNS calls ---

  async listZones(): Promise<string[]> {
    const zones = await this.transport.call(this.scope, 'GET', '/domain/zone', undefined, true);
    return asArray(zones, 'GET /domain/zone').map((z) => String(z).toLowerCase());
  }

  async getZoneInfo(zone: string): Promise<OvhZoneInfo> {
    const z = asObject(await this.transport.call(this.scope, 'GET', `/domain/zone/${zone}`, undefined, true), 'zone');
    return {
      name: String(z['name']),
      nameServers: Array.isArray(z['nameServers']) ? z['nameServers'].map(String) : [],
      lastUpdate: typeof z['lastUpdate'] === 'string' ? z['lastUpdate'] : undefined,
    };
  }

  async getSoa(zone: string): Promise<OvhSoa> {
    const s = asObject(await this.transport.call(this.scope, 'GET', `/domain/zone/${zone}/soa`, undefined, true), 'soa');
    const serial = Number(s['serial']);
    if (!Number.isInteger(serial) || serial < 0)
      throw new OvhError('GET', `/domain/zone/${zone}/soa`, 200, 'unknown', `the SOA serial is not a number: ${JSON.stringify(s['serial'])}`);
    return { serial, ttl: Number(s['ttl']), nxDomainTtl: Number(s['nxDomainTtl']) };
  }

  /** The zone file OVH generates from the zone's records (BIND text, no record ids). One call. */
  async getExport(zone: string): Promise<string> {
    const text = await this.transport.call(this.scope, 'GET', `/domain/zone/${zone}/export`, undefined, true);
    if (typeof text !== 'string') throw new OvhError('GET', `/domain/zone/${zone}/export`, 200, 'unknown', `expected a string, got ${typeof text}`);
    return text;
  }

  /** Record ids, optionally filtered (OVH matches subDomain case-insensitively). */
  async listRecordIds(zone: string, filter: RecordFilter = {}): Promise<string[]> {
    const ids = await this.transport.call(this.scope, 'GET', `/domain/zone/${zone}/record`, filterParams(filter), true);
    return asArray(ids, 'record ids').map((id) => String(id));
  }

  /**
   * The zone's records matching the filter, in as few calls as OVH allows: pages of full records in
   * OVH's expanded list mode, or the ids to GET one by one when the mode is off or OVH does not
   * answer it (client/expanded-lists.ts says how).
   */
  async listRecordsOrIds(zone: string, filter: RecordFilter = {}): Promise<RecordListing> {
    return this.expanded.list(this.scope, zone, filter, () => this.listRecordIds(zone, filter));
  }

  /** One record. OVH sometimes answers 404 right after a creation: `retryNotFound` retries that. */
  async getRecord(zone: string, id: string, retryNotFound = 0): Promise<OvhRecord> {
    for (let i = 0; ; i++) {
      try {
        return toRecord(await this.transport.call(this.scope, 'GET', `/domain/zone/${zone}/record/${id}`, undefined, true), zone);
      } catch (e) {
        if (e instanceof OvhError && e.kind === 'not_found' && i < retryNotFound) {
          await this.transport.sleep(this.transport.backoff(i));
          continue;
        }
        throw e;
      }
    }
  }

  /**
   * Creates one record, never two: a creation whose answer is lost, or that answers id 0, is looked up
   * (by name, type and target, among ids not in `knownIds`) before it is sent again
   * (client/create-record.ts).
   */
  async createRecord(zone: string, body: OvhRecordBody, knownIds: ReadonlySet<string>): Promise<OvhRecord> {
    return createRecordOnce(this.transport, this, this.opts.warn, zone, body, knownIds, this.scope);
  }

  /** PUT is safe to repeat: it sets the same target and TTL again. */
  async updateRecord(zone: string, id: string, body: { subDomain?: string; target?: string; ttl?: number }): Promise<void> {
    await this.transport.call(this.scope, 'PUT', `/domain/zone/${zone}/record/${id}`, { ...body }, true);
  }

  /** A 404 means the record is already gone: that counts as done (so does a repeat after a lost answer). */
  async deleteRecord(zone: string, id: string): Promise<void> {
    try {
      await this.transport.call(this.scope, 'DELETE', `/domain/zone/${zone}/record/${id}`, undefined, true);
    } catch (e) {
      if (e instanceof OvhError && e.kind === 'not_found') return;
      throw e;
    }
  }

  /** Publishes the zone's draft. Safe to repeat (publishing twice publishes the same thing). */
  async refresh(zone: string): Promise<void> {
    await this.transport.call(this.scope, 'POST', `/domain/zone/${zone}/refresh`, undefined, true);
  }
}
