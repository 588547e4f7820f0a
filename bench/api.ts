/**
 * bench/api — one tenant never slows the others (issue 10). `npm run bench:api`; not part of `npm test`.
 *
 * Starts a real `dnsplane serve` as a child process (its own event loop, memory and CPU, as in
 * production) on real Postgres (a fresh database on DATABASE_URL's server, else an embedded one) and
 * the OVH simulator over HTTPS (in this process), with a zone of 1,000 records, and measures with 16
 * concurrent clients speaking Connect JSON over HTTP/1.1:
 *
 *  1. Records not-modified polls per second (each client sends the generation it has);
 *  2. full Records answers of the 1,000-record zone per second, beside the raw SELECT of the same rows
 *     (store.listRecords, 16 concurrent connections) in the same run, and their ratio;
 *  3. Plan server time (dnsplane_rpc_duration_seconds of the server) at 1k / 2k / 5k endpoints;
 *  4. during the 5k Plan: the server's worst event-loop delay (nodejs_eventloop_lag_max_seconds over
 *     exactly that Plan) and the p99 of /healthz probed every 10 ms from a worker thread;
 *  5. after a restart with DNSPLANE_OVH_RATE=BENCH_RATE and the simulator holding each call
 *     BENCH_LATENCY_MS: tenant A applies BENCH_BULK creates to the big zone; meanwhile tenant B applies
 *     one record to another zone, then one record to the same zone: their latencies and outcomes;
 *  6. the server's resident memory (process_resident_memory_bytes), the highest seen at any scrape.
 *
 * Environment (all optional):
 *   BENCH_CLIENTS=16      concurrent clients          BENCH_SECONDS=5     seconds per throughput figure
 *   BENCH_PLANS=1000,2000,5000  Plan sizes (endpoints) BENCH_REPEAT=3      Plans per size (median shown)
 *   BENCH_BULK=1000       tenant A's bulk creates     BENCH_RATE=20       DNSPLANE_OVH_RATE for part 5
 *   BENCH_LATENCY_MS=30   simulator latency per call in part 5
 *   BENCH_CPU_PROF=dir    the server writes a V8 CPU profile (node --cpu-prof) into dir when it stops
 *   DATABASE_URL          a Postgres server to create the bench database on (dropped at the end)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Code, ConnectError, createClient, type Client, type Interceptor } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import pg from 'pg';
import { createTenant } from '../src/core/tenants.js';
import { ApplyStatus, Policy, ZoneService, type Endpoint } from '../src/gen/dnsplane/v1/zone_pb.js';
import { OvhSimulator, type SimRecordInit } from '../src/ovhsim/index.js';
import * as store from '../src/store/index.js';

// --- parameters ---

function num(name: string, fallback: string, min: number): number {
  const raw = process.env[name] ?? fallback;
  const v = Number(raw);
  if (!Number.isInteger(v) || v < min) throw new Error(`${name}: expected an integer >= ${min}, got "${raw}"`);
  return v;
}
const CLIENTS = num('BENCH_CLIENTS', '16', 1);
const SECONDS = num('BENCH_SECONDS', '5', 1);
const PLANS = (process.env['BENCH_PLANS'] ?? '1000,2000,5000').split(',').map((s) => Number(s.trim()));
if (PLANS.some((n) => !Number.isInteger(n) || n < 1 || n > 5000)) throw new Error('BENCH_PLANS: expected sizes in 1..5000 (the per-request limit)');
const REPEAT = num('BENCH_REPEAT', '3', 1);
const BULK = num('BENCH_BULK', '1000', 1);
const RATE = num('BENCH_RATE', '20', 1);
const LATENCY_MS = num('BENCH_LATENCY_MS', '30', 0);

const BIG = 'big.bench'; // 1,000 records: OVH's 2 apex NS + 998 A records owned by tenant A
const SMALL = 'small.bench';
const OWNED = 998;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const ip = (prefix: string, n: number) => `${prefix}.${(n >> 8) & 255}.${n & 255}`;
const say = (line = '') => console.log(line);
const note = (line: string) => console.error(`  ${line}`);

// --- the server, as a child process ---

interface Child {
  url: string;
  proc: ChildProcess;
  stop(): Promise<void>;
}

async function startChild(env: Record<string, string>): Promise<Child> {
  // BENCH_CPU_PROF=dir: the server writes a V8 CPU profile there when it stops (node --cpu-prof).
  const prof = process.env['BENCH_CPU_PROF'] ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env['BENCH_CPU_PROF'])}`] : [];
  const proc = spawn(process.execPath, [...prof, path.join(ROOT, 'bin/dnsplane.js'), 'serve'], {
    cwd: ROOT,
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const errors: string[] = [];
  proc.stderr!.on('data', (b: Buffer) => errors.push(b.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: proc.stdout! });
    lines.on('line', (line) => {
      try {
        const o = JSON.parse(line) as { msg?: string; url?: string; level?: number; err?: string };
        if (o.msg?.startsWith('dnsplane is serving') && o.url) resolve(o.url);
        else if ((o.level ?? 0) >= 50) errors.push(line);
      } catch {
        // not a log line
      }
    });
    proc.once('exit', (code) => reject(new Error(`dnsplane serve exited with ${code}: ${errors.join('').slice(0, 2000)}`)));
  });
  return {
    url,
    proc,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
  };
}

// --- clients and scrapes ---

type ZoneClient = Client<typeof ZoneService>;

function client(url: string, token: string): ZoneClient {
  const auth: Interceptor = (next) => (req) => {
    req.header.set('authorization', `Bearer ${token}`);
    return next(req);
  };
  return createClient(ZoneService, createConnectTransport({ baseUrl: url, httpVersion: '1.1', useBinaryFormat: false, interceptors: [auth] }));
}

let maxRss = 0;

/** One scrape of /metrics: series name{labels} -> value. */
async function scrape(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^(\S+?)(\{.*\})? (\S+)$/.exec(line);
    if (m) out.set(`${m[1]}${m[2] ?? ''}`, Number(m[3]));
  }
  maxRss = Math.max(maxRss, out.get('process_resident_memory_bytes') ?? 0);
  return out;
}

/** How many times `fn` completes in SECONDS with CLIENTS running it in parallel, per second. */
async function throughput(fn: (i: number) => Promise<unknown>): Promise<number> {
  const end = performance.now() + SECONDS * 1000;
  const started = performance.now();
  let n = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, i) => {
      while (performance.now() < end) {
        await fn(i);
        n++;
      }
    }),
  );
  return n / ((performance.now() - started) / 1000);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
}

/** Probes GET /healthz every 10 ms from a worker thread (its own event loop) until stopped. */
function healthProbe(url: string): { stop(): Promise<{ latencies: number[]; errors: number }> } {
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const http = require('node:http');
     const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
     const latencies = []; let errors = 0; let stop = false;
     parentPort.on('message', () => { stop = true; });
     (async () => {
       while (!stop) {
         const t = performance.now();
         const ok = await new Promise((res) => {
           const req = http.get(workerData + '/healthz', { agent }, (r) => { r.resume(); r.on('end', () => res(r.statusCode === 200)); });
           req.on('error', () => res(false));
         });
         if (ok) latencies.push(performance.now() - t); else errors++;
         await new Promise((r) => setTimeout(r, 10));
       }
       agent.destroy();
       parentPort.postMessage({ latencies, errors });
     })();`,
    { eval: true, workerData: url },
  );
  return {
    stop: () =>
      new Promise((resolve) => {
        worker.once('message', (m: { latencies: number[]; errors: number }) => {
          void worker.terminate();
          resolve(m);
        });
        worker.postMessage('stop');
      }),
  };
}

// --- the figures ---

/**
 * n endpoints of the big zone: the 998 sets A owns (with `changed`, every other one with a new target:
 * updates), then new names (creates).
 */
function desired(n: number, changed = true): Endpoint[] {
  return Array.from({ length: n }, (_, i) => ({ dnsName: `host${i}.${BIG}`, recordType: 'A', targets: [ip(changed && i < OWNED && i % 2 === 1 ? '10.30' : '10.20', i)], ttl: 3600 }) as Endpoint);
}

function planRequest(endpoints: Endpoint[]) {
  return { policy: Policy.SYNC, input: { case: 'desired' as const, value: { zones: [BIG], endpoints } } };
}

async function benchDatabase(dir: string): Promise<{ db: store.Database; drop(): Promise<void>; kind: string }> {
  const base = process.env['DATABASE_URL'];
  if (!base) {
    const db = await store.openDatabase({ dataDir: dir });
    return { db, drop: async () => undefined, kind: 'embedded' };
  }
  const name = `dnsplane_bench_api_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)}`);
  await admin.end();
  const u = new URL(base);
  u.pathname = `/${name}`;
  const db = await store.openDatabase({ databaseUrl: u.toString(), dataDir: dir, poolMax: CLIENTS + 4 });
  return {
    db,
    kind: 'a fresh database on DATABASE_URL',
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(name)} WITH (FORCE)`);
      await c.end();
    },
  };
}

function ms(x: number): string {
  return `${x < 10 ? x.toFixed(1) : Math.round(x)} ms`;
}

async function main(): Promise<void> {
  const benchStarted = performance.now();
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-bench-api-'));
  const zones: Record<string, SimRecordInit[]> = { [BIG]: [], [SMALL]: [] };
  const sim = await OvhSimulator.start({ zones });
  const caFile = path.join(dir, 'ca.pem');
  writeFileSync(caFile, sim.caPem);
  const { db, drop, kind } = await benchDatabase(dir);
  let child: Child | undefined;
  const rows: Array<[string, string, string]> = [];
  try {
    await store.migrate(db.pool);
    const a = (await createTenant(db.pool, { name: 'tenant-a', zones: [BIG, SMALL] })).token;
    const b = (await createTenant(db.pool, { name: 'tenant-b', zones: [BIG, SMALL] })).token;
    const env = (rate: number) => ({
      DATABASE_URL: db.url,
      DNSPLANE_DATA_DIR: dir,
      DNSPLANE_LISTEN: '127.0.0.1:0',
      DNSPLANE_WEBHOOK_LISTEN: 'off',
      DNSPLANE_ZONES: `${BIG},${SMALL}`,
      DNSPLANE_DRIFT_INTERVAL: 'off',
      DNSPLANE_LOG_LEVEL: 'info',
      DNSPLANE_OVH_RATE: String(rate),
      OVH_ENDPOINT: sim.apiUrl,
      OVH_APPLICATION_KEY: sim.credentials.applicationKey,
      OVH_APPLICATION_SECRET: sim.credentials.applicationSecret,
      OVH_CONSUMER_KEY: sim.credentials.consumerKey,
      OVH_CA_FILE: caFile,
    });

    // Setup (not measured): tenant A creates its 998 records; the zone then holds 1,000.
    child = await startChild(env(1000));
    const ca = client(child.url, a);
    let t = performance.now();
    await ca.apply({ source: { case: 'plan', value: planRequest(desired(OWNED, false)) } });
    await client(child.url, b).records({ zones: [SMALL] });
    note(`setup: ${sim.draftRecords(BIG).length} records in ${BIG} (${Math.round(performance.now() - t)} ms)`);

    // 1. not-modified polls.
    const clients = Array.from({ length: CLIENTS }, () => client(child!.url, a));
    const gen = (await ca.records({ zones: [BIG] })).zones[0]!.generation;
    const polls = await throughput(async (i) => {
      const r = await clients[i]!.records({ zones: [BIG], knownGenerations: { [BIG]: gen } });
      if (!r.zones[0]!.notModified) throw new Error('a poll was not answered notModified');
    });
    rows.push(['Records notModified polls', `${Math.round(polls)}/s`, `${CLIENTS} clients, ${SECONDS} s`]);
    note(`polls: ${Math.round(polls)}/s`);

    // 2. full answers beside the raw SELECT of the same rows.
    const full = await throughput(async (i) => {
      const r = await clients[i]!.records({ zones: [BIG], includeForeign: true });
      if (r.zones[0]!.endpoints.length !== 1000 - 1) throw new Error(`expected 999 record sets, got ${r.zones[0]!.endpoints.length}`);
    });
    const select = await throughput(async () => {
      const r = await store.listRecords(db.pool, BIG);
      if (r.length !== 1000) throw new Error(`expected 1000 rows, got ${r.length}`);
    });
    rows.push(['Records full answer (1,000 records)', `${Math.round(full)}/s`, `${CLIENTS} clients`]);
    rows.push(['raw SELECT of the same rows', `${Math.round(select)}/s`, `${CLIENTS} connections, same run`]);
    rows.push(['full answer / raw SELECT', (full / select).toFixed(2), '>= 1.00: the answer costs no more than reading its rows']);
    note(`full: ${Math.round(full)}/s, select: ${Math.round(select)}/s`);

    // 3. Plan server time by size; 4. during the largest, the event loop and /healthz.
    const planKey = '{procedure="/dnsplane.v1.ZoneService/Plan"}';
    let during: { lagMs: number; healthP99: number; healthMax: number; probes: number; errors: number } | undefined;
    for (const n of PLANS) {
      const endpoints = desired(n);
      const times: number[] = [];
      const cpus: number[] = [];
      for (let r = 0; r < REPEAT; r++) {
        const last = n === PLANS[PLANS.length - 1] && r === REPEAT - 1;
        const before = await scrape(child.url); // also resets nodejs_eventloop_lag_* (per-scrape gauges)
        const probe = last ? healthProbe(child.url) : undefined;
        t = performance.now();
        const p = await ca.plan(planRequest(endpoints));
        const wall = performance.now() - t;
        const health = await probe?.stop();
        const after = await scrape(child.url);
        const server = ((after.get(`dnsplane_rpc_duration_seconds_sum${planKey}`) ?? 0) - (before.get(`dnsplane_rpc_duration_seconds_sum${planKey}`) ?? 0)) * 1000;
        times.push(server);
        // The server's CPU (user + system) over the call: what the Plan cost, however busy the machine.
        const cpu = ((after.get('process_cpu_seconds_total') ?? 0) - (before.get('process_cpu_seconds_total') ?? 0)) * 1000;
        cpus.push(cpu);
        const changes = p.plan!.zones[0]!.changes.length;
        note(`plan ${n}: server ${ms(server)} (cpu ${ms(cpu)}), client wall ${ms(wall)}, ${changes} changes`);
        if (health) {
          during = {
            lagMs: (after.get('nodejs_eventloop_lag_max_seconds') ?? NaN) * 1000,
            healthP99: percentile(health.latencies, 99),
            healthMax: Math.max(...health.latencies),
            probes: health.latencies.length,
            errors: health.errors,
          };
        }
      }
      rows.push([`Plan of ${n.toLocaleString('en')} endpoints, server time`, ms(median(times)), `median of ${REPEAT}; min ${ms(Math.min(...times))}, max ${ms(Math.max(...times))}`]);
      rows.push([`  its server CPU`, ms(median(cpus)), 'process_cpu_seconds_total of the server over the call (a scrape included)']);
    }
    if (during) {
      const n = PLANS[PLANS.length - 1]!.toLocaleString('en');
      rows.push([`worst event-loop delay during the ${n} Plan`, ms(during.lagMs), 'nodejs_eventloop_lag_max_seconds over exactly that Plan']);
      rows.push([`/healthz p99 during the ${n} Plan`, ms(during.healthP99), `${during.probes} probes every 10 ms, max ${ms(during.healthMax)}, ${during.errors} failed`]);
    }

    // 5. Restart with the production rate limit and simulator latency: B's applies during A's bulk apply.
    await child.stop();
    sim.faults.setLatency(LATENCY_MS);
    child = await startChild(env(RATE));
    const ca2 = client(child.url, a);
    const cb2 = client(child.url, b);
    sim.clearCalls();
    t = performance.now();
    const bulk = ca2
      .apply({ source: { case: 'plan', value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [BIG], endpoints: Array.from({ length: BULK }, (_, i) => ({ dnsName: `bulk${i}.${BIG}`, recordType: 'A', targets: [ip('10.40', i)], ttl: 3600 }) as Endpoint) } } } } })
      .then(
        (r) => ({ ok: true, ms: performance.now() - t, status: ApplyStatus[r.zones[0]!.status] }),
        (e: unknown) => ({ ok: false, ms: performance.now() - t, status: e instanceof ConnectError ? Code[e.code] : String(e) }),
      );
    // Wait until A's apply is sending (its first POSTs reached the simulator).
    while (sim.calls().filter((c) => c.method === 'POST').length < 5) await new Promise((r) => setTimeout(r, 50));
    const one = async (zone: string, name: string) => {
      const s = performance.now();
      try {
        const r = await cb2.apply({ source: { case: 'plan', value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [zone], endpoints: [{ dnsName: `${name}.${zone}`, recordType: 'A', targets: ['192.0.2.7'], ttl: 3600 } as Endpoint] } } } } });
        return { ms: performance.now() - s, status: ApplyStatus[r.zones[0]!.status] };
      } catch (e) {
        return { ms: performance.now() - s, status: e instanceof ConnectError ? Code[e.code] : String(e) };
      }
    };
    const other = await one(SMALL, 'b-other');
    note(`B, other zone: ${ms(other.ms)} ${other.status}`);
    const same = await one(BIG, 'b-same');
    note(`B, same zone: ${ms(same.ms)} ${same.status}`);
    const a5 = await bulk;
    note(`A's bulk apply: ${ms(a5.ms)} ${a5.status}`);
    const during5 = `during A's ${BULK.toLocaleString('en')}-create apply (OVH rate ${RATE}/s, ${LATENCY_MS} ms per call)`;
    rows.push(["tenant B's 1-record apply, other zone", `${ms(other.ms)} ${other.status}`, during5]);
    rows.push(["tenant B's 1-record apply, same zone", `${ms(same.ms)} ${same.status}`, during5]);
    rows.push([`tenant A's ${BULK.toLocaleString('en')}-create apply`, `${(a5.ms / 1000).toFixed(1)} s ${a5.status}`, `its rate-limit floor alone: ${(BULK / RATE).toFixed(0)} s`]);
    await scrape(child.url);
    rows.push(['server RSS (highest scrape)', `${Math.round(maxRss / 1024 / 1024)} MiB`, 'process_resident_memory_bytes of the dnsplane process']);

    say(`bench/api: ${CLIENTS} clients, Connect JSON over HTTP/1.1, zone ${BIG} of 1,000 records; server: dnsplane serve as a child process`);
    say(`Postgres: ${kind}; node ${process.version}; bench time ${((performance.now() - benchStarted) / 1000).toFixed(0)} s; load average at the end ${loadavg().map((x) => x.toFixed(1)).join(' ')} on ${availableParallelism()} cores`);
    say();
    const w = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i]!.length), ['figure', 'value', 'how'][i]!.length));
    say(`| ${'figure'.padEnd(w[0]!)} | ${'value'.padStart(w[1]!)} | ${'how'.padEnd(w[2]!)} |`);
    say(`|${'-'.repeat(w[0]! + 2)}|${'-'.repeat(w[1]! + 1)}:|${'-'.repeat(w[2]! + 2)}|`);
    for (const r of rows) say(`| ${r[0].padEnd(w[0]!)} | ${r[1].padStart(w[1]!)} | ${r[2].padEnd(w[2]!)} |`);
  } finally {
    await child?.stop();
    await sim.stop();
    await db.close();
    await drop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
