/**
 * bench/estate — the whole estate in one dnsplane (issue 42): every per-request cost at Z zones of N
 * records and T tenants what it is at one zone. `npm run bench:estate`; figures printed, not asserted.
 *
 * One `dnsplane serve` (a child process, as in production) on its own Postgres database (a fresh one
 * on DATABASE_URL's server, else an embedded one) and the OVH simulator over HTTPS (in this process,
 * expanded record lists honoured, the OVH rate not binding). Each zone holds N records: N/2 names,
 * each an A, AAAA or CNAME and the TXT record external-dns's registry wrote for it
 * (`heritage=external-dns,external-dns/owner=cluster-K,…` at `a-h17`, `aaaa-h18`, …). T tenants (one
 * per cluster) are each granted 1–3 zones, the first ESTATE_ALL all of them; a name's owner is one of
 * its zone's tenants, in turn. Then, in order:
 *
 *  1. cold start: the server starts and one tenant of each zone asks for it at once (its first
 *     Records, which syncs the zone): how many answered on the first try, the time until every zone
 *     is synced (a zone that failed is asked again 5 s later, as a cluster retries), what failed;
 *  2. ownership adopted from the TXT registry (AdminService.ImportTxtRegistry, one zone after the
 *     other; each zone's dry run first, a step of its own) and ESTATE_SHARED shared sets per zone assigned target by target (AssignOwnership): their
 *     times;
 *  3. a poll pass: every tenant polls all its zones once (its first Records of each: its own sets),
 *     ESTATE_POLLERS at a time: tenants done within ESTATE_PASS_BUDGET_S, a request's p50/p99/max, the
 *     /healthz p99 meanwhile (probed every 10 ms from a worker thread); then the same pass again, with
 *     nothing changed since (the steady state);
 *  4. ESTATE_FOREIGN includeForeign reads spread over the zones, ESTATE_READERS at a time: per second;
 *  5. one change (an apply in the first zone), then that zone's tenants each poll with the generation
 *     they had: the time until all were answered;
 *  6. ESTATE_APPLIERS applies at once, each tenant creating one record in one of its zones;
 *  7. not-modified polls (every zone's current generation) against a bare node:http server answering
 *     the same bytes, in the same run (bench/raw-clients.ts);
 * and throughout: the server's RSS after each step and its peak (VmHWM), the worst event-loop delay of
 * each step (nodejs_eventloop_lag_max_seconds, reset by every scrape), the LISTEN connection's losses
 * (the server's own log lines), the read cache's bytes and builds.
 *
 * Environment (all optional):
 *   ESTATE_ZONES=20  ESTATE_RECORDS=50000  ESTATE_TENANTS=2000  ESTATE_ALL=20  ESTATE_SHARED=5
 *   ESTATE_POLLERS=64  ESTATE_READERS=8  ESTATE_FOREIGN=1000  ESTATE_APPLIERS=100
 *   ESTATE_PASS_BUDGET_S=300  ESTATE_FOREIGN_BUDGET_S=240
 *   ESTATE_SKIP=foreign,…    parts left out: dry (the imports' dry runs), shared, pass, foreign, change, applies, polls
 *   ESTATE_ENV='K=V K2=V2'   more settings for the server (e.g. DNSPLANE_READ_CACHE_BYTES=512Mi)
 *   ESTATE_IMPORT_VIA=grpc   the imports sent over gRPC, which Connect answers (else binary Connect, which
 *                            the route beside it answers: api/import-txt-route.ts)
 *   BENCH_CPU_PROF=dir       the server writes a V8 CPU profile into dir when it stops
 *   BENCH_NODE_FLAGS         node options for the server (e.g. --heapsnapshot-signal=SIGUSR2)
 *   DATABASE_URL             a Postgres server to create the bench database on (dropped at the end)
 *   ESTATE_ACCOUNTS=1        the zones spread over this many OVH accounts (one simulator each, zone z in
 *                            account z mod A; bench/estate-accounts.ts), ESTATE_ACCOUNT_RATE=R each
 */
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { createTenant } from '../src/core/tenants/tenants.js';
import { AdminService } from '../src/gen/dnsplane/v1/admin_pb.js';
import { ApplyStatus, Policy, type Endpoint } from '../src/gen/dnsplane/v1/zone_pb.js';
import type { SimRecordInit } from '../src/ovhsim/index.js';
import * as store from '../src/store/index.js';
import { bearer, simulatorEnv, zoneClientFor } from '../test/helpers/sim-server.js';
import { applyDesired } from '../test/helpers/zone-requests.js';
import { benchDatabaseOrEmbedded, healthProbe, percentile, pooled, positiveEnv, startServerProcess, writeSimulatorCa, type ServerProcess } from './lib.js';
import { notModifiedAgainstBare } from './raw-clients.js';
import { startEstateAccounts } from './estate-accounts.js';

const Z = Math.floor(positiveEnv('ESTATE_ZONES', 20));
const N = Math.floor(positiveEnv('ESTATE_RECORDS', 50_000));
const T = Math.floor(positiveEnv('ESTATE_TENANTS', 2000));
const ALL = Math.min(T, Math.floor(positiveEnv('ESTATE_ALL', 20)));
const SHARED = Math.floor(positiveEnv('ESTATE_SHARED', 5));
const POLLERS = Math.floor(positiveEnv('ESTATE_POLLERS', 64));
const READERS = Math.floor(positiveEnv('ESTATE_READERS', 8));
const FOREIGN = Math.floor(positiveEnv('ESTATE_FOREIGN', 1000));
const APPLIERS = Math.min(T, Math.floor(positiveEnv('ESTATE_APPLIERS', 100)));
const PASS_BUDGET_MS = positiveEnv('ESTATE_PASS_BUDGET_S', 300) * 1000;
const FOREIGN_BUDGET_MS = positiveEnv('ESTATE_FOREIGN_BUDGET_S', 240) * 1000;
const PARTS = ['dry', 'shared', 'pass', 'foreign', 'change', 'applies', 'polls'];
const SKIP = new Set(
  (process.env['ESTATE_SKIP'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);
for (const p of SKIP) if (!PARTS.includes(p)) throw new Error(`ESTATE_SKIP: unknown part "${p}" (parts: ${PARTS.join(', ')})`);
const EXTRA_ENV = Object.fromEntries(
  (process.env['ESTATE_ENV'] ?? '')
    .split(' ')
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
/** The zones spread over this many OVH accounts, each its own simulator, at ESTATE_ACCOUNT_RATE each (bench/estate-accounts.ts). */
const ACCOUNTS = Math.floor(positiveEnv('ESTATE_ACCOUNTS', 1));
const ACCOUNT_RATE = process.env['ESTATE_ACCOUNT_RATE'] ? Math.floor(positiveEnv('ESTATE_ACCOUNT_RATE', 20)) : undefined;
const CALL_TIMEOUT_MS = 300_000;
/** The imports over gRPC (Connect answers them) rather than binary Connect (the route beside it does). */
const IMPORT_VIA_GRPC = process.env['ESTATE_IMPORT_VIA'] === 'grpc';
const note = (line: string) => console.error(`  ${line}`);
const zoneName = (z: number) => `z${z}.estate.bench`;
const TYPES = ['A', 'AAAA', 'CNAME'] as const;

/** The zones tenant t is granted: all for the first ALL, else 1 to 3. */
function zonesOf(t: number): number[] {
  if (t < ALL) return Array.from({ length: Z }, (_, z) => z);
  const out = new Set([t % Z]);
  if (t % 3 >= 1) out.add((t * 7 + 3) % Z);
  if (t % 3 === 2) out.add((t * 13 + 5) % Z);
  return [...out].sort((a, b) => a - b);
}

/** A zone's N records: N/2 names, each a record and its external-dns registry TXT, owned by the zone's tenants in turn. */
function seed(z: number, owners: readonly number[]): SimRecordInit[] {
  const out: SimRecordInit[] = [];
  for (let i = 0; i < N / 2; i++) {
    const type = TYPES[i % 3]!;
    const target =
      type === 'A' ? `10.${z}.${(i >> 8) & 255}.${i & 255}` : type === 'AAAA' ? `2001:db8:${z.toString(16)}::${i.toString(16)}` : `h${i}.example.net.`;
    out.push({ subDomain: `h${i}`, fieldType: type, target, ttl: 300 });
    const owner = owners[i % owners.length]!;
    out.push({
      subDomain: `${type.toLowerCase()}-h${i}`,
      fieldType: 'TXT',
      target: `"heritage=external-dns,external-dns/owner=cluster-${owner},external-dns/resource=ingress/default/h${i}"`,
      ttl: 300,
    });
  }
  return out;
}

// --- the server's figures ---

async function scrape(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(120_000) })).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^(\S+?)(\{.*\})? (\S+)$/.exec(line);
    if (m) out.set(`${m[1]}${m[2] ?? ''}`, Number(m[3]));
  }
  return out;
}

/** The server's peak RSS so far (VmHWM) and now (VmRSS), from /proc. */
function rssOf(pid: number): { now: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { now: kb('VmRSS'), peak: kb('VmHWM') };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: Math.max(POLLERS, READERS, APPLIERS) });

/** POSTs Connect JSON to ZoneService.Records; the answer's bytes counted, its head kept. */
function rawRecords(url: string, token: string, body: object): Promise<{ status: number; bytes: number; head: string; text?: string }> {
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}/dnsplane.v1.ZoneService/Records`,
      { method: 'POST', agent, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } },
      (res) => {
        let bytes = 0;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => {
          if (bytes < 4096) chunks.push(c);
          bytes += c.length;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, head: Buffer.concat(chunks).toString('utf8', 0, 600) }));
        res.on('error', reject);
      },
    );
    req.setTimeout(CALL_TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${CALL_TIMEOUT_MS / 1000} s`)));
    req.on('error', reject);
    req.end(data);
  });
}

const msText = (x: number) => (x >= 10_000 ? `${(x / 1000).toFixed(1)} s` : `${x < 10 ? x.toFixed(1) : Math.round(x)} ms`);
const mib = (bytes: number) => (bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(2)} GiB` : `${Math.round(bytes / 2 ** 20)} MiB`);
const rows: Array<[string, string]> = [];
/** A step's own row (its RSS and event-loop delay), printed under the step's figure. */
let stepRow: [string, string] | undefined;
const put = (figure: string, value: string) => {
  rows.push([figure, value]);
  note(`${figure}: ${value}`);
  if (stepRow && !figure.startsWith('  ')) {
    rows.push(stepRow);
    stepRow = undefined;
  }
};

async function main(): Promise<void> {
  const benchStarted = performance.now();
  const loadAtStart = loadavg();
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-bench-estate-'));
  const t = performance.now();
  const granted = Array.from({ length: Z }, () => [] as number[]);
  for (let k = 0; k < T; k++) for (const z of zonesOf(k)) granted[z]!.push(k);
  const zones: Record<string, SimRecordInit[]> = {};
  for (let z = 0; z < Z; z++) zones[zoneName(z)] = seed(z, granted[z]!);
  const accounts = await startEstateAccounts(ACCOUNTS, zones, ACCOUNT_RATE);
  const sim = accounts.sims[0]!;
  const caFile = writeSimulatorCa(sim, dir);
  const database = await benchDatabaseOrEmbedded('dnsplane_bench_estate', path.join(dir, 'pg'));
  const db = await store.openDatabase({ databaseUrl: database.url, dataDir: dir });
  let server: ServerProcess | undefined;
  let listenerLost = 0;
  const refusedLines: string[] = [];
  try {
    await store.migrate(db.pool);
    await accounts.seed(db.pool);
    const tokens: string[] = [];
    for (let k = 0; k < T; k++) tokens.push((await createTenant(db.pool, { name: `cluster-${k}`, zones: zonesOf(k).map(zoneName) })).token);
    const admin = (await createTenant(db.pool, { name: 'admin', zones: [], admin: true })).token;
    note(`setup: ${Z} zones of ${N.toLocaleString('en')} records in the simulator, ${T} tenants (${Math.round(performance.now() - t)} ms)`);

    server = await startServerProcess({
      DATABASE_URL: database.url,
      DNSPLANE_DATA_DIR: dir,
      DNSPLANE_LISTEN: '127.0.0.1:0',
      DNSPLANE_WEBHOOK_LISTEN: 'off',
      DNSPLANE_ZONES: Array.from({ length: Z }, (_, z) => zoneName(z)).join(','),
      DNSPLANE_DRIFT_INTERVAL: 'off',
      DNSPLANE_HEALTH_INTERVAL: 'off',
      DNSPLANE_LOG_LEVEL: 'info',
      DNSPLANE_OVH_RATE: '100000',
      DNSPLANE_OVH_CONCURRENCY: '64',
      DNSPLANE_MAX_CONNECTIONS_PER_ADDRESS: '4096',
      ...simulatorEnv(sim, caFile),
      ...accounts.env,
      ...EXTRA_ENV,
    });
    const url = server.url;
    const pid = server.proc.pid!;
    createInterface({ input: server.proc.stdout! }).on('line', (line) => {
      if (line.includes('lost the LISTEN connection')) listenerLost++;
      if (/"level":(40|50)/.test(line) && refusedLines.length < 20) refusedLines.push(line.slice(0, 300));
    });
    const adminClient = createClient(AdminService, createConnectTransport({ baseUrl: url, httpVersion: '1.1', interceptors: [bearer(admin)] }));
    const importClient = IMPORT_VIA_GRPC ? createClient(AdminService, createGrpcTransport({ baseUrl: url, interceptors: [bearer(admin)] })) : adminClient;
    let worstLag = 0;
    const step = async <R>(name: string, fn: () => Promise<R>): Promise<R> => {
      await scrape(url); // resets the lag gauges
      const started = performance.now();
      const r = await fn();
      const m = await scrape(url);
      const lag = (m.get('nodejs_eventloop_lag_max_seconds') ?? NaN) * 1000;
      worstLag = Math.max(worstLag, lag);
      const rss = rssOf(pid);
      const cache = `${mib(m.get('dnsplane_read_cache_bytes{of="kept"}') ?? NaN)} kept`;
      note(
        `${name}: ${msText(performance.now() - started)}; worst event-loop delay ${msText(lag)}; RSS ${mib(rss.now)} (peak ${mib(rss.peak)}); read cache ${cache}`,
      );
      const heap = `heap ${mib(m.get('nodejs_heap_size_used_bytes') ?? NaN)} used of ${mib(m.get('nodejs_heap_size_total_bytes') ?? NaN)}`;
      stepRow = [
        '  RSS after it (peak so far); heap; read cache; worst event-loop delay meanwhile',
        `${mib(rss.now)} (${mib(rss.peak)}); ${heap}; ${cache}; ${msText(lag)}`,
      ];
      return r;
    };

    // 1. cold start: one first Records per zone, all at once.
    const cold = await step('cold start', async () => {
      const started = performance.now();
      const tenantOf = (z: number) => tokens[granted[z]![granted[z]!.length - 1]!]!;
      const first = await Promise.all(Array.from({ length: Z }, (_, z) => rawRecords(url, tenantOf(z), { zones: [zoneName(z)] })));
      const failed = first.map((r, z) => ({ r, z })).filter((x) => x.r.status !== 200);
      let rounds = 1;
      let left = failed.map((x) => x.z);
      while (left.length > 0 && rounds < 10) {
        await new Promise((r) => setTimeout(r, 5000));
        rounds++;
        const again = await Promise.all(left.map((z) => rawRecords(url, tenantOf(z), { zones: [zoneName(z)] })));
        left = left.filter((_, i) => again[i]!.status !== 200);
      }
      return { ok: Z - failed.length, failed, ms: performance.now() - started, rounds, left };
    });
    put(
      'cold start: zones synced on the first try',
      `${cold.ok} of ${Z}${cold.failed.length ? ` (the others: ${[...new Set(cold.failed.map((f) => `HTTP ${f.r.status} ${f.r.head.slice(0, 160)}`))].join(' / ')})` : ''}`,
    );
    put('  every zone synced after', `${msText(cold.ms)}, ${cold.rounds} round(s)${cold.left.length ? `; ${cold.left.length} never synced` : ''}`);

    // 2. the TXT registry adopted (each zone's dry run first); shared sets assigned.
    const imports = (dryRun: boolean) => async () => {
      const times: number[] = [];
      for (let z = 0; z < Z; z++) {
        const owners = Object.fromEntries(granted[z]!.map((k) => [`cluster-${k}`, `cluster-${k}`]));
        const s = performance.now();
        await importClient.importTxtRegistry({ zone: zoneName(z), owners, dryRun }, { timeoutMs: CALL_TIMEOUT_MS });
        times.push(performance.now() - s);
      }
      return times;
    };
    if (!SKIP.has('dry')) {
      const dry = await step('TXT registry dry runs', imports(true));
      put('TXT registry dry run, per zone', `median ${msText(percentile(dry, 50))}, max ${msText(Math.max(...dry))}`);
    }
    const imported = await step('TXT registry imports', imports(false));
    put('TXT registry import, per zone', `median ${msText(percentile(imported, 50))}, max ${msText(Math.max(...imported))}`);
    if (!SKIP.has('shared')) {
      const times = await step('shared sets assigned', async () => {
        const out: number[] = [];
        for (let z = 0; z < Z; z++) {
          for (let s = 0; s < SHARED; s++) {
            const owners = granted[z]!.slice(s * 3, s * 3 + 3);
            for (const [j, k] of owners.entries()) {
              const before = performance.now();
              await adminClient.assignOwnership(
                { dnsName: `pool${s}.${zoneName(z)}`, recordType: 'A', tenant: `cluster-${k}`, shared: true, targets: [`192.0.2.${j + 1}`] },
                { timeoutMs: CALL_TIMEOUT_MS },
              );
              out.push(performance.now() - before);
            }
          }
        }
        return out;
      });
      put(
        'shared-set assignment (AssignOwnership), each',
        `median ${msText(percentile(times, 50))}, p99 ${msText(percentile(times, 99))}, max ${msText(Math.max(...times))}`,
      );
    }

    // 3. the poll pass: right after the import (every zone's ownership changed: read whole again),
    // then once more with nothing changed (the steady state: every answer from memory).
    const generations = new Map<string, string>();
    const pollPass = async (name: string, figure: string) => {
      const probe = healthProbe(url);
      const pass = await step(name, async () => {
        const times: number[] = [];
        const started = performance.now();
        const results = await pooled(
          T,
          POLLERS,
          async (k) => {
            const s = performance.now();
            const r = await rawRecords(url, tokens[k]!, { zones: zonesOf(k).map(zoneName) });
            times.push(performance.now() - s);
            if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${r.head.slice(0, 200)}`);
            return true;
          },
          () => performance.now() - started > PASS_BUDGET_MS,
        );
        return {
          times,
          ms: performance.now() - started,
          done: results.filter((x) => x !== undefined && !(x instanceof Error)).length,
          errors: results.filter((x) => x instanceof Error) as Error[],
        };
      });
      const health = await probe.stop();
      put(
        figure,
        `${pass.done} of ${T} tenants in ${msText(pass.ms)}${pass.errors.length ? `, ${pass.errors.length} failed (${pass.errors[0]!.message.slice(0, 120)})` : ''}; a request's p50 ${msText(percentile(pass.times, 50))}, p99 ${msText(percentile(pass.times, 99))}, max ${msText(Math.max(...pass.times))}`,
      );
      put('  /healthz meanwhile', `p99 ${msText(percentile(health.latencies, 99))}, max ${msText(Math.max(...health.latencies, 0))}, ${health.errors} failed`);
    };
    if (!SKIP.has('pass')) {
      await pollPass('poll pass', 'poll pass: every tenant polls all its zones once');
      await pollPass('poll pass again', 'the same pass again, nothing changed (the steady state)');
    }

    // 4. includeForeign reads.
    if (!SKIP.has('foreign')) {
      const foreign = await step('includeForeign reads', async () => {
        const started = performance.now();
        let bytes = 0;
        const results = await pooled(
          FOREIGN,
          READERS,
          async (i) => {
            const k = i % T;
            const zs = zonesOf(k);
            const r = await rawRecords(url, tokens[k]!, { zones: [zoneName(zs[i % zs.length]!)], includeForeign: true });
            if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${r.head.slice(0, 200)}`);
            bytes += r.bytes;
            return true;
          },
          () => performance.now() - started > FOREIGN_BUDGET_MS,
        );
        const done = results.filter((x) => x !== undefined && !(x instanceof Error)).length;
        return { done, ms: performance.now() - started, bytes };
      });
      put(
        `${FOREIGN} includeForeign reads over the zones`,
        `${foreign.done} in ${msText(foreign.ms)}: ${((foreign.done * 1000) / foreign.ms).toFixed(1)}/s (${mib(foreign.bytes / Math.max(1, foreign.done))} each)`,
      );
    }

    // 5. one change, then that zone's tenants poll.
    for (let z = 0; z < Z; z++) generations.set(zoneName(z), (await store.getGenerations(db.pool, [zoneName(z)])).get(zoneName(z))!.toString());
    if (!SKIP.has('change')) {
      const zone = zoneName(0);
      const pollers = granted[0]!;
      await pooled(pollers.length, POLLERS, (i) => rawRecords(url, tokens[pollers[i]!]!, { zones: [zone] })); // each holds the current answer
      const before = generations.get(zone)!;
      const change = await zoneClientFor({ url }, tokens[pollers[0]!]!, { useBinaryFormat: false }).apply({
        source: {
          case: 'plan',
          value: {
            policy: Policy.UPSERT_ONLY,
            input: {
              case: 'desired',
              value: { zones: [zone], endpoints: [{ dnsName: `changed.${zone}`, recordType: 'A', targets: ['192.0.2.99'], ttl: 300 } as Endpoint] },
            },
          },
        },
      });
      if (change.zones[0]!.status !== ApplyStatus.APPLIED) note(`the change was not applied: ${ApplyStatus[change.zones[0]!.status]}`);
      const round = await step('one change, its zone polled', async () => {
        const started = performance.now();
        const times: number[] = [];
        await pooled(pollers.length, POLLERS, async (i) => {
          const s = performance.now();
          await rawRecords(url, tokens[pollers[i]!]!, { zones: [zone], knownGenerations: { [zone]: before } });
          times.push(performance.now() - s);
        });
        return { ms: performance.now() - started, p99: percentile(times, 99) };
      });
      put(`one change, then that zone's ${pollers.length} tenants poll`, `${msText(round.ms)} (p99 ${msText(round.p99)})`);
      generations.set(zone, (await store.getGenerations(db.pool, [zone])).get(zone)!.toString());
    }

    // 6. applies at once.
    if (!SKIP.has('applies')) {
      const applies = await step('applies at once', async () => {
        const started = performance.now();
        const results = await Promise.all(
          Array.from({ length: APPLIERS }, async (_, i) => {
            const k = (i * 17) % T;
            const zs = zonesOf(k);
            const zone = zoneName(zs[i % zs.length]!);
            const client: Client<typeof import('../src/gen/dnsplane/v1/zone_pb.js').ZoneService> = zoneClientFor({ url }, tokens[k]!, {
              useBinaryFormat: false,
            });
            try {
              const created = { dnsName: `applied${i}.${zone}`, recordType: 'A', targets: ['192.0.2.7'], ttl: 300 } as Endpoint;
              const r = await applyDesired(client, [created], Policy.UPSERT_ONLY, [zone], { timeoutMs: CALL_TIMEOUT_MS });
              return r.zones[0]!.status === ApplyStatus.APPLIED ? 'applied' : ApplyStatus[r.zones[0]!.status];
            } catch (e) {
              return e instanceof Error ? e.message.slice(0, 120) : String(e);
            }
          }),
        );
        return {
          ms: performance.now() - started,
          applied: results.filter((r) => r === 'applied').length,
          other: [...new Set(results.filter((r) => r !== 'applied'))],
        };
      });
      put(
        `${APPLIERS} applies at once over the zones`,
        `${applies.applied}/${APPLIERS} applied in ${msText(applies.ms)}${applies.other.length ? ` (others: ${applies.other.join(' / ')})` : ''}`,
      );
      for (let z = 0; z < Z; z++) generations.set(zoneName(z), (await store.getGenerations(db.pool, [zoneName(z)])).get(zoneName(z))!.toString());
    }

    // 7. not-modified polls against a bare server.
    if (!SKIP.has('polls')) {
      const k = 0; // a tenant with every zone
      const poll = {
        zones: zonesOf(k).map(zoneName),
        knownGenerations: Object.fromEntries(zonesOf(k).map((z) => [zoneName(z), generations.get(zoneName(z))!])),
      };
      const r = await step('not-modified polls', () => notModifiedAgainstBare(url, tokens[k]!, poll, { rounds: 4 }));
      put(
        'not-modified polls (every zone) / a bare node:http server',
        `${r.ratio.toFixed(2)} (${Math.round(r.ours)}/s against ${Math.round(r.bare)}/s; rounds ${r.rounds.map((x) => x.toFixed(2)).join(' ')})`,
      );
    }

    const m = await scrape(url);
    const rss = rssOf(pid);
    put('RSS at the end, and its peak', `${mib(rss.now)}, peak ${mib(rss.peak)}`);
    put('read cache', `${mib(m.get('dnsplane_read_cache_bytes{of="kept"}') ?? NaN)} kept of ${mib(m.get('dnsplane_read_cache_bytes{of="bound"}') ?? NaN)}`);
    put('worst event-loop delay of any step', msText(worstLag));
    put('LISTEN connection lost', `${listenerLost} time(s)`);
  } finally {
    await server?.stop();
    agent.destroy();
    await db.close();
    await database.drop().catch(() => undefined);
    if (ACCOUNTS > 1) for (const line of accounts.report()) put('  OVH account', line);
    await accounts.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  console.log(
    `bench/estate: ${Z} zones × ${N.toLocaleString('en')} records, ${T} tenants (${ALL} with every zone, the others 1–3), one dnsplane serve (a child process), real Postgres, the OVH simulator (rate not binding)${ACCOUNTS > 1 ? `; ${ACCOUNTS} OVH accounts, one simulator each` : ''}${ACCOUNT_RATE ? `; rate ${ACCOUNT_RATE}/s per account` : ''}`,
  );
  console.log(
    `node ${process.version}; ${availableParallelism()} cores; bench time ${Math.round((performance.now() - benchStarted) / 1000)} s; load average at the start ${loadAtStart.map((x) => x.toFixed(1)).join(' ')}, at the end ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  if (refusedLines.length) console.log(`the server's warn/error lines (first ${refusedLines.length}):\n${refusedLines.map((l) => `  ${l}`).join('\n')}`);
  console.log('');
  console.log('| figure | value |');
  console.log('|---|---|');
  for (const [f, v] of rows) console.log(`| ${f} | ${v} |`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
