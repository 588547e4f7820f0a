/**
 * external-dns v0.22's in-tree OVH provider, replayed call for call (REFERENCE.md §3;
 * provider/ovh/ovh.go with its cache on, the default): per loop GET /domain/zone, then per zone, when
 * it has the zone cached, a DNS SOA query (counted apart: not an API call) to the `server` of the
 * `GET …/soa` it cached, on port 53 (`dnsAt` says where a test reaches that server's port 53), whose
 * serial must equal the cached `serial`; otherwise (moved, no answer, nothing cached) GET soa + GET
 * record (ids) + one GET per record; an apply is one call per target (a PUT
 * reusing the record id for an update), all in parallel, then one refresh when all succeeded, which
 * also drops the cache. Each instance has its own rate limiter (--ovh-api-rate-limit). The calls go to
 * an OVH API over HTTP(S), signed as go-ovh signs them (the endpoint URL + the path): OVH's simulator
 * (`https://…/1.0`) or the OVH API dnsplane serves (`http://…/ovh/1.0`). The bench (bench/ovh-calls.ts)
 * and the tests drive the same replay.
 */
import { Resolver } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { RateLimiter } from '../../src/ovh/ratelimit.js';
import { signRequest } from '../../src/ovhwire/signature.js';

export interface ExtRecord {
  id: number;
  zone: string;
  subDomain: string;
  fieldType: string;
  target: string;
  ttl: number;
}

/** An endpoint external-dns is pointed at (--ovh-endpoint) and the three keys from its environment. */
export interface OvhTarget {
  /** The endpoint URL, e.g. https://127.0.0.1:8443/1.0 or http://127.0.0.1:8080/ovh/1.0. */
  endpoint: string;
  applicationKey: string;
  applicationSecret: string;
  consumerKey: string;
  /** A CA to trust for an https endpoint (the simulator's). */
  ca?: string;
}

/** Signed calls, as go-ovh makes them; its own keep-alive agent. */
export class OvhHttp {
  private readonly agent: http.Agent;
  private readonly url: URL;
  constructor(private readonly target: OvhTarget) {
    this.url = new URL(target.endpoint);
    this.agent =
      this.url.protocol === 'https:'
        ? new https.Agent({ keepAlive: true, ca: target.ca, maxSockets: 256 })
        : new http.Agent({ keepAlive: true, maxSockets: 256 });
  }

  call(method: string, path: string, body?: Record<string, unknown>): Promise<unknown> {
    const { applicationKey, applicationSecret, consumerKey, endpoint } = this.target;
    const payload = body === undefined ? '' : JSON.stringify(body);
    const timestamp = String(Math.round(Date.now() / 1000));
    const headers: Record<string, string | number> = {
      'Content-Type': 'application/json',
      'X-Ovh-Application': applicationKey,
      'X-Ovh-Consumer': consumerKey,
      'X-Ovh-Timestamp': timestamp,
      'X-Ovh-Signature': signRequest(applicationSecret, consumerKey, method, `${endpoint}${path}`, payload, timestamp),
    };
    if (payload) headers['Content-Length'] = Buffer.byteLength(payload);
    const request = this.url.protocol === 'https:' ? https.request : http.request;
    return new Promise((resolve, reject) => {
      const req = request({ host: this.url.hostname, port: this.url.port, path: `${this.url.pathname}${path}`, method, agent: this.agent, headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve(text ? (JSON.parse(text) as unknown) : null);
          else reject(new Error(`${method} ${path}: ${status} ${text}`));
        });
      });
      req.on('error', reject);
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** A record set as external-dns's plan hands it to the provider (a protobuf Endpoint fits). */
export interface ExtEndpoint {
  dnsName: string;
  recordType: string;
  targets: string[];
  ttl: number | bigint;
}

/** plan.Changes, as the provider receives them. */
export interface ExtChanges {
  create: ExtEndpoint[];
  updateOld: ExtEndpoint[];
  updateNew: ExtEndpoint[];
  delete: ExtEndpoint[];
}

/**
 * Where the replay reaches `server:53` (the served SOA's `server`, its trailing dot trimmed): an
 * `ip:port` a test listens on; undefined: unreachable (external-dns then reads the zone again).
 */
export type DnsAt = (server: string) => string | undefined;

/** A DnsAt from a table: each server name (or address) -> the ip:port that stands for its port 53. */
export function dnsAtOf(table: Record<string, string>): DnsAt {
  return (server) => table[server.toLowerCase()];
}

/** The SOA serial `server` answers for `zone` (one UDP question, as miekg/dns's client asks), or undefined when it cannot be had. */
async function soaSerialAt(dnsAt: DnsAt, server: string, zone: string): Promise<number | undefined> {
  const at = dnsAt(server.replace(/\.$/, ''));
  if (at === undefined) return undefined;
  const resolver = new Resolver({ timeout: 2000, tries: 1 });
  resolver.setServers([at]);
  try {
    return (await resolver.resolveSoa(zone)).serial;
  } catch {
    return undefined;
  }
}

/** One external-dns instance with the in-tree OVH provider (cache on, as by default). */
export class ExternalDnsReplay {
  private cache: { serial: number; server: string; records: ExtRecord[] } | undefined;
  private lastRunRecords: ExtRecord[] = [];
  /** The records its last Records() saw (what its plan is made from). */
  get seen(): readonly ExtRecord[] {
    return this.lastRunRecords;
  }
  dnsQueries = 0;
  apiCalls = 0;

  constructor(
    private readonly http: OvhHttp,
    private readonly zone: string,
    private readonly dnsAt: DnsAt,
    public limiter: RateLimiter,
  ) {}

  /** p.apiRateLimiter.Take() (when external-dns takes one), then the call. */
  private async call(method: string, path: string, body?: Record<string, unknown>, take = true): Promise<unknown> {
    if (take) await this.limiter.acquire();
    try {
      this.apiCalls++;
      return await this.http.call(method, path, body);
    } finally {
      if (take) this.limiter.release();
    }
  }

  /** Records(): zones(), then records() of each zone the domain filter keeps. */
  async records(): Promise<void> {
    const zones = (await this.call('GET', '/domain/zone')) as string[];
    if (!zones.includes(this.zone)) throw new Error(`replay: zone ${this.zone} not listed`);
    if (this.cache) {
      this.dnsQueries++;
      if ((await soaSerialAt(this.dnsAt, this.cache.server, this.zone)) === this.cache.serial) {
        this.lastRunRecords = this.cache.records;
        return;
      }
      this.cache = undefined;
    }
    const soa = (await this.call('GET', `/domain/zone/${this.zone}/soa`)) as { serial: number; server: string };
    const ids = (await this.call('GET', `/domain/zone/${this.zone}/record`, undefined, false)) as number[]; // no Take() in v0.22
    const records = await Promise.all(ids.map((id) => this.call('GET', `/domain/zone/${this.zone}/record/${id}`) as Promise<ExtRecord>));
    this.cache = { serial: soa.serial, server: soa.server, records };
    this.lastRunRecords = records;
  }

  /** ApplyChanges(): the provider's creates, deletes and updates, all in parallel, then one refresh. */
  async apply(changes: ExtChanges): Promise<void> {
    type Op = { method: 'POST' | 'PUT' | 'DELETE'; path: string; body?: Record<string, unknown> };
    const ops: Op[] = [];
    const record = `/domain/zone/${this.zone}/record`;
    const sub = (e: ExtEndpoint) => e.dnsName.slice(0, -(this.zone.length + 1));
    // biome-ignore lint/complexity/useMathMinMax: as external-dns's `if ttl > 0`, a TTL that is not a number is 0 (Math.max would give NaN).
    const ttl = (e: ExtEndpoint) => (Number(e.ttl) > 0 ? Number(e.ttl) : 0);
    for (const e of changes.create) {
      for (const target of e.targets) ops.push({ method: 'POST', path: record, body: { fieldType: e.recordType, subDomain: sub(e), ttl: ttl(e), target } });
    }
    // Deletes take the first matching record not taken yet; the records left are the updates' pool.
    let existing = [...this.lastRunRecords];
    for (const e of changes.delete) {
      for (const target of e.targets) {
        const i = existing.findIndex((r) => r.subDomain === sub(e) && r.fieldType === e.recordType && r.target === target);
        if (i < 0) throw new Error('replay: ErrRecordToMutateNotFound');
        ops.push({ method: 'DELETE', path: `${record}/${existing[i]!.id}` });
        existing = existing.filter((_, j) => j !== i);
      }
    }
    changes.updateOld.forEach((old, u) => {
      const next = changes.updateNew[u]!;
      let oldRecords = existing.filter((r) => r.fieldType === old.recordType && r.subDomain === sub(old));
      const toInsert: string[] = [];
      for (const target of next.targets) {
        const i = oldRecords.findIndex((r) => r.target === target);
        if (i >= 0) oldRecords = oldRecords.filter((_, j) => j !== i);
        else toInsert.push(target);
      }
      while (toInsert.length > 0 && oldRecords.length > 0) {
        const r = oldRecords.shift()!;
        ops.push({ method: 'PUT', path: `${record}/${r.id}`, body: { subDomain: r.subDomain, ttl: ttl(next), target: toInsert.shift()! } });
      }
      for (const target of toInsert)
        ops.push({ method: 'POST', path: record, body: { fieldType: next.recordType, subDomain: sub(next), ttl: ttl(next), target } });
      for (const r of oldRecords) ops.push({ method: 'DELETE', path: `${record}/${r.id}` });
    });
    await Promise.all(ops.map((op) => this.call(op.method, op.path, op.body)));
    this.cache = undefined; // refresh() invalidates the zone's cache first
    await this.call('POST', `/domain/zone/${this.zone}/refresh`);
  }
}
