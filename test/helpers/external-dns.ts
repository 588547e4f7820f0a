/**
 * external-dns v0.22 as dnsplane's webhook sees it: a TypeScript port of its webhook provider client
 * (provider/webhook/webhook.go: the requests, headers, bodies and status handling, byte for byte where
 * it matters) and of the part of plan.Calculate (plan/plan.go) that decides what it sends, for the sync
 * policy with the noop registry (no owner id). Written from external-dns's source; tests drive dnsplane
 * with it exactly as a cluster would.
 *
 * Left out of the plan port: the CNAME-versus-other-types resolution of candidates (these tests never
 * desire both at one name) and owner-id filtering (the noop registry has no owner id).
 */
import http from 'node:http';
import { domainToASCII, domainToUnicode } from 'node:url';

export const MEDIA_TYPE = 'application/external.dns.webhook+json;version=1';

/** endpoint.Endpoint; absent fields are Go's zero values. */
export interface GoEndpoint {
  dnsName?: string;
  targets?: string[];
  recordType?: string;
  setIdentifier?: string;
  recordTTL?: number;
  labels?: Record<string, string>;
  providerSpecific?: Array<{ name?: string; value?: string }>;
}

/** plan.Changes */
export interface GoChanges {
  create?: GoEndpoint[];
  updateOld?: GoEndpoint[];
  updateNew?: GoEndpoint[];
  delete?: GoEndpoint[];
}

export interface DomainFilter {
  include: string[];
  exclude: string[];
  regexInclude: string;
  regexExclude: string;
}

/** One HTTP exchange, as sent and as answered. */
export interface Exchange {
  method: string;
  path: string;
  requestHeaders: Record<string, string>;
  requestBody: string;
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** What external-dns does with a failure: a soft error is retried on the next loop; any other makes it exit. */
export class ExternalDnsError extends Error {
  constructor(
    message: string,
    readonly soft: boolean,
    readonly status?: number,
  ) {
    super(message);
  }
}

/**
 * The soft error a loop ends with when dnsplane refused some of its changes (and applied the rest):
 * `failed to apply changes with code 500`, which external-dns logs and retries next loop. Throws when
 * the run ended otherwise.
 */
export async function refusedSoftly(run: Promise<unknown>): Promise<ExternalDnsError> {
  const err = await run.then(
    () => new Error('the loop succeeded; expected a soft error (500) naming the refused changes'),
    (e: unknown) => e,
  );
  if (err instanceof ExternalDnsError && err.soft && err.status === 500 && err.message === 'failed to apply changes with code 500') return err;
  throw err;
}

/** Go's json.Marshal of an endpoint: struct order, omitempty, HTML-safe escaping, Encode's newline. */
function goMarshal(v: unknown): string {
  return JSON.stringify(v).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export function goEndpoint(e: GoEndpoint): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  if (e.dnsName) o.dnsName = e.dnsName;
  if (e.targets?.length) o.targets = e.targets;
  if (e.recordType) o.recordType = e.recordType;
  if (e.setIdentifier) o.setIdentifier = e.setIdentifier;
  if (e.recordTTL) o.recordTTL = e.recordTTL;
  // Go marshals a map with its keys sorted.
  if (e.labels && Object.keys(e.labels).length) o.labels = Object.fromEntries(Object.entries(e.labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  if (e.providerSpecific?.length) o.providerSpecific = e.providerSpecific;
  return o;
}

export function encodeChanges(c: GoChanges): string {
  const o: Record<string, unknown> = {};
  for (const k of ['create', 'updateOld', 'updateNew', 'delete'] as const) if (c[k]?.length) o[k] = c[k]!.map(goEndpoint);
  return `${goMarshal(o)}\n`;
}

/** Go's case-insensitive decoding of one object into the endpoint's fields (last match wins). */
function pick(o: Record<string, unknown>, name: string): unknown {
  let v: unknown;
  for (const [k, x] of Object.entries(o)) if (k.toLowerCase() === name.toLowerCase()) v = x;
  return v;
}

export function decodeEndpoint(o: Record<string, unknown>): GoEndpoint {
  const e: GoEndpoint = {};
  const dnsName = pick(o, 'dnsName');
  if (typeof dnsName === 'string') e.dnsName = dnsName;
  const targets = pick(o, 'targets');
  if (Array.isArray(targets)) e.targets = targets as string[];
  const recordType = pick(o, 'recordType');
  if (typeof recordType === 'string') e.recordType = recordType;
  const setIdentifier = pick(o, 'setIdentifier');
  if (typeof setIdentifier === 'string') e.setIdentifier = setIdentifier;
  const ttl = pick(o, 'recordTTL');
  if (typeof ttl === 'number') e.recordTTL = ttl;
  const labels = pick(o, 'labels');
  if (labels && typeof labels === 'object') e.labels = labels as Record<string, string>;
  const ps = pick(o, 'providerSpecific');
  if (Array.isArray(ps)) e.providerSpecific = ps as GoEndpoint['providerSpecific'];
  return e;
}

function decodeEndpoints(body: string): GoEndpoint[] {
  const v = JSON.parse(body) as unknown;
  if (v === null) return [];
  if (!Array.isArray(v)) throw new ExternalDnsError('json: cannot unmarshal into []*endpoint.Endpoint', false);
  return v.map((x) => decodeEndpoint(x as Record<string, unknown>));
}

/** endpoint.DomainFilter's UnmarshalJSON, including its refusal of both forms at once. */
function decodeDomainFilter(body: string): DomainFilter {
  const o = JSON.parse(body) as Record<string, unknown>;
  const f: DomainFilter = {
    include: ((pick(o, 'include') as string[] | undefined) ?? []).map((s) => s.trim().replace(/\.$/, '')).filter(Boolean),
    exclude: ((pick(o, 'exclude') as string[] | undefined) ?? []).map((s) => s.trim().replace(/\.$/, '')).filter(Boolean),
    regexInclude: (pick(o, 'regexInclude') as string | undefined) ?? '',
    regexExclude: (pick(o, 'regexExclude') as string | undefined) ?? '',
  };
  if ((f.regexInclude || f.regexExclude) && (f.include.length || f.exclude.length)) {
    throw new ExternalDnsError('failed to unmarshal response body of DomainFilter: cannot have both domain list and regex', false);
  }
  return f;
}

/** DomainFilter.Match for the list form (matchFilter). */
export function domainFilterMatch(f: DomainFilter, domain: string): boolean {
  // normalizeDomain: IDNA ToUnicode with the lookup mapping, which lowercases.
  const d = domainToUnicode(domain.trim().replace(/\.$/, '')) || domain.trim().replace(/\.$/, '').toLowerCase();
  const match = (filters: string[], empty: boolean) => {
    if (filters.length === 0) return empty;
    return filters.some((filter) => (filter.startsWith('.') && d.endsWith(filter)) || d === filter || d.endsWith(`.${filter}`));
  };
  return match(f.include, true) && !match(f.exclude, false);
}

/** The webhook provider of external-dns v0.22, pointed at `url` (credentials in the URL, as users configure it). */
export class ExternalDns {
  readonly exchanges: Exchange[] = [];
  domainFilter: DomainFilter = { include: [], exclude: [], regexInclude: '', regexExclude: '' };
  private readonly base: URL;
  private readonly authorization?: string;

  constructor(url: string) {
    const u = new URL(url);
    // Go's http.Client turns the URL's user info into an Authorization: Basic header.
    if (u.username || u.password) {
      this.authorization = `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`;
    }
    u.username = '';
    u.password = '';
    this.base = u;
  }

  /** http.Client.Do: one request on a fresh connection, the headers Go's client sends. */
  async do(method: string, path: string, headers: Record<string, string>, body = ''): Promise<Exchange> {
    const url = new URL(path, this.base);
    const requestHeaders: Record<string, string> = {
      host: url.host,
      'user-agent': 'Go-http-client/1.1',
      ...(body !== '' || method === 'POST' ? { 'content-length': String(Buffer.byteLength(body)) } : {}),
      ...headers,
      ...(this.authorization ? { authorization: this.authorization } : {}),
      'accept-encoding': 'gzip',
    };
    return new Promise<Exchange>((resolve, reject) => {
      const req = http.request(url, { method, headers: requestHeaders, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const ex = {
            method,
            path: url.pathname,
            requestHeaders,
            requestBody: body,
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          };
          this.exchanges.push(ex);
          resolve(ex);
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  /** newProvider: GET the URL with Accept, 5 tries on 5xx, a 3xx/4xx is permanent; Content-Type compared exactly. */
  async negotiate(): Promise<DomainFilter> {
    let last: Exchange | undefined;
    for (let attempt = 1; attempt <= 5; attempt++) {
      last = await this.do('GET', this.base.pathname, { accept: MEDIA_TYPE });
      if (last.status >= 500) {
        await new Promise((r) => setTimeout(r, 10));
        continue;
      }
      if (last.status >= 300) throw new ExternalDnsError(`failed to connect to webhook: unexpected status code ${last.status}`, false, last.status);
      const ct = last.headers['content-type'] ?? '';
      if (ct !== MEDIA_TYPE) throw new ExternalDnsError(`wrong content type returned from server: ${ct}`, false);
      this.domainFilter = decodeDomainFilter(last.body);
      return this.domainFilter;
    }
    throw new ExternalDnsError(`failed to connect to webhook: server error: status code ${last?.status}`, false, last?.status);
  }

  private fail(what: string, status: number): never {
    // isRetryableError: 500-510 are soft errors, anything else is fatal.
    throw new ExternalDnsError(`failed to ${what} with code ${status}`, status >= 500 && status <= 510, status);
  }

  async records(): Promise<GoEndpoint[]> {
    const ex = await this.do('GET', joinPath(this.base.pathname, 'records'), { accept: MEDIA_TYPE });
    if (ex.status !== 200) this.fail('get records', ex.status);
    return decodeEndpoints(ex.body);
  }

  async adjustEndpoints(endpoints: GoEndpoint[]): Promise<GoEndpoint[]> {
    const ex = await this.do(
      'POST',
      joinPath(this.base.pathname, 'adjustendpoints'),
      { 'content-type': MEDIA_TYPE, accept: MEDIA_TYPE },
      `${goMarshal(endpoints.map(goEndpoint))}\n`,
    );
    if (ex.status !== 200) this.fail('AdjustEndpoints', ex.status);
    return decodeEndpoints(ex.body);
  }

  async applyChanges(changes: GoChanges): Promise<void> {
    const ex = await this.do('POST', joinPath(this.base.pathname, 'records'), { 'content-type': MEDIA_TYPE }, encodeChanges(changes));
    if (ex.status !== 204) this.fail('apply changes', ex.status);
  }

  /**
   * One controller loop (controller.RunOnce with the noop registry and the sync policy): records,
   * adjust the desired endpoints, plan, apply when the plan has changes. Returns the changes sent.
   */
  async runOnce(desired: GoEndpoint[], opts: { managedRecordTypes?: string[] } = {}): Promise<GoChanges> {
    const current = await this.records();
    const adjusted = await this.adjustEndpoints(desired);
    const changes = calculate(current, adjusted, { domainFilter: this.domainFilter, managedRecordTypes: opts.managedRecordTypes });
    if (hasChanges(changes)) await this.applyChanges(changes);
    return changes;
  }
}

function joinPath(base: string, p: string): string {
  return `${base.replace(/\/+$/, '')}/${p}`;
}

/** idna.NormalizeDNSName */
export function normalizeDNSName(name: string): string {
  const ascii = domainToASCII(name.trim().replace(/\.$/, '')) || name.trim().toLowerCase();
  return `${ascii.replace(/\.$/, '')}.`;
}

function targetsSame(a: string[] = [], b: string[] = []): boolean {
  if (a.length !== b.length) return false;
  const x = [...a].sort();
  const y = [...b].sort();
  return x.every((t, i) => t.toLowerCase() === y[i]!.toLowerCase());
}

function providerSpecificChanged(desired: GoEndpoint, current: GoEndpoint): boolean {
  const want = new Map((desired.providerSpecific ?? []).map((p) => [p.name ?? '', p.value ?? '']));
  for (const c of current.providerSpecific ?? []) {
    if (!want.has(c.name ?? '')) return true;
    if (want.get(c.name ?? '') !== (c.value ?? '')) return true;
    want.delete(c.name ?? '');
  }
  return want.size > 0;
}

export function hasChanges(c: GoChanges): boolean {
  return Boolean(c.create?.length || c.delete?.length || c.updateNew?.length || c.updateOld?.length);
}

/** plan.Calculate for the sync policy, no owner id (the noop registry). */
export function calculate(
  current: GoEndpoint[],
  desired: GoEndpoint[],
  opts: { domainFilter?: DomainFilter; managedRecordTypes?: string[] } = {},
): Required<GoChanges> {
  const managed = opts.managedRecordTypes ?? ['A', 'AAAA', 'CNAME'];
  const keep = (e: GoEndpoint) => (!opts.domainFilter || domainFilterMatch(opts.domainFilter, e.dnsName ?? '')) && managed.includes(e.recordType ?? '');
  type Row = { current: GoEndpoint[]; candidates: GoEndpoint[]; records: Map<string, { current?: GoEndpoint; candidates: GoEndpoint[] }> };
  const rows = new Map<string, Row>();
  const rowOf = (e: GoEndpoint) => {
    const key = `${normalizeDNSName(e.dnsName ?? '')}|${e.setIdentifier ?? ''}`;
    let row = rows.get(key);
    if (!row) rows.set(key, (row = { current: [], candidates: [], records: new Map() }));
    const type = e.recordType ?? '';
    if (!row.records.has(type)) row.records.set(type, { candidates: [] });
    return { row, rec: row.records.get(type)! };
  };
  for (const e of current.filter(keep)) {
    const { row, rec } = rowOf(e);
    row.current.push(e);
    rec.current = e;
  }
  for (const e of desired.filter(keep)) {
    const { row, rec } = rowOf(e);
    row.candidates.push(e);
    rec.candidates.push(e);
  }
  const changes: Required<GoChanges> = { create: [], updateOld: [], updateNew: [], delete: [] };
  for (const row of rows.values()) {
    if (row.current.length === 0) {
      for (const rec of row.records.values()) if (rec.candidates.length) changes.create.push(rec.candidates[0]!);
    } else if (row.candidates.length === 0) {
      changes.delete.push(...row.current);
    } else {
      for (const rec of row.records.values()) {
        if (rec.current && rec.candidates.length === 0) changes.delete.push(rec.current);
        else if (!rec.current && rec.candidates.length) changes.create.push(rec.candidates[0]!);
        else if (rec.current) {
          const update = rec.candidates[0]!;
          const ttlChanged = Boolean(update.recordTTL) && update.recordTTL !== (rec.current.recordTTL ?? 0);
          if (ttlChanged || !targetsSame(update.targets, rec.current.targets) || providerSpecificChanged(update, rec.current)) {
            // inheritOwner
            const labels = { ...(update.labels ?? {}), owner: rec.current.labels?.owner ?? '' };
            changes.updateNew.push({ ...update, labels });
            changes.updateOld.push(rec.current);
          }
        }
      }
    }
  }
  return changes;
}
