/**
 * OvhSimulator: the HTTPS API (auth, faults, latency, call log, persistence) plus the DNS server.
 * See index.ts for what is modelled.
 */
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { ApiRouter, routeOf } from './api.js';
import type { ApiAnswer } from './api.js';
import { generateCertificate } from './cert.js';
import { DnsResolver, DnsServer } from './dns-server.js';
import type { DnsSource } from './dns-server.js';
import { SimApiError, defaultFaultBody, reasonPhrase, routeNotFound } from './errors.js';
import { FaultSet } from './faults.js';
import type { FaultEffect, SimFaults } from './faults.js';
import { normalizeRecord } from './records.js';
import { checkSignature } from './signature.js';
import { SimState, readStateFile, writeStateFile } from './state.js';
import type { ZoneState } from './state.js';
import type { SimBehavior, SimCall, SimCredentials, SimOptions, SimRecord, SimRecordInit, SimRecordPatch } from './types.js';

/** Largest request body accepted (OVH's real limit is not known; record bodies are tiny). */
const MAX_BODY_BYTES = 1024 * 1024;

export const DEFAULT_BEHAVIOR: SimBehavior = {
  timestampWindowSeconds: 300,
  quoteTxtInAnswers: true,
  refreshStatus: 204,
  defaultTtl: 3600,
  nameServers: ['dns1.sim.test', 'ns1.sim.test'],
  apexNsRecords: true,
  emptySubDomainFilter: 'ignore',
  rejectUnknownProperties: true,
  rateLimit: null,
  firstRecordId: null,
  expandedRecordLists: 'ignored',
  expandedListMaxPageSize: null,
  expandedListCacheSeconds: 60,
  queryIdPrefix: 'EU.ext-1',
  soa: { email: 'tech@sim.test', refresh: 86400, retry: 3600, expire: 3600000, nxDomainTtl: 300, ttl: 3600 },
};

function resolveBehavior(overrides: Partial<SimBehavior> | undefined): SimBehavior {
  return { ...DEFAULT_BEHAVIOR, ...overrides, soa: { ...DEFAULT_BEHAVIOR.soa, ...overrides?.soa } };
}

function randomCredentials(): SimCredentials {
  // OVH's formats: 16-character application key, 32-character secret and consumer key.
  return {
    applicationKey: randomBytes(8).toString('hex'),
    applicationSecret: randomBytes(16).toString('hex'),
    consumerKey: randomBytes(16).toString('hex'),
  };
}

const HTML_BODIES: Record<number, string> = {
  408: "<html><body><h1>408 Request Time-out</h1>\nYour browser didn't send a complete request in time.\n</body></html>\n",
};

function htmlBody(status: number): string {
  return HTML_BODIES[status] ?? `<html><body><h1>${status} ${reasonPhrase(status)}</h1>\n</body></html>\n`;
}

/** What is sent back for one call. */
type Outcome =
  | { kind: 'json'; status: number; body?: unknown; headers?: Record<string, string> }
  | { kind: 'html'; status: number; body: string }
  | { kind: 'drop' }
  | { kind: 'hang' };

export class OvhSimulator {
  readonly apiUrl: string;
  readonly apiPort: number;
  readonly dnsPort: number;
  readonly faults: SimFaults;
  private readonly faultSet: FaultSet;
  private readonly log: SimCall[] = [];
  private seq = 0;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly hanging = new Set<ServerResponse>();
  private readonly router: ApiRouter;
  private readonly rateWindows = new Map<string, number[]>();
  private stopped = false;

  private constructor(
    readonly host: string,
    private readonly server: https.Server,
    private readonly dns: DnsServer,
    readonly caPem: string,
    readonly credentials: SimCredentials,
    private readonly state: SimState,
    private readonly behavior: SimBehavior,
    private readonly opts: SimOptions,
    private readonly persistCredentials: boolean,
  ) {
    const address = server.address();
    this.apiPort = typeof address === 'object' && address ? address.port : 0;
    this.dnsPort = dns.port;
    this.apiUrl = `https://${host.includes(':') ? `[${host}]` : host}:${this.apiPort}`;
    this.faultSet = new FaultSet();
    this.faults = this.faultSet;
    this.router = new ApiRouter(state, behavior, () => this.serverTime());
  }

  static async start(opts: SimOptions = {}): Promise<OvhSimulator> {
    const host = opts.host ?? '127.0.0.1';
    const behavior = resolveBehavior(opts.behavior);
    const persisted = opts.stateFile ? readStateFile(opts.stateFile) : undefined;
    const credentials = opts.credentials ?? persisted?.credentials ?? randomCredentials();
    const firstId = behavior.firstRecordId ?? 5_000_000_000 + Math.floor(Math.random() * 1_000_000);
    const state = new SimState(firstId);
    if (persisted) state.load(persisted);
    for (const [zone, records] of Object.entries(opts.zones ?? {})) {
      if (!state.zone(zone)) state.addZone(zone, records, behavior.apexNsRecords ? behavior.nameServers : []);
    }
    const tls = opts.tls ?? (await generateCertificate(host));

    const server = https.createServer({ key: tls.key, cert: tls.cert });
    // Longer than any client's idle keep-alive, so that the server never closes a socket a client is reusing.
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.apiPort ?? 0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });

    const source: DnsSource = {
      zoneNames: () => state.zoneNames(),
      zone: (name) => state.zone(name),
      defaultTtl: behavior.defaultTtl,
      nameServers: behavior.nameServers,
      soa: behavior.soa,
    };
    let dns: DnsServer;
    try {
      dns = await DnsServer.start(host, opts.dnsPort ?? 0, new DnsResolver(source), (q) => opts.log?.('ovhsim dns query', q));
    } catch (err) {
      server.close();
      throw err;
    }
    const sim = new OvhSimulator(host, server, dns, tls.cert, credentials, state, behavior, opts, opts.credentials === undefined);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => sim.onRequest(req, res));
    server.on('tlsClientError', () => {
      /* a client that does not trust the certificate; nothing to answer */
    });
    sim.persist();
    opts.log?.('ovhsim started', { apiUrl: sim.apiUrl, dnsPort: sim.dnsPort, applicationKey: credentials.applicationKey });
    return sim;
  }

  // --- call log ---

  /** Every call received, in order (auth/time and rejected ones included). Copies. */
  calls(): SimCall[] {
    return this.log.map((c) => ({ ...c, query: { ...c.query }, headers: { ...c.headers } }));
  }

  clearCalls(): void {
    this.log.length = 0;
  }

  /** Calls whose method is not GET. */
  writes(): SimCall[] {
    return this.calls().filter((c) => c.method !== 'GET');
  }

  /**
   * Changes assumed facts while running (e.g. whether expanded record lists are honoured), as if OVH
   * changed its behaviour between two calls. `soa` cannot be changed this way.
   */
  setBehavior(overrides: Partial<Omit<SimBehavior, 'soa'>>): void {
    Object.assign(this.behavior, overrides);
    this.router.clearListCache();
  }

  // --- direct state (as a person in the OVH control panel; no call logged) ---

  zones(): string[] {
    return this.state.zoneNames();
  }

  /** Adds a zone; its records are both draft and published (plus apex NS records, see SimBehavior.apexNsRecords). */
  addZone(name: string, records: SimRecordInit[] = []): void {
    this.state.addZone(name, records, this.behavior.apexNsRecords ? this.behavior.nameServers : []);
    this.persist();
  }

  removeZone(name: string): void {
    if (!this.state.removeZone(name)) throw new Error(`unknown zone ${name}`);
    this.persist();
  }

  draftRecords(zone: string): SimRecord[] {
    const z = this.mustZone(zone);
    return this.state.draftList(z).map((r) => SimState.toSimRecord(z.name, r));
  }

  publishedRecords(zone: string): SimRecord[] {
    const z = this.mustZone(zone);
    return z.published.map((r) => SimState.toSimRecord(z.name, r));
  }

  /** Adds a record to the draft (validated as the API validates a POST). */
  addRecord(zone: string, record: SimRecordInit): SimRecord {
    const z = this.mustZone(zone);
    const rec = this.state.createRecord(z, normalizeRecord(record, z.name));
    this.persist();
    return SimState.toSimRecord(z.name, rec);
  }

  /** Changes a draft record (validated as the API validates a PUT). */
  updateRecord(zone: string, id: string | number, patch: SimRecordPatch): SimRecord {
    const z = this.mustZone(zone);
    const rec = z.draft.get(Number(id));
    if (!rec) throw new Error(`unknown record ${id} in zone ${z.name}`);
    this.state.updateRecord(z, rec, patch);
    this.persist();
    return SimState.toSimRecord(z.name, rec);
  }

  deleteRecord(zone: string, id: string | number): void {
    const z = this.mustZone(zone);
    if (!this.state.deleteRecord(z, Number(id))) throw new Error(`unknown record ${id} in zone ${z.name}`);
    this.persist();
  }

  /** What POST /refresh does: publish the draft, bump the serial. */
  publish(zone: string): void {
    this.state.publish(this.mustZone(zone));
    this.persist();
  }

  /** Serial of the published zone. */
  soaSerial(zone: string): number {
    return this.mustZone(zone).serial;
  }

  /** True when the draft equals the published zone (GET …/status isDeployed). */
  isDeployed(zone: string): boolean {
    return this.state.isDeployed(this.mustZone(zone));
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const res of this.hanging) res.destroy();
    this.hanging.clear();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await Promise.all([closed, this.dns.stop()]);
  }

  // --- internals ---

  private mustZone(zone: string): ZoneState {
    const z = this.state.zone(zone);
    if (!z) throw new Error(`unknown zone ${zone}`);
    return z;
  }

  private serverTime(): number {
    return Math.round(Date.now() / 1000) + (this.opts.timeDriftSeconds ?? 0);
  }

  private persist(): void {
    if (!this.opts.stateFile) return;
    writeStateFile(this.opts.stateFile, this.state.toJSON(this.persistCredentials ? this.credentials : undefined));
  }

  private sleep(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, ms);
      this.timers.add(t);
    });
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const at = Date.now();
    const seq = ++this.seq;
    const queryId = `${this.behavior.queryIdPrefix}.${Math.floor(at / 1000).toString(16)}.${seq}.${randomBytes(4).toString('hex')}`;
    const method = (req.method ?? 'GET').toUpperCase();
    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const fullPath = q >= 0 ? rawUrl.slice(0, q) : rawUrl;
    const path = fullPath === '/1.0' ? '/' : fullPath.startsWith('/1.0/') ? fullPath.slice(4) : fullPath;
    const query = Object.fromEntries(new URLSearchParams(q >= 0 ? rawUrl.slice(q + 1) : ''));
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if ((name.startsWith('x-pagination-') || name === 'pragma') && value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    const call: SimCall = { seq, at, method, path, query, body: undefined, status: 0, queryId, headers };
    this.log.push(call);

    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      this.process(call, req, res, rawUrl, fullPath.startsWith('/1.0/') || fullPath === '/1.0', rawBody, tooLarge).catch((err: unknown) => {
        this.opts.log?.('ovhsim internal error', { seq: call.seq, error: err instanceof Error ? err.message : String(err) });
        res.destroy();
      });
    });
  }

  private async process(
    call: SimCall,
    req: IncomingMessage,
    res: ServerResponse,
    rawUrl: string,
    underBase: boolean,
    rawBody: string,
    tooLarge: boolean,
  ): Promise<void> {
    let body: unknown;
    let bodyInvalid = false;
    if (rawBody !== '') {
      try {
        body = JSON.parse(rawBody) as unknown;
      } catch {
        body = rawBody;
        bodyInvalid = true;
      }
    }
    call.body = body;

    const fault = this.faultSet.match(call.method, call.path);
    await this.sleep(this.faultSet.latencyMs());
    if (fault?.kind === 'delay') await this.sleep(fault.ms);
    if (this.stopped) return;

    let outcome: Outcome;
    const early = fault ? this.faultOutcome(fault, call.path, false) : undefined;
    if (early) {
      outcome = early;
    } else {
      const answer = this.execute(call, req, rawUrl, underBase, rawBody, body, bodyInvalid, tooLarge);
      const late = fault ? this.faultOutcome(fault, call.path, true) : undefined;
      if (late) outcome = late;
      else {
        if (fault?.kind === 'idZero' && answer.status === 200 && typeof answer.body === 'object' && answer.body !== null && 'id' in answer.body) {
          answer.body = { ...answer.body, id: 0 };
        }
        outcome = { kind: 'json', ...answer };
      }
    }
    this.send(call, res, outcome);
  }

  /**
   * The outcome a fault imposes at one of two moments: before the operation (`after` false: effects that
   * do not perform it) or after it (`after` true: effects that perform it first). undefined: none now.
   */
  private faultOutcome(fault: FaultEffect, path: string, after: boolean): Outcome | undefined {
    switch (fault.kind) {
      case 'status': {
        if ((fault.apply ?? false) !== after) return undefined;
        const headers = fault.headers ? { ...fault.headers } : undefined;
        return { kind: 'json', status: fault.status, body: fault.body ?? defaultFaultBody(fault.status, path), ...(headers ? { headers } : {}) };
      }
      case 'html': {
        if ((fault.apply ?? false) !== after) return undefined;
        const status = fault.status ?? 408;
        return { kind: 'html', status, body: fault.body ?? htmlBody(status) };
      }
      case 'rateLimit':
        if (after) return undefined;
        return {
          kind: 'json',
          status: 429,
          body: fault.body ?? defaultFaultBody(429, path),
          ...(fault.retryAfterSeconds !== undefined ? { headers: { 'Retry-After': String(fault.retryAfterSeconds) } } : {}),
        };
      case 'drop':
        return after ? undefined : { kind: 'drop' };
      case 'hang':
        return after ? undefined : { kind: 'hang' };
      case 'applyThenDrop':
        return after ? { kind: 'drop' } : undefined;
      case 'delay':
      case 'idZero':
        return undefined;
    }
  }

  /** Routing, authentication, rate limit, then the operation; synchronous, so atomic. */
  private execute(
    call: SimCall,
    req: IncomingMessage,
    rawUrl: string,
    underBase: boolean,
    rawBody: string,
    body: unknown,
    bodyInvalid: boolean,
    tooLarge: boolean,
  ): ApiAnswer & { headers?: Record<string, string> } {
    try {
      if (tooLarge) throw new SimApiError(413, { class: 'Client::PayloadTooLarge', message: 'Request body too large' });
      if (!underBase) throw routeNotFound();
      const route = routeOf(call.method, call.path);
      if (route.name !== 'authTime') {
        const denied = checkSignature(
          {
            method: call.method,
            rawUrl,
            hostHeader: req.headers.host ?? '',
            rawBody,
            header: (name) => {
              const v = req.headers[name];
              return Array.isArray(v) ? v[0] : v;
            },
          },
          this.credentials,
          this.serverTime(),
          this.behavior.timestampWindowSeconds,
        );
        if (denied) throw denied;
        this.checkRate();
      }
      const answer = this.router.handle(route, { method: call.method, path: call.path, query: call.query, body, bodyInvalid, headers: call.headers, caller: this.credentials.consumerKey });
      if (answer.changed) this.persist();
      return answer;
    } catch (err) {
      if (err instanceof SimApiError) return { status: err.status, body: err.body, changed: false, headers: err.headers };
      this.opts.log?.('ovhsim internal error', { seq: call.seq, error: err instanceof Error ? err.message : String(err) });
      return { status: 500, body: defaultFaultBody(500, call.path), changed: false };
    }
  }

  /** The assumed automatic rate limit (SimBehavior.rateLimit), per consumer key. */
  private checkRate(): void {
    const limit = this.behavior.rateLimit;
    if (!limit) return;
    const now = Date.now();
    const key = this.credentials.consumerKey;
    const window = (this.rateWindows.get(key) ?? []).filter((t) => t > now - limit.windowMs);
    if (window.length >= limit.max) {
      this.rateWindows.set(key, window);
      throw new SimApiError(429, { class: 'Client::TooManyRequests', message: 'Too many requests' }, { 'Retry-After': String(limit.retryAfterSeconds ?? 1) });
    }
    window.push(now);
    this.rateWindows.set(key, window);
  }

  private send(call: SimCall, res: ServerResponse, outcome: Outcome): void {
    const done = (status: number): void => {
      call.status = status;
      this.opts.log?.('ovhsim api call', {
        seq: call.seq,
        method: call.method,
        path: call.path,
        status,
        queryId: call.queryId,
        ms: Date.now() - call.at,
      });
    };
    if (res.destroyed || this.stopped) return;
    switch (outcome.kind) {
      case 'drop':
        res.socket?.destroy();
        res.destroy();
        done(0);
        return;
      case 'hang':
        this.hanging.add(res);
        res.on('close', () => this.hanging.delete(res));
        done(0);
        return;
      case 'html': {
        const text = outcome.body;
        res.writeHead(outcome.status, {
          'Content-Type': 'text/html',
          'Content-Length': Buffer.byteLength(text),
          'X-Ovh-Queryid': call.queryId,
        });
        res.end(text);
        done(outcome.status);
        return;
      }
      case 'json': {
        const headers: Record<string, string | number> = { 'X-Ovh-Queryid': call.queryId, ...outcome.headers };
        if (outcome.body === undefined) {
          if (outcome.status !== 204) headers['Content-Length'] = 0;
          res.writeHead(outcome.status, headers);
          res.end();
        } else {
          const text = JSON.stringify(outcome.body);
          headers['Content-Type'] = 'application/json; charset=utf-8';
          headers['Content-Length'] = Buffer.byteLength(text);
          res.writeHead(outcome.status, headers);
          res.end(text);
        }
        done(outcome.status);
        return;
      }
    }
  }
}
