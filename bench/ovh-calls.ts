/**
 * bench/ovh-calls — the minimal-call proof (issue 5). `npm run bench`; not part of `npm test`.
 *
 * K clusters poll one zone of N records every loop for T loops, with W writes per loop spread over
 * the clusters. The writes run in W lanes: each lane creates a record set, updates it in the next
 * loop and deletes it in the one after, then starts again with a new name; lanes are staggered so that
 * every loop holds creates, updates and deletes (with W >= 3). The cluster that creates a name also
 * updates and deletes it (ownership), and successive names go round the clusters. A cluster's writes
 * of one loop are one apply. Every scenario runs twice against the OVH simulator:
 *
 *  - through dnsplane: a real server in this process (real Postgres: a fresh database on
 *    DATABASE_URL's server, else an embedded one), each cluster a tenant with its own Connect client;
 *    a poll is Records with the generation the cluster already has; a write is one Apply of the
 *    cluster's change set for that loop (the webhook form);
 *  - through a replay of external-dns v0.22's OVH provider (REFERENCE.md section 3; provider/ovh/ovh.go
 *    with its cache on, the default): per loop GET /domain/zone, then per zone a DNS SOA query to the
 *    zone's server (counted apart: not an API call) and, when the serial moved or nothing is cached,
 *    GET soa + GET record (ids) + one GET per record; an apply is one call per target (PUT reusing the
 *    record id for an update), all in parallel, then one refresh when all succeeded, which also drops
 *    that cluster's cache. Each cluster has its own rate limiter (--ovh-api-rate-limit, default 20/s).
 *
 *  - through a replay of the same external-dns pointed at the OVH API dnsplane serves (issue 25): each
 *    cluster a tenant with its own OVH-style key, `--ovh-endpoint=http://…/ovh/1.0`; its polls answered
 *    from dnsplane's cache (the served SOA names dnsplane's DNS door, which answers the served serial:
 *    a loop with nothing changed is the zone list and one DNS question), its writes staged, its
 *    refresh one apply.
 *
 * The lower bound of a scenario: the minimal operations (one per write here: a 1-target create is one
 * POST, a 1-target update one PUT, a delete one DELETE) plus, per loop, one refresh per
 * DNSPLANE_APPLY_BATCH (100) operations: the applies of a loop are sent at the same moment, and one
 * refresh can publish them all (dnsplane coalesces the applies waiting for a zone's lock, issue 14);
 * zero for polling. dnsplane's ratio to it must be exactly 1.00: the bench exits 1 otherwise.
 *
 * Coalescing is measured apart too: BENCH_COALESCE_K (50) clusters each apply one change to one zone
 * at the same moment, three times (creates, updates, deletes), on a server with coalescing on (the
 * default DNSPLANE_APPLY_COALESCE) and on one with it off, beside the lower bound (the minimal
 * operations plus one refresh per DNSPLANE_APPLY_BATCH operations).
 *
 * Cold starts are measured apart (dnsplane reads a zone once for all clusters; each external-dns reads
 * it for itself), as is the setup of the lanes' first records; the measured loops start with every
 * cache warm. dnsplane's cold start is measured twice: where OVH answers GET …/record with ids only
 * (the documented behaviour, the simulator's default: the ids, one GET per record, the SOA: N + 2
 * calls) and where it answers expanded record lists (issue 14: the SOA and one call per page of
 * records), each against its own lower bound. After each run the bench checks that the zone holds
 * exactly what the writes asked for.
 *
 * Environment (all optional):
 *   BENCH_K=1,10,50      cluster counts            BENCH_N=100,1000   zone sizes (records, apex NS included)
 *   BENCH_T=2            loops per scenario        BENCH_W=3          writes per loop
 *   BENCH_LATENCY_MS=30  simulator latency / call  BENCH_RATE=20      OVH calls/s: dnsplane's DNSPLANE_OVH_RATE,
 *                                                                     and each external-dns's --ovh-api-rate-limit
 *   BENCH_COALESCE_K=50  clusters applying at the same moment (0: skip that scenario)
 *   BENCH_IDLE_N=10000   records of the zone one cluster owns through the served OVH API, for the cost of
 *                        its loop when nothing changed (0: skip that scenario)
 *   DATABASE_URL         a Postgres server to create the bench database on (dropped at the end)
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import type { Client } from '@connectrpc/connect';
import pino from 'pino';
import { loadConfig } from '../src/config/config.js';
import { createOvhKey } from '../src/core/credentials/ovh-admin.js';
import { createTenant } from '../src/core/tenants/tenants.js';
import { ApplyStatus, ChangesSchema, EndpointSchema, type ZoneService, type Changes, type Endpoint } from '../src/gen/dnsplane/v1/zone_pb.js';
import { DEFAULT_EXPANDED_PAGE_SIZE } from '../src/ovh/client/expanded-lists.js';
import { RateLimiter } from '../src/ovh/ratelimit.js';
import { OvhSimulator, type SimCall, type SimRecordInit } from '../src/ovhsim/index.js';
import { startServer, type Server } from '../src/server/server.js';
import { dnsAtOf, ExternalDnsReplay, OvhHttp, type DnsAt } from '../test/helpers/external-dns-ovh.js';
import { bumpGeneration, notifyZoneChanged, setOwner, withTransaction } from '../src/store/index.js';
import { simulatorEnv, zoneClientFor } from '../test/helpers/sim-server.js';
import { benchDatabase, writeSimulatorCa } from './lib.js';

// --- parameters ---

function intList(name: string, fallback: string): number[] {
  const raw = process.env[name] ?? fallback;
  const values = raw.split(',').map((s) => Number(s.trim()));
  if (values.some((v) => !Number.isInteger(v) || v < 1)) throw new Error(`${name}: expected positive integers, got "${raw}"`);
  return values;
}
function num(name: string, fallback: string, min: number, integer: boolean): number {
  const raw = process.env[name] ?? fallback;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < min || (integer && !Number.isInteger(v)))
    throw new Error(`${name}: expected ${integer ? 'an integer' : 'a number'} >= ${min}, got "${raw}"`);
  return v;
}

const KS = intList('BENCH_K', '1,10,50');
const NS = intList('BENCH_N', '100,1000');
const T = num('BENCH_T', '2', 1, true);
const W = num('BENCH_W', '3', 1, true);
const LATENCY_MS = num('BENCH_LATENCY_MS', '30', 0, false);
const RATE = num('BENCH_RATE', '20', 0.1, false);
const COALESCE_K = num('BENCH_COALESCE_K', '50', 0, true);
const IDLE_N = num('BENCH_IDLE_N', '10000', 0, true);
/** dnsplane's DNSPLANE_APPLY_BATCH default: the most operations one refresh of a coalesced group publishes. */
const APPLY_BATCH = 100;
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
 * Loop t's writes, by cluster. Lane j does its operation number i = t + (j mod 3): cycle c = i div 3
 * works on the name `<tag>-l<j>-c<c>` (create, update, delete for i mod 3 = 0, 1, 2), owned by cluster
 * (c * W + j) mod k. Loops -2 and -1 set the staggered lanes up. With `openedBefore`, only the cycles
 * whose create came before that loop (cleanup: finish what the measured loops opened).
 */
function writesOf(t: number, k: number, tag: string, openedBefore?: number): Map<number, Write[]> {
  const byCluster = new Map<number, Write[]>();
  for (let j = 0; j < W; j++) {
    const i = t + (j % 3);
    if (i < 0) continue;
    const c = Math.floor(i / 3);
    const kind = (['create', 'update', 'delete'] as const)[i % 3]!;
    if (openedBefore !== undefined && 3 * c - (j % 3) >= openedBefore) continue;
    const n = c * W + j;
    const sub = `${tag}-l${j}-c${c}`;
    const [first, second] = [ip('198.18', n), ip('198.19', n)];
    const write: Write =
      kind === 'create' ? { kind, sub, after: first } : kind === 'update' ? { kind, sub, before: first, after: second } : { kind, sub, before: second };
    const cluster = n % k;
    byCluster.set(cluster, [...(byCluster.get(cluster) ?? []), write]);
  }
  return byCluster;
}

const SETUP_LOOPS = [-2, -1];
const CLEANUP_LOOPS = [T, T + 1];

/** The bench records of a zone after loops -2 .. loops-1 (name -> target). */
function expectedAfter(loops: number, k: number, tag: string): Map<string, string> {
  const state = new Map<string, string>();
  for (let t = -2; t < loops; t++) {
    for (const writes of writesOf(t, k, tag).values()) {
      for (const w of writes) {
        if (w.kind === 'delete') state.delete(w.sub);
        else state.set(w.sub, w.after!);
      }
    }
  }
  return state;
}

/**
 * The lower bound of the T measured loops: one operation per write, and per loop one refresh per
 * APPLY_BATCH operations (a loop's applies arrive together: one refresh may publish them all).
 */
function lowerBound(k: number): number {
  let calls = 0;
  for (let t = 0; t < T; t++) {
    const ops = [...writesOf(t, k, 'x').values()].reduce((n, ws) => n + ws.length, 0);
    calls += ops + Math.ceil(ops / APPLY_BATCH);
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
    const route = c.path === '/domain/zone' ? '/domain/zone' : c.path.replace(/^\/domain\/zone\/[^/]+/, '…').replace(/\/record\/\d+$/, '/record/{id}');
    const key = `${c.method} ${route}`;
    by.set(key, (by.get(key) ?? 0) + 1);
  }
  return [...by.entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');
}

function checkZone(sim: OvhSimulator, zone: string, tag: string, want: Map<string, string>, who: string): void {
  const published = sim.publishedRecords(zone).filter((r) => r.subDomain.startsWith(`${tag}-`));
  const have = new Map(published.map((r) => [r.subDomain, r.target]));
  const ok = have.size === published.length && have.size === want.size && [...want].every(([k, v]) => have.get(k) === v);
  if (!ok) throw new Error(`${who}: zone ${zone} does not hold what the writes asked for: ${JSON.stringify([...have])} vs ${JSON.stringify([...want])}`);
}

function since(from: number): number {
  return performance.now() - from;
}

interface Run {
  calls: number;
  detail: string;
  wallMs: number;
  dnsQueries?: number;
  /** The wall time the rate limit alone imposes (the busiest cluster's calls / rate). */
  floorMs?: number;
}

// --- dnsplane side ---

function endpoint(zone: string, sub: string, target: string): Endpoint {
  return create(EndpointSchema, { dnsName: `${sub}.${zone}`, recordType: 'A', targets: [target], ttl: TTL });
}

/** A cluster's writes as an external-dns change set (each write names one 1-target record set). */
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

async function runDnsplane(sim: OvhSimulator, server: Server, zone: string, k: number, n: number): Promise<Run> {
  const tag = `d${k}n${n}`;
  const clients: Array<{ client: ZoneClient; generation?: bigint }> = [];
  for (let c = 0; c < k; c++) {
    const { token } = await createTenant(server.ctx.pool, { name: `${tag}-c${c}`, zones: [zone] });
    clients.push({ client: zoneClientFor(server, token) });
  }
  const poll = async (cl: (typeof clients)[number]) => {
    const res = await cl.client.records({ zones: [zone], knownGenerations: cl.generation === undefined ? {} : { [zone]: cl.generation } });
    const z = res.zones[0]!;
    if (!z.notModified) cl.generation = z.generation;
  };
  const applyLoop = (t: number, openedBefore?: number) =>
    Promise.all(
      [...writesOf(t, k, tag, openedBefore)].map(async ([c, writes]) => {
        const res = await clients[c]!.client.apply({ source: { case: 'plan', value: { input: { case: 'changes', value: changesOf(zone, writes) } } } });
        const z = res.zones[0]!;
        if (z.status !== ApplyStatus.APPLIED) throw new Error(`dnsplane: apply of cluster ${c} in loop ${t}: ${ApplyStatus[z.status]} ${z.error}`);
      }),
    );

  for (const t of SETUP_LOOPS) await applyLoop(t); // not measured: the lanes' first records
  await Promise.all(clients.map(poll)); // every cluster's first read (from the cache)
  sim.clearCalls();

  const started = performance.now();
  for (let t = 0; t < T; t++) {
    await Promise.all(clients.map(poll));
    await applyLoop(t);
  }
  const wallMs = since(started);
  const calls = apiCalls(sim);
  checkZone(sim, zone, tag, expectedAfter(T, k, tag), 'dnsplane');
  for (const t of CLEANUP_LOOPS) await applyLoop(t, T); // not measured: leave the zone as it was
  checkZone(sim, zone, tag, new Map(), 'dnsplane (cleanup)');
  return { calls: calls.length, detail: breakdown(calls), wallMs };
}

// --- coalescing: many clusters apply one change each to one zone at the same moment ---

interface Moment {
  kind: WriteKind;
  applies: number;
  calls: number;
  refreshes: number;
  wallMs: number;
  /** Per apply, from the call to its answer. */
  meanMs: number;
  maxMs: number;
}

/**
 * COALESCE_K clusters (tenants), each its own record set in `zone`: all create theirs at the same
 * moment, then all update them, then all delete them; each moment measured on its own.
 */
async function runMoments(sim: OvhSimulator, server: Server, zone: string, tag: string): Promise<Moment[]> {
  const clients: ZoneClient[] = [];
  for (let c = 0; c < COALESCE_K; c++) {
    const { token } = await createTenant(server.ctx.pool, { name: `${tag}-c${c}`, zones: [zone] });
    clients.push(zoneClientFor(server, token));
  }
  sim.faults.setLatency(0);
  await Promise.all(clients.map((cl) => cl.records({ zones: [zone] }))); // tokens known, zone synced: not measured
  sim.faults.setLatency(LATENCY_MS);
  const sub = (c: number) => `${tag}-c${c}`;
  const moments: Moment[] = [];
  for (const kind of ['create', 'update', 'delete'] as const) {
    const writes = clients.map((_, c): Write => {
      const [first, second] = [ip('198.18', c), ip('198.19', c)];
      return kind === 'create'
        ? { kind, sub: sub(c), after: first }
        : kind === 'update'
          ? { kind, sub: sub(c), before: first, after: second }
          : { kind, sub: sub(c), before: second };
    });
    sim.clearCalls();
    const started = performance.now();
    const latencies = await Promise.all(
      clients.map(async (cl, c) => {
        const res = await cl.apply({ source: { case: 'plan', value: { input: { case: 'changes', value: changesOf(zone, [writes[c]!]) } } } });
        const z = res.zones[0]!;
        if (z.status !== ApplyStatus.APPLIED) throw new Error(`dnsplane (${tag}): ${kind} of cluster ${c}: ${ApplyStatus[z.status]} ${z.error}`);
        return since(started);
      }),
    );
    const wallMs = since(started);
    const calls = apiCalls(sim).filter((x) => x.path.startsWith(`/domain/zone/${zone}`));
    const want = new Map(writes.filter((w) => w.kind !== 'delete').map((w) => [w.sub, w.after!]));
    checkZone(sim, zone, tag, want, `dnsplane (${tag}, ${kind})`);
    moments.push({
      kind,
      applies: clients.length,
      calls: calls.length,
      refreshes: calls.filter((x) => x.method === 'POST' && x.path.endsWith('/refresh')).length,
      wallMs,
      meanMs: latencies.reduce((a, b) => a + b, 0) / latencies.length,
      maxMs: Math.max(...latencies),
    });
  }
  return moments;
}

// --- the external-dns v0.22 replay (test/helpers/external-dns-ovh.ts) ---

/** Every cluster's first read, 16 at a time, counted on the simulator (setup runs without latency or limit). */
async function coldReads(sim: OvhSimulator, clusters: ExternalDnsReplay[]): Promise<Run> {
  sim.clearCalls();
  const started = performance.now();
  for (let i = 0; i < clusters.length; i += 16) await Promise.all(clusters.slice(i, i + 16).map((c) => c.records()));
  const calls = apiCalls(sim);
  return { calls: calls.length, detail: breakdown(calls), wallMs: since(started) };
}

/**
 * The measured loops start: each cluster its own rate limiter, as each external-dns has, its counts
 * from zero; the simulator's latency on, its log cleared. Returns when.
 */
function measured(sim: OvhSimulator, clusters: ExternalDnsReplay[]): number {
  for (const c of clusters) {
    c.limiter = new RateLimiter(RATE, 256);
    c.apiCalls = 0;
    c.dnsQueries = 0;
  }
  sim.faults.setLatency(LATENCY_MS);
  sim.clearCalls();
  return performance.now();
}

async function runReplay(sim: OvhSimulator, zone: string, k: number, n: number): Promise<{ cold: Run; steady: Run }> {
  const tag = `e${k}n${n}`;
  const http = new OvhHttp({ endpoint: `${sim.apiUrl}/1.0`, ...sim.credentials, ca: sim.caPem });
  const resolver = simulatorDns(sim);
  // Setup, cold start and cleanup are not what this bench times: they run without latency and with
  // one shared, generous limiter; their calls are counted all the same.
  const fast = new RateLimiter(1e9, 64);
  const clusters = Array.from({ length: k }, () => new ExternalDnsReplay(http, zone, resolver, fast));
  const setup = new ExternalDnsReplay(http, zone, resolver, fast); // writes the lanes' first records, cleans up
  const applyLoop = async (t: number, by: (c: number) => ExternalDnsReplay, openedBefore?: number) => {
    const byCluster = [...writesOf(t, k, tag, openedBefore)];
    await Promise.all(byCluster.map(([c, writes]) => by(c).apply(changesOf(zone, writes))));
  };
  try {
    sim.faults.setLatency(0);
    for (const t of SETUP_LOOPS) {
      await setup.records();
      await applyLoop(t, () => setup);
    }
    const cold = await coldReads(sim, clusters);
    const started = measured(sim, clusters);
    for (let t = 0; t < T; t++) {
      await Promise.all(clusters.map((c) => c.records()));
      await applyLoop(t, (c) => clusters[c]!);
    }
    const wallMs = since(started);
    const calls = apiCalls(sim);
    const dnsQueries = clusters.reduce((s, c) => s + c.dnsQueries, 0);
    if (clusters.reduce((s, c) => s + c.apiCalls, 0) !== calls.length) throw new Error('replay: the simulator logged calls the replay did not make');
    const floorMs = (Math.max(...clusters.map((c) => c.apiCalls)) / RATE) * 1000;
    checkZone(sim, zone, tag, expectedAfter(T, k, tag), 'external-dns replay');

    sim.faults.setLatency(0);
    for (const t of CLEANUP_LOOPS) {
      await setup.records();
      await applyLoop(t, () => setup, T);
    }
    checkZone(sim, zone, tag, new Map(), 'external-dns replay (cleanup)');
    return { cold, steady: { calls: calls.length, detail: breakdown(calls), wallMs, dnsQueries, floorMs } };
  } finally {
    http.close();
  }
}

// --- external-dns pointed at the OVH API dnsplane serves (issue 25) ---

/**
 * The same replay, each cluster a tenant with its own OVH-style key, pointed at dnsplane's served OVH
 * API (`--ovh-endpoint=http://…/ovh/1.0`): its reads are answered from dnsplane's cache, its writes
 * staged and published by its refresh as one apply, coalesced with the other clusters'. Counted: the
 * calls dnsplane made to OVH (the simulator's log) and the calls the clusters made to dnsplane.
 */
async function runServed(sim: OvhSimulator, server: Server, zone: string, k: number): Promise<{ cold: Run; steady: Run & { served: number; idle: number } }> {
  const tag = `o${k}`;
  const resolver = servedDns(sim, server);
  const fast = new RateLimiter(1e9, 64);
  const links: OvhHttp[] = [];
  const clusters: ExternalDnsReplay[] = [];
  for (let c = 0; c < k; c++) {
    await createTenant(server.ctx.pool, { name: `${tag}-${zone.split('.')[0]}-c${c}`, zones: [zone] });
    const issued = await createOvhKey({ pool: server.ctx.pool, secrets: server.ctx.secrets, actor: null }, { tenant: `${tag}-${zone.split('.')[0]}-c${c}` });
    const link = new OvhHttp({
      endpoint: `${server.url}/ovh/1.0`,
      applicationKey: issued.key.applicationKey,
      applicationSecret: issued.applicationSecret,
      consumerKey: issued.consumerKey,
    });
    links.push(link);
    clusters.push(new ExternalDnsReplay(link, zone, resolver, fast));
  }
  const pollAll = () => Promise.all(clusters.map((c) => c.records()));
  const applyLoop = (t: number, openedBefore?: number) =>
    Promise.all([...writesOf(t, k, tag, openedBefore)].map(([c, writes]) => clusters[c]!.apply(changesOf(zone, writes))));
  try {
    sim.faults.setLatency(0);
    for (const t of SETUP_LOOPS) {
      await pollAll();
      await applyLoop(t);
    }
    const cold = await coldReads(sim, clusters);
    const started = measured(sim, clusters);
    for (let t = 0; t < T; t++) {
      await pollAll();
      await applyLoop(t);
    }
    const wallMs = since(started);
    const calls = apiCalls(sim);
    const served = clusters.reduce((s, c) => s + c.apiCalls, 0);
    checkZone(sim, zone, tag, expectedAfter(T, k, tag), 'external-dns through the served OVH API');
    // A loop with nothing changed: every cluster's cache checked (the SOA question to the served SOA's server).
    await pollAll();
    const idle = await unchangedLoop(clusters);

    sim.faults.setLatency(0);
    for (const t of CLEANUP_LOOPS) {
      await pollAll();
      await applyLoop(t, T);
    }
    checkZone(sim, zone, tag, new Map(), 'external-dns through the served OVH API (cleanup)');
    return { cold, steady: { calls: calls.length, detail: breakdown(calls), wallMs, served, idle } };
  } finally {
    for (const link of links) link.close();
  }
}

/** Where the replays reach the simulator's name servers' port 53 (OVH's SOA `server`). */
function simulatorDns(sim: OvhSimulator): DnsAt {
  return dnsAtOf(Object.fromEntries(sim.dnsServers.map((d) => [d.name, `${d.host}:${d.port}`])));
}

/** …and the served SOA's `server`, dnsplane's DNS door (127.0.0.1 here, its port 53 the door's port). */
function servedDns(sim: OvhSimulator, server: Server): DnsAt {
  const door = server.dns;
  const sims = simulatorDns(sim);
  return (name) => (door && name === door.host ? `${door.host}:${door.port}` : sims(name));
}

/** The requests to dnsplane (API calls and DNS questions) of one loop of every cluster in which nothing changed. */
async function unchangedLoop(clusters: ExternalDnsReplay[]): Promise<number> {
  const count = () => clusters.reduce((s, c) => s + c.apiCalls + c.dnsQueries, 0);
  const before = count();
  await Promise.all(clusters.map((c) => c.records()));
  return count() - before;
}

/**
 * One external-dns cluster owning a whole zone of n records through the served OVH API (its tenant
 * given every record set of the zone): the requests its loop costs dnsplane when nothing changed, after
 * a first (cold) read of every record. The zone is read by dnsplane from OVH's expanded lists (a server
 * of its own, DNSPLANE_OVH_EXPANDED_LISTS=on): this measures the served side, not the first sync.
 */
async function runIdle(sim: OvhSimulator, server: Server, zone: string): Promise<{ records: number; cold: number; idle: number; coldMs: number }> {
  const name = `idle-${zone.split('.')[0]}`;
  await createTenant(server.ctx.pool, { name, zones: [zone] });
  const tenant = (await server.ctx.pool.query<{ id: string }>('SELECT id::text AS id FROM tenants WHERE name = $1', [name])).rows[0]!.id;
  const issued = await createOvhKey({ pool: server.ctx.pool, secrets: server.ctx.secrets, actor: null }, { tenant: name });
  const link = new OvhHttp({
    endpoint: `${server.url}/ovh/1.0`,
    applicationKey: issued.key.applicationKey,
    applicationSecret: issued.applicationSecret,
    consumerKey: issued.consumerKey,
  });
  try {
    const replay = new ExternalDnsReplay(link, zone, servedDns(sim, server), new RateLimiter(1e9, 64));
    await replay.records(); // the zone's first read by dnsplane (nothing owned yet)
    const records = sim.publishedRecords(zone).filter((r) => r.fieldType === 'A');
    await withTransaction(server.ctx.pool, async (tx) => {
      for (const r of records) await setOwner(tx, { zone, dnsName: `${r.subDomain}.${zone}`, recordType: 'A', tenantId: tenant });
      await notifyZoneChanged(tx, zone, await bumpGeneration(tx, zone));
    });
    const started = performance.now();
    const before = replay.apiCalls + replay.dnsQueries;
    await replay.records();
    const cold = replay.apiCalls + replay.dnsQueries - before;
    const coldMs = since(started);
    const idle = await unchangedLoop([replay]);
    if (replay.seen.length !== records.length) throw new Error(`idle: the cluster saw ${replay.seen.length} records of ${records.length}`);
    return { records: records.length, cold, idle, coldMs };
  } finally {
    link.close();
  }
}

// --- main ---

function zoneRecords(n: number): SimRecordInit[] {
  // n records in all: OVH's 2 apex NS records plus n - 2 A records.
  return Array.from({ length: n - 2 }, (_, i) => ({ subDomain: `host${i}`, fieldType: 'A', target: ip('10.20', i), ttl: 3600 }));
}

function cell(s: string | number, width: number): string {
  return String(s).padStart(width);
}

function secs(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function table(head: string[], rows: Array<Array<string | number>>): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells: Array<string | number>) => `| ${cells.map((c, i) => cell(c, widths[i]!)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => `${'-'.repeat(w + 1)}:`).join('|')}|`, ...rows.map(line)];
}

async function main(): Promise<void> {
  const benchStarted = performance.now();
  const zones: Record<string, SimRecordInit[]> = {};
  for (const n of NS) {
    zones[`n${n}.dnsplane.bench`] = zoneRecords(n);
    zones[`n${n}.extdns.bench`] = zoneRecords(n);
    zones[`n${n}.expanded.bench`] = zoneRecords(n);
    zones[`n${n}.ovhapi.bench`] = zoneRecords(n);
  }
  const COALESCE_ON = 'coalesce.dnsplane.bench';
  const COALESCE_OFF = 'coalesce-off.dnsplane.bench';
  if (COALESCE_K > 0) zones[COALESCE_ON] = zones[COALESCE_OFF] = zoneRecords(100);
  const IDLE_ZONE = 'idle.ovhapi.bench';
  if (IDLE_N > 0) zones[IDLE_ZONE] = zoneRecords(IDLE_N);
  // OVH as documented: GET …/record answers ids, whatever paging header it is sent (the default).
  const sim = await OvhSimulator.start({ zones });
  const db = await benchDatabase('dnsplane_bench');
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-bench-'));
  const caFile = writeSimulatorCa(sim, dir);
  const serverEnv = (database: string | undefined, dataDir: string, zoneNames: string[], extra: Record<string, string> = {}) =>
    loadConfig({
      ...(database ? { DATABASE_URL: database } : {}),
      DNSPLANE_DATA_DIR: dataDir,
      DNSPLANE_LISTEN: '127.0.0.1:0',
      DNSPLANE_ZONES: zoneNames.join(','),
      ...simulatorEnv(sim, caFile),
      DNSPLANE_OVH_RATE: String(RATE),
      DNSPLANE_DRIFT_INTERVAL: '24h', // the drift check (one call per zone) is not part of these loops
      DNSPLANE_LOG_LEVEL: 'warn',
      ...extra,
    });
  // DNSPLANE_OVH_EXPANDED_LISTS left at its default (auto): against this OVH it falls back to one GET per id.
  // The served OVH API's zones too (issue 25); its keys' secrets are sealed under a key of this run.
  const server = await startServer(
    serverEnv(db.url, dir, [...NS.map((n) => `n${n}.dnsplane.bench`), ...NS.map((n) => `n${n}.ovhapi.bench`), ...(COALESCE_K > 0 ? [COALESCE_ON] : [])], {
      DNSPLANE_SECRETS_KEY: randomBytes(32).toString('base64'),
      DNSPLANE_DNS_LISTEN: '127.0.0.1:0',
    }),
    pino({ level: 'warn' }),
  );
  const say = (line = '') => console.log(line);
  try {
    say(
      `bench/ovh-calls: K=${KS.join(',')} N=${NS.join(',')} T=${T} W=${W}; simulator latency ${LATENCY_MS} ms per call; OVH rate ${RATE}/s (dnsplane: per application key; each external-dns: its own)`,
    );
    say(`Postgres: ${db.url ? 'a fresh database on DATABASE_URL' : 'embedded'}; node ${process.version}`);
    say();

    // dnsplane's cold start: one read of each zone, for every cluster there will ever be.
    sim.faults.setLatency(LATENCY_MS);
    const { token } = await createTenant(server.ctx.pool, { name: 'bench-warmup', zones: NS.map((n) => `n${n}.dnsplane.bench`) });
    const coldDnsplane = new Map<number, Run>();
    for (const n of NS) {
      sim.clearCalls();
      const started = performance.now();
      await zoneClientFor(server, token).records({ zones: [`n${n}.dnsplane.bench`] });
      const calls = apiCalls(sim);
      coldDnsplane.set(n, { calls: calls.length, detail: breakdown(calls), wallMs: since(started) });
    }

    // The same cold reads where OVH answers expanded record lists: a second server (its own database)
    // with DNSPLANE_OVH_EXPANDED_LISTS=on reads zones of the same sizes, same latency, same rate.
    const coldExpanded = new Map<number, Run>();
    sim.setBehavior({ expandedRecordLists: 'honoured' });
    {
      const db2 = await benchDatabase('dnsplane_bench');
      const dir2 = mkdtempSync(path.join(tmpdir(), 'dnsplane-bench-expanded-'));
      const expandedZones = NS.map((n) => `n${n}.expanded.bench`);
      const server2 = await startServer(serverEnv(db2.url, dir2, expandedZones, { DNSPLANE_OVH_EXPANDED_LISTS: 'on' }), pino({ level: 'warn' }));
      try {
        const t2 = await createTenant(server2.ctx.pool, { name: 'bench-expanded', zones: expandedZones });
        for (const n of NS) {
          sim.clearCalls();
          const started = performance.now();
          await zoneClientFor(server2, t2.token).records({ zones: [`n${n}.expanded.bench`] });
          const calls = apiCalls(sim);
          coldExpanded.set(n, { calls: calls.length, detail: breakdown(calls), wallMs: since(started) });
        }
      } finally {
        await server2.close();
        await db2.drop();
        rmSync(dir2, { recursive: true, force: true });
      }
    }
    sim.setBehavior({ expandedRecordLists: 'ignored' });

    const rows: Array<{
      k: number;
      n: number;
      bound: number;
      dnsplane: Run;
      ext: Run;
      extCold: Run;
      served: Run & { served: number; idle: number };
      servedCold: Run;
    }> = [];
    for (const n of NS) {
      for (const k of KS) {
        sim.faults.setLatency(LATENCY_MS);
        const dnsplane = await runDnsplane(sim, server, `n${n}.dnsplane.bench`, k, n);
        const e = await runReplay(sim, `n${n}.extdns.bench`, k, n);
        const o = await runServed(sim, server, `n${n}.ovhapi.bench`, k);
        rows.push({ k, n, bound: lowerBound(k), dnsplane, ext: e.steady, extCold: e.cold, served: o.steady, servedCold: o.cold });
        console.error(`  K=${k} N=${n} done (${secs(since(benchStarted))})`);
      }
    }

    // Coalescing: COALESCE_K clusters at the same moment, on this server (coalescing on, its default)
    // and on a second one (own database) with DNSPLANE_APPLY_COALESCE=off.
    let coalesced: { on: Moment[]; off: Moment[] } | undefined;
    if (COALESCE_K > 0) {
      const on = await runMoments(sim, server, COALESCE_ON, 'con');
      const db3 = await benchDatabase('dnsplane_bench');
      const dir3 = mkdtempSync(path.join(tmpdir(), 'dnsplane-bench-coalesce-off-'));
      const server3 = await startServer(serverEnv(db3.url, dir3, [COALESCE_OFF], { DNSPLANE_APPLY_COALESCE: 'off' }), pino({ level: 'warn' }));
      try {
        coalesced = { on, off: await runMoments(sim, server3, COALESCE_OFF, 'coff') };
      } finally {
        await server3.close();
        await db3.drop();
        rmSync(dir3, { recursive: true, force: true });
      }
      console.error(`  coalescing done (${secs(since(benchStarted))})`);
    }

    // One cluster owning a whole zone through the served OVH API: its loop when nothing changed.
    let idle: Awaited<ReturnType<typeof runIdle>> | undefined;
    if (IDLE_N > 0) {
      sim.faults.setLatency(0);
      sim.setBehavior({ expandedRecordLists: 'honoured' });
      const db4 = await benchDatabase('dnsplane_bench');
      const dir4 = mkdtempSync(path.join(tmpdir(), 'dnsplane-bench-idle-'));
      const unlimited = { DNSPLANE_OVH_API_RATE: '1000000', DNSPLANE_OVH_API_BURST: '1000000' };
      const server4 = await startServer(
        serverEnv(db4.url, dir4, [IDLE_ZONE], {
          DNSPLANE_OVH_EXPANDED_LISTS: 'on',
          DNSPLANE_SECRETS_KEY: randomBytes(32).toString('base64'),
          DNSPLANE_DNS_LISTEN: '127.0.0.1:0',
          ...unlimited,
        }),
        pino({ level: 'warn' }),
      );
      try {
        idle = await runIdle(sim, server4, IDLE_ZONE);
      } finally {
        await server4.close();
        await db4.drop();
        rmSync(dir4, { recursive: true, force: true });
        sim.setBehavior({ expandedRecordLists: 'ignored' });
      }
      console.error(`  unchanged loop done (${secs(since(benchStarted))})`);
    }

    // Cold reads have their own lower bounds: with ids only, the listing, one GET per record and the
    // SOA (N + 2); with expanded lists, the SOA and one call per page.
    const coldBound = (n: number) => n + 2;
    const expandedBound = (n: number) => 1 + Math.max(1, Math.ceil(n / DEFAULT_EXPANDED_PAGE_SIZE));
    const exact =
      rows.every((r) => r.dnsplane.calls === r.bound) &&
      NS.every((n) => coldDnsplane.get(n)!.calls === coldBound(n) && coldExpanded.get(n)!.calls === expandedBound(n));
    say(`Steady state, ${T} loops, every cache warm at the start: OVH API calls as the simulator logged them (GET /auth/time left out).`);
    say();
    for (const line of table(
      [
        'K',
        'N',
        'lower bound',
        'dnsplane',
        'dnsplane / bound',
        'external-dns',
        'external-dns / dnsplane',
        '+ DNS SOA queries',
        'wall dnsplane',
        'wall external-dns',
        'its rate-limit floor',
      ],
      rows.map((r) => [
        r.k,
        r.n,
        r.bound,
        r.dnsplane.calls,
        (r.dnsplane.calls / r.bound).toFixed(2),
        r.ext.calls,
        `${(r.ext.calls / r.dnsplane.calls).toFixed(1)}x`,
        r.ext.dnsQueries ?? 0,
        secs(r.dnsplane.wallMs),
        secs(r.ext.wallMs),
        secs(r.ext.floorMs ?? 0),
      ]),
    ))
      say(line);
    say();
    say('The same external-dns clusters pointed at the OVH API dnsplane serves (--ovh-endpoint=http://…/ovh/1.0; each cluster a tenant with');
    say('its own OVH-style key): the OVH calls dnsplane made for them, against the same clusters talking to OVH directly and the lower bound.');
    say("Their polls are answered from dnsplane's cache (after a change: the zones, the SOA, the ids, each record; when nothing changed: the zones");
    say("and one SOA question to the served SOA's server, dnsplane's DNS door); their writes are staged and each cluster's refresh is one apply,");
    say('coalesced with the others\' that wait for the zone. "unchanged loop": the requests to dnsplane (API calls and DNS questions) of one loop of');
    say('every cluster when nothing changed.');
    say();
    for (const line of table(
      [
        'K',
        'N',
        'lower bound',
        'via dnsplane',
        'via dnsplane / bound',
        'external-dns direct',
        'direct / via dnsplane',
        'calls to dnsplane',
        'unchanged loop',
        'cold start (OVH calls)',
        'wall via dnsplane',
      ],
      rows.map((r) => [
        r.k,
        r.n,
        r.bound,
        r.served.calls,
        (r.served.calls / r.bound).toFixed(2),
        r.ext.calls,
        `${(r.ext.calls / r.served.calls).toFixed(1)}x`,
        r.served.served,
        r.served.idle,
        r.servedCold.calls,
        secs(r.served.wallMs),
      ]),
    ))
      say(line);
    say();
    if (idle) {
      say(`One external-dns cluster owning a whole zone of ${idle.records} records through the served OVH API: a loop with nothing changed costs`);
      say(`dnsplane ${idle.idle} requests (API calls and DNS questions); its first read of the zone cost ${idle.cold} (${secs(idle.coldMs)}).`);
      say();
    }
    say('Cold start (dnsplane: once per zone, whatever K; external-dns: once per cluster). dnsplane where OVH answers ids only (one GET per record)');
    say(`and where it answers expanded record lists (pages of ${DEFAULT_EXPANDED_PAGE_SIZE} records), each beside its lower bound:`);
    say();
    for (const line of table(
      ['K', 'N', 'external-dns', 'dnsplane, ids', 'bound', 'wall', 'dnsplane, expanded', 'bound', 'wall', 'calls saved'],
      rows.map((r) => {
        const [ids, exp] = [coldDnsplane.get(r.n)!, coldExpanded.get(r.n)!];
        return [
          r.k,
          r.n,
          r.extCold.calls,
          ids.calls,
          coldBound(r.n),
          secs(ids.wallMs),
          exp.calls,
          expandedBound(r.n),
          secs(exp.wallMs),
          `${(ids.calls / exp.calls).toFixed(0)}x`,
        ];
      }),
    ))
      say(line);
    say();
    if (coalesced) {
      const bound = (m: Moment) => m.applies + Math.ceil(m.applies / APPLY_BATCH);
      const ms = (x: number) => `${Math.round(x)} ms`;
      say(
        `Coalescing: ${COALESCE_K} clusters each apply one change to one zone at the same moment (one moment per row), OVH rate ${RATE}/s, ${LATENCY_MS} ms per call.`,
      );
      say(
        'Lower bound: one operation per apply, plus one refresh per DNSPLANE_APPLY_BATCH (100) operations. "off": DNSPLANE_APPLY_COALESCE=off (one refresh per apply);',
      );
      say('"on": the default (2s). Latency: from each Apply call to its answer, mean / max.');
      say();
      for (const line of table(
        [
          'moment',
          'applies',
          'lower bound',
          'off: calls',
          'refreshes',
          'wall',
          'latency',
          'on: calls',
          'refreshes',
          'wall',
          'latency',
          'on / bound',
          'off / on, calls',
          'wall',
        ],
        coalesced.on.map((on, i) => {
          const off = coalesced!.off[i]!;
          return [
            on.kind,
            on.applies,
            bound(on),
            off.calls,
            off.refreshes,
            secs(off.wallMs),
            `${ms(off.meanMs)} / ${ms(off.maxMs)}`,
            on.calls,
            on.refreshes,
            secs(on.wallMs),
            `${ms(on.meanMs)} / ${ms(on.maxMs)}`,
            (on.calls / bound(on)).toFixed(2),
            `${(off.calls / on.calls).toFixed(2)}x`,
            `${(off.wallMs / on.wallMs).toFixed(2)}x`,
          ];
        }),
      ))
        say(line);
      say();
    }
    say('The calls (cold start of dnsplane):');
    for (const n of NS) say(`- N=${n}: ids ${coldDnsplane.get(n)!.detail}; expanded ${coldExpanded.get(n)!.detail}`);
    say();
    say('The calls (steady state):');
    for (const r of rows) {
      say(
        `- K=${r.k} N=${r.n}: dnsplane ${r.dnsplane.detail || 'none'}; external-dns ${r.ext.detail}; external-dns via the served OVH API ${r.served.detail || 'none'}`,
      );
    }
    say();
    say(
      `dnsplane / lower bound: ${exact ? 'exactly 1.00 in every steady-state and cold-start scenario' : 'NOT 1.00 in every steady-state and cold-start scenario: a bug in dnsplane'}. Bench time ${secs(since(benchStarted))}.`,
    );
    if (!exact) process.exitCode = 1;
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
