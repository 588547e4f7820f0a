/**
 * bench/ovh-calls — the minimal-call proof (issue 5). `npm run bench`; not part of `npm test`.
 *
 * K clusters poll one zone of N records every loop for T loops, with W writes per loop spread over
 * the clusters (each write is one record set created, then updated, then deleted in the next loops,
 * by the cluster that owns it). Every scenario runs twice against the OVH simulator:
 *
 *  - through dnsplane: a real server in this process (real Postgres: a fresh database on
 *    DATABASE_URL's server, else an embedded one), each cluster a tenant with its own Connect client;
 *    a poll is Records with the generation the cluster already has, a write is one Apply of the
 *    cluster's change set for that loop (the webhook form);
 *  - through a replay of external-dns v0.22's OVH provider (REFERENCE.md section 3, provider/ovh/ovh.go):
 *    per loop GET /domain/zone, then a DNS SOA query to the zone's server (counted apart: not an API
 *    call) and, when the serial moved (or nothing is cached), GET soa + GET record (ids) + one GET per
 *    record; an apply is one call per target (PUT reusing the record id for an update), then one
 *    refresh when all succeeded, which also drops the cluster's cache. Each cluster has its own
 *    rate limiter (--ovh-api-rate-limit, 20/s by default), as each external-dns has.
 *
 * The lower bound of a scenario: the minimal operations (one per write here: a 1-target create is one
 * POST, a 1-target update one PUT, a delete one DELETE) plus one refresh per apply that changed the
 * zone; zero for polling. dnsplane's ratio to it must be exactly 1.00: the bench fails otherwise.
 *
 * Cold starts are measured apart: dnsplane reads a zone once for all clusters (list + N GETs + SOA);
 * each external-dns reads it once for itself. The steady-state loops start with every cache warm.
 *
 * Environment (all optional):
 *   BENCH_K=1,10,50      cluster counts           BENCH_N=100,1000   zone sizes (records, apex NS included)
 *   BENCH_T=3            loops per scenario       BENCH_W=2          writes per loop
 *   BENCH_LATENCY_MS=30  simulator latency/call   BENCH_RATE=20      OVH calls/s: dnsplane's DNSPLANE_OVH_RATE
 *                                                                    and each external-dns's --ovh-api-rate-limit
 *   DATABASE_URL         a Postgres server to create the bench database on (dropped at the end)
 */
import { randomBytes } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import { createClient, type Client, type Interceptor } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import ovh, { type OvhClient } from '@ovhcloud/node-ovh';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { createTenant } from '../src/core/tenants.js';
import { ApplyStatus, ChangesSchema, EndpointSchema, ZoneService, type Changes, type Endpoint } from '../src/gen/dnsplane/v1/zone_pb.js';
import { RateLimiter } from '../src/ovh/ratelimit.js';
import { OvhSimulator, type SimCall, type SimRecordInit } from '../src/ovhsim/index.js';
import { startServer, type Server } from '../src/server.js';

// --- parameters ---

function intList(name: string, fallback: string): number[] {
  const raw = process.env[name] ?? fallback;
  const values = raw.split(',').map((s) => Number(s.trim()));
  if (values.length === 0 || values.some((v) => !Number.isInteger(v) || v < 1)) throw new Error(`${name}: expected positive integers, got "${raw}"`);
  return values;
}
function positive(name: string, fallback: string, allowZero = false): number {
  const raw = process.env[name] ?? fallback;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < 0 || (!allowZero && v === 0)) throw new Error(`${name}: expected a ${allowZero ? 'non-negative' : 'positive'} number, got "${raw}"`);
  return v;
}

const KS = intList('BENCH_K', '1,10,50');
const NS = intList('BENCH_N', '100,1000');
const T = positive('BENCH_T', '3');
const W = positive('BENCH_W', '2');
const LATENCY_MS = positive('BENCH_LATENCY_MS', '30', true);
const RATE = positive('BENCH_RATE', '20');
const TTL = 300;
for (const n of NS) if (n < 3) throw new Error('BENCH_N: a zone holds its 2 apex NS records; use N >= 3');

// --- the write schedule, the same for both systems ---

type WriteKind = 'create' | 'update' | 'delete';
interface Write {
  kind: WriteKind;
  /** Relative to the zone. */
  sub: string;
  /** The target before (update, delete) and after (create, update). */
  before?: string;
  after?: string;
}

function ip(prefix: string, n: number): string {
  return `${prefix}.${(n >> 8) & 255}.${n & 255}`;
}

/**
 * Loop t's writes, by cluster. Round r = floor(t / 3) creates W names in its first loop, updates them
 * in the second, deletes them in the third; write j of round r belongs to cluster (r * W + j) mod K, so
 * the writes go round the clusters. A cluster's writes of one loop are one apply.
 */
function writesOf(t: number, k: number, tag: string): Map<number, Write[]> {
  const round = Math.floor(t / 3);
  const kind: WriteKind = (['create', 'update', 'delete'] as const)[t % 3]!;
  const byCluster = new Map<number, Write[]>();
  for (let j = 0; j < W; j++) {
    const n = round * W + j;
    const sub = `${tag}-r${round}-w${j}`;
    const first = ip('198.18', n);
    const second = ip('198.19', n);
    const write: Write =
      kind === 'create' ? { kind, sub, after: first } : kind === 'update' ? { kind, sub, before: first, after: second } : { kind, sub, before: second };
    const c = n % k;
    byCluster.set(c, [...(byCluster.get(c) ?? []), write]);
  }
  return byCluster;
}

/** What the bench records of a zone must be after loops 0..t-1 (name -> target). */
function expectedAfter(loops: number, k: number, tag: string): Map<string, string> {
  const state = new Map<string, string>();
  for (let t = 0; t < loops; t++) {
    for (const writes of writesOf(t, k, tag).values()) {
      for (const w of writes) {
        if (w.kind === 'delete') state.delete(w.sub);
        else state.set(w.sub, w.after!);
      }
    }
  }
  return state;
}

/** The lower bound of T loops: one operation per write, one refresh per apply. */
function lowerBound(k: number): number {
  let calls = 0;
  for (let t = 0; t < T; t++) {
    const byCluster = writesOf(t, k, 'x');
    calls += [...byCluster.values()].reduce((n, ws) => n + ws.length, 0) + byCluster.size;
  }
  return calls;
}

// --- counting on the simulator's log ---

function apiCalls(sim: OvhSimulator): SimCall[] {
  return sim.calls().filter((c) => c.path !== '/auth/time');
}

function breakdown(calls: SimCall[]): string {
  const by = new Map<string, number>();
  for (const c of calls) {
    const route = c.path.replace(/^\/domain\/zone\/[^/]+/, '').replace(/\/record\/\d+$/, '/record/{id}') || '/';
    const key = c.path === '/domain/zone' ? 'GET zones' : `${c.method} ${route}`;
    by.set(key, (by.get(key) ?? 0) + 1);
  }
  return [...by.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');
}

function checkZone(sim: OvhSimulator, zone: string, tag: string, want: Map<string, string>, who: string): void {
  const published = sim.publishedRecords(zone).filter((r) => r.subDomain.startsWith(`${tag}-`));
  const have = new Map(published.map((r) => [r.subDomain, r.target]));
  const ok = have.size === published.length && have.size === want.size && [...want].every(([k, v]) => have.get(k) === v);
  if (!ok) throw new Error(`${who}: zone ${zone} does not hold what the writes asked for: ${JSON.stringify([...have])} vs ${JSON.stringify([...want])}`);
}

function ms(from: number): number {
  return Math.round(performance.now() - from);
}

// --- dnsplane side ---

function endpoint(zone: string, sub: string, target: string): Endpoint {
  return create(EndpointSchema, { dnsName: `${sub}.${zone}`, recordType: 'A', targets: [target], ttl: TTL });
}

function changesOf(zone: string, writes: Write[]): Changes {
  const c = create(ChangesSchema, {});
  for (const w of writes) {
    if (w.kind === 'create') c.create.push(endpoint(zone, w.sub, w.after!));
    else if (w.kind === 'update') {
      c.updateOld.push(endpoint(zone, w.sub, w.before!));
      c.updateNew.push(endpoint(zone, w.sub, w.after!));
    } else c.delete.push(endpoint(zone, w.sub, w.before!));
  }
  return c;
}

type ZoneClient = Client<typeof ZoneService>;

function zoneClient(server: Server, token: string): ZoneClient {
  const auth: Interceptor = (next) => (req) => {
    req.header.set('authorization', `Bearer ${token}`);
    return next(req);
  };
  return createClient(ZoneService, createConnectTransport({ baseUrl: server.url, httpVersion: '1.1', interceptors: [auth] }));
}

interface Run {
  calls: number;
  detail: string;
  wallMs: number;
  dnsQueries?: number;
}

async function runDnsplane(sim: OvhSimulator, server: Server, zone: string, k: number, n: number): Promise<Run> {
  const tag = `d${k}n${n}`;
  const clients: Array<{ client: ZoneClient; generation?: bigint }> = [];
  for (let c = 0; c < k; c++) {
    const { token } = await createTenant(server.ctx.pool, { name: `${tag}-c${c}`, zones: [zone] });
    clients.push({ client: zoneClient(server, token) });
  }
  const poll = async (cl: (typeof clients)[number]) => {
    const res = await cl.client.records({ zones: [zone], knownGenerations: cl.generation === undefined ? {} : { [zone]: cl.generation } });
    const z = res.zones[0]!;
    if (!z.notModified) cl.generation = z.generation;
  };
  await Promise.all(clients.map(poll)); // each cluster's first read: from the cache, no OVH call
  if (apiCalls(sim).length !== 0) throw new Error('dnsplane: a warm cache was read from OVH');

  const started = performance.now();
  for (let t = 0; t < T; t++) {
    await Promise.all(clients.map(poll));
    await Promise.all(
      [...writesOf(t, k, tag)].map(async ([c, writes]) => {
        const res = await clients[c]!.client.apply({ source: { case: 'plan', value: { input: { case: 'changes', value: changesOf(zone, writes) } } } });
        const z = res.zones[0]!;
        if (z.status !== ApplyStatus.APPLIED) throw new Error(`dnsplane: apply of cluster ${c} in loop ${t}: ${ApplyStatus[z.status]} ${z.error}`);
      }),
    );
  }
  const wallMs = ms(started);
  const calls = apiCalls(sim);
  checkZone(sim, zone, tag, expectedAfter(T, k, tag), 'dnsplane');
  // Leave the zone as it was (not measured): finish the open round, each cluster for its own names.
  for (let t = T; t < Math.ceil(T / 3) * 3; t++) {
    for (const [c, writes] of writesOf(t, k, tag)) {
      await clients[c]!.client.apply({ source: { case: 'plan', value: { input: { case: 'changes', value: changesOf(zone, writes) } } } });
    }
  }
  return { calls: calls.length, detail: breakdown(calls), wallMs };
}

// --- the external-dns v0.22 replay ---

interface ExtRecord {
  id: number;
  zone: string;
  subDomain: string;
  fieldType: string;
  target: string;
  ttl: number;
}

/** One external-dns instance with the in-tree OVH provider (cache on, as by default). */
class ExternalDnsReplay {
  private cache: { serial: number; records: ExtRecord[] } | undefined;
  private lastRunRecords: ExtRecord[] = [];
  dnsQueries = 0;
  private readonly client: OvhClient;

  constructor(
    sim: OvhSimulator,
    private readonly zone: string,
    private readonly resolver: Resolver,
    public limiter: RateLimiter,
  ) {
    this.client = ovh({
      host: sim.host,
      port: sim.apiPort,
      basePath: '/1.0',
      appKey: sim.credentials.applicationKey,
      appSecret: sim.credentials.applicationSecret,
      consumerKey: sim.credentials.consumerKey,
      apiTimeDiff: 0,
    });
  }

  /** p.apiRateLimiter.Take() then the call. */
  private async taken<R>(fn: () => Promise<R>): Promise<R> {
    await this.limiter.acquire();
    try {
      return await fn();
    } finally {
      this.limiter.release();
    }
  }

  private get(path: string): Promise<unknown> {
    return this.client.requestPromised('GET', path);
  }

  /** Records(): zones(), then records() of each zone in the domain filter. */
  async records(): Promise<void> {
    const zones = (await this.taken(() => this.get('/domain/zone'))) as string[];
    if (!zones.includes(this.zone)) throw new Error(`replay: zone ${this.zone} not listed`);
    if (this.cache) {
      this.dnsQueries++;
      const soa = await this.resolver.resolveSoa(this.zone);
      if (soa.serial === this.cache.serial) {
        this.lastRunRecords = this.cache.records;
        return;
      }
      this.cache = undefined;
    }
    const soa = (await this.taken(() => this.get(`/domain/zone/${this.zone}/soa`))) as { serial: number };
    const ids = (await this.get(`/domain/zone/${this.zone}/record`)) as number[]; // no Take() in v0.22
    const records = await Promise.all(ids.map((id) => this.taken(() => this.get(`/domain/zone/${this.zone}/record/${id}`)) as Promise<ExtRecord>));
    this.cache = { serial: soa.serial, records };
    this.lastRunRecords = records;
  }

  /** ApplyChanges(): creates, deletes, updates as the provider computes them, all in parallel, then refresh. */
  async apply(changes: Changes): Promise<void> {
    type Op = { method: 'POST' | 'PUT' | 'DELETE'; path: string; body?: Record<string, unknown> };
    const ops: Op[] = [];
    const sub = (e: Endpoint) => e.dnsName.slice(0, -(this.zone.length + 1));
    const ttl = (e: Endpoint) => (e.ttl > 0 ? e.ttl : 0);
    const existing = [...this.lastRunRecords];
    for (const e of changes.create) {
      for (const target of e.targets) ops.push({ method: 'POST', path: `/domain/zone/${this.zone}/record`, body: { fieldType: e.recordType, subDomain: sub(e), ttl: ttl(e), target } });
    }
    const used = new Set<number>();
    for (const e of changes.delete) {
      for (const target of e.targets) {
        const i = existing.findIndex((r, j) => !used.has(j) && r.subDomain === sub(e) && r.fieldType === e.recordType && r.target === target);
        if (i < 0) throw new Error('replay: ErrRecordToMutateNotFound');
        used.add(i);
        ops.push({ method: 'DELETE', path: `/domain/zone/${this.zone}/record/${existing[i]!.id}` });
      }
    }
    const remaining = existing.filter((_, j) => !used.has(j));
    changes.updateOld.forEach((old, i) => {
      const next = changes.updateNew[i]!;
      let oldRecords = remaining.filter((r) => r.fieldType === old.recordType && r.subDomain === sub(old));
      const toInsert: string[] = [];
      for (const target of next.targets) {
        const k = oldRecords.findIndex((r) => r.target === target);
        if (k >= 0) oldRecords = oldRecords.filter((_, j) => j !== k);
        else toInsert.push(target);
      }
      for (const target of [...toInsert]) {
        const record = oldRecords.shift();
        if (!record) break;
        toInsert.shift();
        ops.push({ method: 'PUT', path: `/domain/zone/${this.zone}/record/${record.id}`, body: { subDomain: record.subDomain, ttl: ttl(next), target } });
      }
      for (const target of toInsert) ops.push({ method: 'POST', path: `/domain/zone/${this.zone}/record`, body: { fieldType: next.recordType, subDomain: sub(next), ttl: ttl(next), target } });
      for (const r of oldRecords) ops.push({ method: 'DELETE', path: `/domain/zone/${this.zone}/record/${r.id}` });
    });
    await Promise.all(ops.map((op) => this.taken(() => this.client.requestPromised(op.method, op.path, op.body))));
    this.cache = undefined; // refresh() invalidates the cache first
    await this.taken(() => this.client.requestPromised('POST', `/domain/zone/${this.zone}/refresh`));
  }
}

function replayChanges(zone: string, writes: Write[]): Changes {
  return changesOf(zone, writes);
}

async function runReplay(sim: OvhSimulator, zone: string, k: number, n: number): Promise<{ cold: Run; steady: Run }> {
  const tag = `e${k}n${n}`;
  const resolver = new Resolver({ timeout: 2000, tries: 2 });
  resolver.setServers([`${sim.host}:${sim.dnsPort}`]);
  // The cold start is not what this bench is about: it runs without latency and without the rate
  // limit, to keep the bench short; its calls are counted all the same.
  const fast = () => new RateLimiter(1e9, 16);
  const clusters = Array.from({ length: k }, () => new ExternalDnsReplay(sim, zone, resolver, fast()));
  sim.faults.setLatency(0);
  sim.clearCalls();
  let started = performance.now();
  for (let i = 0; i < clusters.length; i += 10) await Promise.all(clusters.slice(i, i + 10).map((c) => c.records()));
  const coldCalls = apiCalls(sim);
  const cold: Run = { calls: coldCalls.length, detail: breakdown(coldCalls), wallMs: ms(started) };

  for (const c of clusters) c.limiter = new RateLimiter(RATE, 64);
  sim.faults.setLatency(LATENCY_MS);
  sim.clearCalls();
  started = performance.now();
  for (let t = 0; t < T; t++) {
    await Promise.all(clusters.map((c) => c.records()));
    await Promise.all([...writesOf(t, k, tag)].map(([c, writes]) => clusters[c]!.apply(replayChanges(zone, writes))));
  }
  const wallMs = ms(started);
  const calls = apiCalls(sim);
  checkZone(sim, zone, tag, expectedAfter(T, k, tag), 'external-dns replay');
  const dnsQueries = clusters.reduce((s, c) => s + c.dnsQueries, 0);
  // Leave the zone as it was (not measured).
  sim.faults.setLatency(0);
  for (const c of clusters) c.limiter = fast();
  for (let t = T; t < Math.ceil(T / 3) * 3; t++) {
    await Promise.all(clusters.map((c) => c.records()));
    for (const [c, writes] of writesOf(t, k, tag)) await clusters[c]!.apply(replayChanges(zone, writes));
  }
  return { cold, steady: { calls: calls.length, detail: breakdown(calls), wallMs, dnsQueries } };
}

// --- main ---

function zoneRecords(n: number): SimRecordInit[] {
  // n records in all: OVH's 2 apex NS records plus n - 2 A records.
  return Array.from({ length: n - 2 }, (_, i) => ({ subDomain: `host${i}`, fieldType: 'A', target: ip('10.20', i), ttl: 3600 }));
}

async function benchDatabase(): Promise<{ url?: string; drop(): Promise<void> }> {
  const base = process.env['DATABASE_URL'];
  if (!base) return { url: undefined, drop: async () => undefined }; // the server starts an embedded Postgres
  const name = `dnsplane_bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)}`);
  await admin.end();
  const u = new URL(base);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(name)} WITH (FORCE)`);
      await c.end();
    },
  };
}

function pad(s: string | number, n: number, left = false): string {
  const v = String(s);
  return left ? v.padEnd(n) : v.padStart(n);
}

function secs(msValue: number): string {
  return `${(msValue / 1000).toFixed(1)} s`;
}

async function main(): Promise<void> {
  const benchStarted = performance.now();
  const zones: Record<string, SimRecordInit[]> = {};
  for (const n of NS) {
    zones[`n${n}.dnsplane.bench`] = zoneRecords(n);
    zones[`n${n}.extdns.bench`] = zoneRecords(n);
  }
  const sim = await OvhSimulator.start({ zones });
  const db = await benchDatabase();
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-bench-'));
  const caFile = path.join(dir, 'ca.pem');
  writeFileSync(caFile, sim.caPem);
  const config = loadConfig({
    ...(db.url ? { DATABASE_URL: db.url } : {}),
    DNSPLANE_DATA_DIR: dir,
    DNSPLANE_LISTEN: '127.0.0.1:0',
    DNSPLANE_ZONES: NS.map((n) => `n${n}.dnsplane.bench`).join(','),
    OVH_ENDPOINT: sim.apiUrl,
    OVH_APPLICATION_KEY: sim.credentials.applicationKey,
    OVH_APPLICATION_SECRET: sim.credentials.applicationSecret,
    OVH_CONSUMER_KEY: sim.credentials.consumerKey,
    OVH_CA_FILE: caFile,
    DNSPLANE_OVH_RATE: String(RATE),
    DNSPLANE_DRIFT_INTERVAL: '24h',
    DNSPLANE_LOG_LEVEL: 'warn',
  });
  const server = await startServer(config, pino({ level: 'warn' }));
  const out: string[] = [];
  const say = (line = '') => {
    out.push(line);
    console.log(line);
  };
  try {
    say(`bench/ovh-calls: K=${KS.join(',')} N=${NS.join(',')} T=${T} W=${W}; simulator latency ${LATENCY_MS} ms/call; OVH rate ${RATE}/s (dnsplane: per application key; external-dns: per cluster)`);
    say(`Postgres: ${db.url ? 'a fresh database on DATABASE_URL' : 'embedded'}; node ${process.version}`);
    say();

    // Cold start of dnsplane: one read of each zone, for every cluster there will ever be.
    sim.faults.setLatency(LATENCY_MS);
    const { token: warm } = await createTenant(server.ctx.pool, { name: 'bench-warmup', zones: NS.map((n) => `n${n}.dnsplane.bench`) });
    const coldDnsplane = new Map<number, Run>();
    for (const n of NS) {
      sim.clearCalls();
      const started = performance.now();
      await zoneClient(server, warm).records({ zones: [`n${n}.dnsplane.bench`] });
      const calls = apiCalls(sim);
      coldDnsplane.set(n, { calls: calls.length, detail: breakdown(calls), wallMs: ms(started) });
    }

    interface Row {
      k: number;
      n: number;
      bound: number;
      dnsplane: Run;
      ext: Run;
      extCold: Run;
    }
    const rows: Row[] = [];
    for (const n of NS) {
      for (const k of KS) {
        sim.faults.setLatency(LATENCY_MS);
        sim.clearCalls();
        const d = await runDnsplane(sim, server, `n${n}.dnsplane.bench`, k, n);
        const e = await runReplay(sim, `n${n}.extdns.bench`, k, n);
        const row = { k, n, bound: lowerBound(k), dnsplane: d, ext: e.steady, extCold: e.cold };
        rows.push(row);
        console.error(`  done K=${k} N=${n}: dnsplane ${d.calls} calls (${d.detail}); external-dns ${e.steady.calls} calls (${e.steady.detail}) + ${e.steady.dnsQueries} DNS SOA queries`);
      }
    }

    say(`Steady state: ${T} loops, every cache warm at the start. OVH API calls as the simulator logged them (GET /auth/time excluded).`);
    say();
    const head = `| ${pad('K', 3)} | ${pad('N', 5)} | ${pad('lower bound', 11)} | ${pad('dnsplane', 8)} | ${pad('dnsplane / bound', 16)} | ${pad('external-dns', 12)} | ${pad('+ DNS SOA queries', 17)} | ${pad('external-dns / dnsplane', 23)} | ${pad('wall dnsplane', 13)} | ${pad('wall external-dns', 17)} |`;
    say(head);
    say(head.replace(/[^|]/g, '-').replace(/\|-/g, '|:').replace(/:(-+)\|/g, (m, d: string) => `${d}-|`));
    let allExact = true;
    for (const r of rows) {
      const ratio = r.dnsplane.calls / r.bound;
      if (r.dnsplane.calls !== r.bound) allExact = false;
      say(
        `| ${pad(r.k, 3)} | ${pad(r.n, 5)} | ${pad(r.bound, 11)} | ${pad(r.dnsplane.calls, 8)} | ${pad(ratio.toFixed(2), 16)} | ${pad(r.ext.calls, 12)} | ${pad(r.ext.dnsQueries ?? 0, 17)} | ${pad(`${(r.ext.calls / r.dnsplane.calls).toFixed(1)}x`, 23)} | ${pad(secs(r.dnsplane.wallMs), 13)} | ${pad(secs(r.ext.wallMs), 17)} |`,
      );
    }
    say();
    say('Cold start (once per zone for dnsplane, whatever K; once per cluster for external-dns):');
    say();
    const coldHead = `| ${pad('K', 3)} | ${pad('N', 5)} | ${pad('dnsplane', 8)} | ${pad('external-dns', 12)} | ${pad('wall dnsplane', 13)} |`;
    say(coldHead);
    say(coldHead.replace(/[^|]/g, '-'));
    for (const r of rows) {
      const c = coldDnsplane.get(r.n)!;
      say(`| ${pad(r.k, 3)} | ${pad(r.n, 5)} | ${pad(c.calls, 8)} | ${pad(r.extCold.calls, 12)} | ${pad(secs(c.wallMs), 13)} |`);
    }
    say();
    say('What the calls were (steady state):');
    for (const r of rows) {
      say(`- K=${r.k} N=${r.n}: dnsplane: ${r.dnsplane.detail || 'none'}; external-dns: ${r.ext.detail}`);
    }
    say();
    say(`dnsplane / lower bound = ${allExact ? 'exactly 1.00 in every scenario' : 'NOT 1.00 in every scenario: a bug in dnsplane'}. Bench time ${secs(ms(benchStarted))}.`);
    if (!allExact) process.exitCode = 1;
  } finally {
    await server.close();
    await sim.stop();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
