/**
 * What the benches share to set themselves up: their numeric settings, a fresh database on
 * DATABASE_URL's server (dropped at the end) or an embedded Postgres, the simulator's CA written
 * where a server's OVH_CA_FILE can read it, and a `dnsplane serve` as a child process. The OVH_* settings for a simulator and the Connect
 * clients come from test/helpers/sim-server.ts (simulatorEnv, zoneClientFor), as the tests use them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import pino from 'pino';
import type { CoreContext } from '../src/core/context.js';
import { readCacheOf } from '../src/core/reads/read-cache.js';
import { heardZoneChange } from '../src/core/reads/zone-memory.js';
import { OvhApi } from '../src/ovh/client.js';
import type { OvhSimulator, SimOptions } from '../src/ovhsim/index.js';
import * as store from '../src/store/index.js';

/** A positive number from the environment variable name, or fallback when it is not set. */
export function positiveEnv(name: string, fallback: number): number {
  const v = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name}: expected a positive number`);
  return v;
}

export interface BenchDatabase {
  /** Connection URL of the fresh database; undefined when DATABASE_URL is not set (embedded Postgres). */
  url: string | undefined;
  /** Drops the database (forcing out leftover sessions); nothing to do when url is undefined. */
  drop(): Promise<void>;
}

async function admin(base: string, sql: (c: pg.Client) => string): Promise<void> {
  const c = new pg.Client({ connectionString: base });
  await c.connect();
  try {
    await c.query(sql(c));
  } finally {
    await c.end();
  }
}

/**
 * A fresh database named `${prefix}_<random>` on DATABASE_URL's server, or, when DATABASE_URL is not
 * set, no URL (the caller falls back to an embedded Postgres).
 */
export async function benchDatabase(prefix: string): Promise<BenchDatabase> {
  const base = process.env['DATABASE_URL'];
  if (!base) return { url: undefined, drop: async () => undefined };
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  await admin(base, (c) => `CREATE DATABASE ${c.escapeIdentifier(name)}`);
  const u = new URL(base);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    drop: () => admin(base, (c) => `DROP DATABASE IF EXISTS ${c.escapeIdentifier(name)} WITH (FORCE)`),
  };
}

/** A core context in this process (bench/apply-scale, bench/plan-scale): see coreBench. */
export interface CoreBench {
  ctx: CoreContext;
  pool: pg.Pool;
  /** The fresh database's URL (for a second replica's pools). */
  url: string | undefined;
  /** The last generation of each zone this process heard by NOTIFY. */
  heard: ReadonlyMap<string, bigint>;
  /** Ends the pools and drops the database. */
  close(): Promise<void>;
}

/**
 * Core in this process, as server/server.ts wires it but with no port: a fresh database on DATABASE_URL's
 * server, or an embedded Postgres when it is not set (migrated, `zone` registered), listening to the
 * zones' NOTIFYs as server/start-core.ts does unless `opts.listen` is false, a pool and its side pool, the real OVH client over HTTPS to the
 * simulator (its rate lifted), a silent log, `metrics` (every series a no-op unless given).
 */
export async function coreBench(
  prefix: string,
  sim: OvhSimulator,
  zone: string,
  settings: Omit<CoreContext['settings'], 'zones'>,
  metrics: object = {},
  opts: { listen?: boolean } = {},
): Promise<CoreBench> {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(path.join(tmpdir(), `dnsplane-${prefix}-`));
  const db = await benchDatabaseOrEmbedded(prefix, path.join(dir, 'pg'));
  const pool = new pg.Pool({ connectionString: db.url, max: 10 });
  pool.on('error', () => undefined);
  const journalPool = store.createSidePool(pool);
  journalPool.on('error', () => undefined);
  await store.migrate(pool);
  const ovh = new OvhApi({
    endpoint: { host: '127.0.0.1', port: sim.apiPort, basePath: '/1.0', label: 'sim' },
    credentials: sim.credentials,
    extraCaPems: [sim.caPem],
    ratePerSecond: 10_000,
    maxConcurrent: 64,
    expandedLists: 'on',
  });
  const noOps = new Proxy(metrics, { get: (given, key) => (given as Record<string | symbol, unknown>)[key] ?? (() => undefined) });
  const ctx: CoreContext = {
    pool,
    journalPool,
    ovh,
    log: pino({ level: 'silent' }),
    metrics: noOps as CoreContext['metrics'],
    settings: { zones: [zone], ...settings },
  };
  await store.ensureZones(pool, [zone]);
  // What the zones' NOTIFYs say reaches the read cache and the apply path's view, as server/start-core.ts wires it.
  const heard = new Map<string, bigint>();
  const listener =
    opts.listen === false
      ? undefined
      : await store.listen(pool, {
          zone: (z, generation, changed) => {
            readCacheOf(ctx).heard(z, generation, changed);
            heardZoneChange(pool, z, generation, changed);
            heard.set(z, generation);
          },
        });
  return {
    ctx,
    pool,
    url: db.url,
    heard,
    async close() {
      await listener?.stop().catch(() => undefined);
      await journalPool.end().catch(() => undefined);
      await pool.end().catch(() => undefined);
      await db.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The database a bench's servers share: a fresh one on DATABASE_URL's server (benchDatabase), or,
 * when DATABASE_URL is not set, an embedded Postgres in dataDir started here (drop() stops it).
 */
export async function benchDatabaseOrEmbedded(prefix: string, dataDir: string): Promise<{ url: string; drop(): Promise<void> }> {
  const fresh = await benchDatabase(prefix);
  if (fresh.url) return { url: fresh.url, drop: fresh.drop };
  const store = await import('../src/store/index.js');
  const db = await store.openDatabase({ dataDir });
  return { url: db.url, drop: () => db.close() };
}

/** Writes the simulator's CA certificate as dir/file and returns its path (for OVH_CA_FILE). */
export function writeSimulatorCa(sim: OvhSimulator, dir: string, file = 'ca.pem'): string {
  const caFile = path.join(dir, file);
  writeFileSync(caFile, sim.caPem);
  return caFile;
}

/** A `dnsplane serve` started as a child process (its own event loop, memory and CPU, as in production). */
export interface ServerProcess {
  url: string;
  /** The webhook listener's URL, when DNSPLANE_WEBHOOK_LISTEN is not "off". */
  webhookUrl: string | undefined;
  /** The DNS door's port, when DNSPLANE_DNS_LISTEN is set (and not "off"). */
  dnsPort: number | undefined;
  proc: ChildProcess;
  stop(): Promise<void>;
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Starts `dnsplane serve` with exactly `env` (plus PATH and HOME) and waits until it serves (and its
 * webhook listener too, unless DNSPLANE_WEBHOOK_LISTEN is "off"; and its DNS door when
 * DNSPLANE_DNS_LISTEN is set). With BENCH_CPU_PROF=dir the server
 * writes a V8 CPU profile (node --cpu-prof) into dir when it stops; BENCH_NODE_FLAGS (space-separated)
 * are given to its node (e.g. --trace-gc; --allocation-site-pretenuring undoes bin/dnsplane-dev.js's default);
 * BENCH_SERVER_LOG=file copies its standard output into file.
 */
/** The node options an environment variable lists (space-separated), for a process a bench starts. */
export function nodeFlags(variable: string): string[] {
  return (process.env[variable] ?? '').split(' ').filter(Boolean);
}

export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const prof = process.env['BENCH_CPU_PROF'] ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env['BENCH_CPU_PROF'])}`] : [];
  const proc = spawn(process.execPath, [...nodeFlags('BENCH_NODE_FLAGS'), ...prof, path.join(ROOT, 'bin/dnsplane-dev.js'), 'serve'], {
    cwd: ROOT,
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const errors: string[] = [];
  proc.stderr!.on('data', (b: Buffer) => errors.push(b.toString()));
  // BENCH_SERVER_LOG=file: the server's whole standard output (its log, and what node flags such as
  // --trace-gc print) copied to a file, to read beside the figures.
  const copy = process.env['BENCH_SERVER_LOG'];
  if (copy) proc.stdout!.pipe(createWriteStream(path.resolve(copy)));
  const withWebhook = env['DNSPLANE_WEBHOOK_LISTEN'] !== 'off';
  const withDns = env['DNSPLANE_DNS_LISTEN'] !== undefined && env['DNSPLANE_DNS_LISTEN'] !== 'off';
  const urls = await new Promise<{ url: string; webhookUrl: string | undefined; dnsPort: number | undefined }>((resolve, reject) => {
    let url: string | undefined;
    let webhookUrl: string | undefined;
    let dnsPort: number | undefined;
    const lines = createInterface({ input: proc.stdout! });
    lines.on('line', (line) => {
      try {
        const o = JSON.parse(line) as { msg?: string; url?: string; port?: number; level?: number };
        if (o.msg?.startsWith('dnsplane is serving') && o.url) url = o.url;
        else if (o.msg === 'serving the external-dns webhook protocol' && o.url) webhookUrl = o.url;
        else if (o.msg?.startsWith('DNS door:') && o.port) dnsPort = o.port;
        else if ((o.level ?? 0) >= 50) errors.push(line);
        if (url && (webhookUrl || !withWebhook) && (dnsPort || !withDns)) resolve({ url, webhookUrl, dnsPort });
      } catch {
        // not a log line
      }
    });
    proc.once('exit', (code) => reject(new Error(`dnsplane serve exited with ${code}: ${errors.join('').slice(0, 2000)}`)));
  });
  return {
    ...urls,
    proc,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
  };
}

/** What a bench on one database and one simulator has: see withBench. */
export interface Bench {
  /** A scratch directory (the servers' data directory, the simulator's CA), removed at the end. */
  dir: string;
  /** The database's URL (migrated). */
  url: string;
  pool: pg.Pool;
  sim: OvhSimulator;
  /** Starts a `dnsplane serve` on this database and simulator (stopped at the end), managing `zone`, with `env` added. */
  serve(zone: string, env?: Record<string, string>): Promise<ServerProcess>;
  /** serve() with the DNS door on (DNSPLANE_DNS_RATE lifted) and a TSIG key of `tenant` (already made), issued first as the command line issues it. */
  serveDoor(opts: {
    zone: string;
    tenant: string;
    acmeOnly?: boolean;
    env?: Record<string, string>;
  }): Promise<{ child: ServerProcess; key: { name: string; algorithm: 'hmac-sha256'; secret: Buffer } }>;
}

/**
 * Runs `fn` with a fresh database (benchDatabaseOrEmbedded, migrated), the simulator started with
 * `sim`, and servers started on both; then stops the servers, the simulator and the database and
 * removes the scratch directory, whatever `fn` did.
 */
export async function withBench<T>(prefix: string, sim: SimOptions, fn: (bench: Bench) => Promise<T>): Promise<T> {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { OvhSimulator } = await import('../src/ovhsim/index.js');
  const { SecretBox } = await import('../src/core/keys/secrets.js');
  const { createTsigKey } = await import('../src/core/credentials/tsig-admin.js');
  const { simulatorEnv } = await import('../test/helpers/sim-server.js');
  const store = await import('../src/store/index.js');
  const dir = mkdtempSync(path.join(tmpdir(), `dnsplane-${prefix}-`));
  const db = await benchDatabaseOrEmbedded(prefix, path.join(dir, 'pg'));
  const simulator = await OvhSimulator.start(sim);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const servers: ServerProcess[] = [];
  const secretsKey = randomBytes(32);
  const caFile = writeSimulatorCa(simulator, dir);
  const serve = async (zone: string, env: Record<string, string> = {}) => {
    const child = await startServerProcess({
      DATABASE_URL: db.url,
      DNSPLANE_DATA_DIR: mkdtempSync(path.join(dir, 'server-')),
      DNSPLANE_LISTEN: '127.0.0.1:0',
      DNSPLANE_WEBHOOK_LISTEN: 'off',
      DNSPLANE_SECRETS_KEY: secretsKey.toString('base64'),
      DNSPLANE_ZONES: zone,
      DNSPLANE_DRIFT_INTERVAL: 'off',
      ...simulatorEnv(simulator, caFile),
      ...env,
    });
    servers.push(child);
    return child;
  };
  try {
    await store.migrate(pool);
    return await fn({
      dir,
      url: db.url,
      pool,
      sim: simulator,
      serve,
      async serveDoor(opts) {
        const issued = await createTsigKey(
          { pool, secrets: new SecretBox(secretsKey), actor: null },
          { tenant: opts.tenant, algorithm: 'hmac-sha256', acmeOnly: opts.acmeOnly ?? false },
        );
        const child = await serve(opts.zone, { DNSPLANE_DNS_LISTEN: '127.0.0.1:0', DNSPLANE_DNS_RATE: '1000000000', ...opts.env });
        return { child, key: { name: issued.key.name, algorithm: 'hmac-sha256', secret: issued.secret } };
      },
    });
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await pool.end();
    await simulator.stop();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
}

/** Probes GET /healthz every 10 ms from a worker thread (its own event loop) until stopped; a probe unanswered in 5 s fails. */
export function healthProbe(url: string): { stop(): Promise<{ latencies: number[]; errors: number }> } {
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
           req.setTimeout(5000, () => req.destroy());
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

/** fn(0..count-1), `width` at a time, until `stop()`; each result (or error) kept, undefined where not run. */
export async function pooled<R>(
  count: number,
  width: number,
  fn: (i: number) => Promise<R>,
  stop: () => boolean = () => false,
): Promise<Array<R | Error | undefined>> {
  const out: Array<R | Error | undefined> = new Array(count).fill(undefined);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, count) }, async () => {
      while (next < count && !stop()) {
        const i = next++;
        out[i] = await fn(i).catch((e: unknown) => (e instanceof Error ? e : new Error(String(e))));
      }
    }),
  );
  return out;
}
