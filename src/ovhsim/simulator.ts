/**
 * OvhSimulator, the control surface tests and the demo use: start and stop the HTTPS API and the DNS
 * server, read the call log, inject faults, change assumed behaviour, and read or change the zones
 * directly (as a person in OVH's control panel would), with the state persisted when asked. Each
 * request is answered by pipeline.ts. See index.ts for what is modelled.
 */
import { randomBytes } from 'node:crypto';
import https from 'node:https';
import { generateCertificate } from './cert.js';
import { DnsResolver, type DnsSource } from './dns-resolver.js';
import { DnsServer } from './dns-server.js';
import { FaultSet, type SimFaults } from './faults.js';
import { Propagation } from './propagation.js';
import { RequestPipeline } from './pipeline.js';
import { normalizeRecord } from '../ovhwire/records.js';
import { SimState, readStateFile, writeStateFile, type ZoneState } from './state.js';
import type { SimBehavior, SimCall, SimCredentials, SimOptions, SimRecord, SimRecordInit, SimRecordPatch } from './types.js';

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

/** One of the zone's authoritative servers: its name (the zone's nameServers) and its port. */
export interface SimNameServer {
  name: string;
  host: string;
  port: number;
}

export class OvhSimulator {
  readonly apiUrl: string;
  readonly apiPort: number;
  /** The first name server's port (dnsServers[0]). */
  readonly dnsPort: number;
  /** Every zone's authoritative servers, one per name server (dns1.sim.test, ns1.sim.test), each on its own port. */
  readonly dnsServers: SimNameServer[];
  readonly faults: SimFaults;
  private readonly pipeline: RequestPipeline;
  private stopped = false;

  private constructor(
    readonly host: string,
    private readonly server: https.Server,
    private readonly dns: DnsServer[],
    /** When each name server answers a refresh (its lag, hold and release): propagation.ts. */
    readonly propagation: Propagation,
    private readonly queries: number[],
    readonly caPem: string,
    readonly credentials: SimCredentials,
    private readonly state: SimState,
    private readonly behavior: SimBehavior,
    private readonly opts: SimOptions,
    private readonly persistCredentials: boolean,
  ) {
    const address = server.address();
    this.apiPort = typeof address === 'object' && address ? address.port : 0;
    this.dnsPort = dns[0]!.port;
    this.dnsServers = dns.map((d, i) => ({ name: behavior.nameServers[i] ?? `ns${i}.sim.test`, host, port: d.port }));
    this.apiUrl = `https://${host.includes(':') ? `[${host}]` : host}:${this.apiPort}`;
    const faults = new FaultSet();
    this.faults = faults;
    this.pipeline = new RequestPipeline({
      state,
      behavior,
      credentials,
      faults,
      timeDriftSeconds: opts.timeDriftSeconds ?? 0,
      persist: () => this.persist(),
      log: opts.log,
    });
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

    // Two authoritative servers (at least), like OVH's dnsNN/nsNN pair: each serves its own copy of
    // the zones, which a refresh reaches after that server's lag (propagation.ts).
    const names = behavior.nameServers.length >= 2 ? behavior.nameServers : [...behavior.nameServers, 'dns1.sim.test', 'ns1.sim.test'].slice(0, 2);
    const propagation = new Propagation(names, opts.propagation ?? 0);
    state.onPublish = (zone, before) => propagation.published(zone, before);
    const queries = names.map(() => 0);
    const dns: DnsServer[] = [];
    try {
      for (const [i, name] of names.entries()) {
        const source: DnsSource = {
          zoneNames: () => state.zoneNames(),
          zone: (zone) => {
            const z = state.zone(zone);
            return z && propagation.served(i, z);
          },
          defaultTtl: behavior.defaultTtl,
          nameServers: behavior.nameServers,
          soa: behavior.soa,
        };
        const port = i === 0 ? (opts.dnsPort ?? 0) : (opts.dnsPorts?.[i] ?? 0);
        dns.push(
          await DnsServer.start(host, port, new DnsResolver(source), (q) => {
            queries[i]!++;
            opts.log?.('ovhsim dns query', { server: name, ...q });
          }),
        );
      }
    } catch (err) {
      await Promise.all(dns.map((d) => d.stop()));
      server.close();
      throw err;
    }
    const sim = new OvhSimulator(host, server, dns, propagation, queries, tls.cert, credentials, state, behavior, opts, opts.credentials === undefined);
    server.on('request', (req, res) => sim.pipeline.handle(req, res));
    server.on('tlsClientError', () => {
      /* a client that does not trust the certificate; nothing to answer */
    });
    sim.persist();
    opts.log?.('ovhsim started', { apiUrl: sim.apiUrl, dnsPort: sim.dnsPort, dnsServers: sim.dnsServers, applicationKey: credentials.applicationKey });
    return sim;
  }

  // --- call log ---

  /** Every call received, in order (auth/time and rejected ones included). Copies. */
  calls(): SimCall[] {
    return this.pipeline.calls.map((c) => ({ ...c, query: { ...c.query }, headers: { ...c.headers } }));
  }

  clearCalls(): void {
    this.pipeline.calls.length = 0;
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
    this.pipeline.clearListCache();
  }

  /**
   * The credentials it accepts from now on, as when the account's owner revokes a consumer key and
   * issues another in OVH's console (a rotation's test: calls signed with the old ones are refused).
   */
  setCredentials(next: SimCredentials): void {
    Object.assign(this.credentials, next);
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
    this.propagation.forget(name.toLowerCase());
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

  /** The serial a name server (name or index) serves of the zone: behind soaSerial until the refresh reaches it. */
  servedSerial(zone: string, server: string | number): number {
    return this.propagation.servedSerial(server, this.mustZone(zone));
  }

  /** DNS queries each name server received (in dnsServers' order). */
  dnsQueries(): number[] {
    return [...this.queries];
  }

  /** True when the draft equals the published zone (GET …/status isDeployed). */
  isDeployed(zone: string): boolean {
    return this.state.isDeployed(this.mustZone(zone));
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.pipeline.stop();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    this.propagation.stop();
    await Promise.all([closed, ...this.dns.map((d) => d.stop())]);
  }

  // --- internals ---

  private mustZone(zone: string): ZoneState {
    const z = this.state.zone(zone);
    if (!z) throw new Error(`unknown zone ${zone}`);
    return z;
  }

  private persist(): void {
    if (!this.opts.stateFile) return;
    writeStateFile(this.opts.stateFile, this.state.toJSON(this.persistCredentials ? this.credentials : undefined));
  }
}
