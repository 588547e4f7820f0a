/**
 * bench/scale — what a request costs as the zone and the number of tenants grow (issue 28).
 * `npm run bench:scale`; figures printed, not asserted, not part of `npm test`.
 *
 * One `dnsplane serve` (a child process: its own event loop, heap and CPU, as in production) on real
 * Postgres (a fresh database on DATABASE_URL's server, else an embedded one) and the OVH simulator over
 * HTTPS (in this process, answering expanded record lists; BENCH_SCALE_LATENCY_MS per call for the
 * cold sync and the applies, DNSPLANE_OVH_RATE=BENCH_SCALE_RATE). For
 * each zone size N (BENCH_SCALE_N) a zone of N records (every one of OVH's 17 types in turn, one
 * record per name: test/helpers/big-zone.ts everyTypeRecords) is seeded in OVH, and the largest T of BENCH_SCALE_T tenants (one per cluster)
 * own its record sets in turn (set i belongs to tenant i mod T). Each size gets a server of its own,
 * started on that zone alone (DNSPLANE_ZONES), in this order:
 *
 *  1. the cold sync: the first Records, which reads the zone from OVH: the worst event-loop delay
 *     over it (nodejs_eventloop_lag_max_seconds, reset at every scrape of /metrics) and its time;
 *  2. the ownership written (the bench, in Postgres; one generation), then a full Records answer of
 *     the whole zone (includeForeign, the first of its generation) and an AXFR of it through the DNS
 *     door (TSIG-signed, TCP): the worst event-loop delay over each;
 *  3. one apply of one record (a create, UPSERT_ONLY), alone, BENCH_SCALE_ALONE times: the median;
 *  4. BENCH_SCALE_APPLIERS tenants each apply one create at the same moment: applied / refused (and the
 *     refusal's text), the slowest answer, how many applies each coalesced group took (the journal's
 *     result.coalesced), the refreshes the simulator saw;
 *  5. each tenant reads the zone with includeForeign once (BENCH_SCALE_READERS at a time, the answers'
 *     bytes read, not decoded) while /healthz is probed every 10 ms from a worker thread: after T
 *     tenants (each T of BENCH_SCALE_T), the server's RSS and V8 heap (used of total) and the /healthz
 *     p99. A server that dies is reported ("server killed at K tenants", with why); the reads stop
 *     after BENCH_SCALE_READ_BUDGET_S seconds in all (a read under way is let finish); then the
 *     server is started again (the database as it is) for the poll rounds;
 *  6. for each T: each of the T tenants fetches its answer (holds the current generation's, as a
 *     cluster that polls does), one change (an apply), then each polls once (Records of its own
 *     record sets with the generation it had, BENCH_SCALE_POLLERS at a time): the round's time and its
 *     p99; then the same round with nothing changed (each answer not modified). A round stops after
 *     BENCH_SCALE_ROUND_BUDGET_S seconds (and says how many tenants it did not poll).
 * Then, once, on three zones of their own: three replicas on the database with DNSPLANE_OVH_RATE=20
 * (BENCH_SCALE_STORM_RATE), each taking a write storm on its own zone (BENCH_SCALE_STORM tenants each
 * applying BENCH_SCALE_STORM_CREATES creates, at once): the most upstream calls the simulator saw in
 * any 5 s window, summed over the replicas, against the account's 5 × rate.
 *
 * Each figure is printed with its ratio to the same figure at the first (smallest) N.
 *
 * Environment (all optional):
 *   BENCH_SCALE_N=1000,10000,50000   zone sizes (e.g. 1000,100000)
 *   BENCH_SCALE_T=200,1000           tenant counts for the reads and the poll rounds
 *   BENCH_SCALE_APPLIERS=100         BENCH_SCALE_ALONE=3        BENCH_SCALE_READERS=8
 *   BENCH_SCALE_POLLERS=64           BENCH_SCALE_READ_BUDGET_S=240   BENCH_SCALE_ROUND_BUDGET_S=180
 *   BENCH_SCALE_RATE=20              BENCH_SCALE_LATENCY_MS=30
 *   BENCH_SCALE_STORM=10             BENCH_SCALE_STORM_CREATES=15   BENCH_SCALE_STORM_RATE=20
 *   BENCH_SCALE_SKIP=storm,reads,…   parts left out: sync, answer, axfr, alone, applies, reads, polls, storm
 *   BENCH_CPU_PROF=dir               the servers write V8 CPU profiles into dir when they stop
 *   DATABASE_URL                     a Postgres server to create the bench database on (dropped at the end)
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { ConnectError } from '@connectrpc/connect';
import { SecretBox } from '../src/core/keys/secrets.js';
import { createTenant } from '../src/core/tenants/tenants.js';
import { createTsigKey } from '../src/core/credentials/tsig-admin.js';
import { TYPE, type TsigSigner } from '../src/dns/wire/index.js';
import { messageOf } from '../src/lib/error-message.js';
import { ApplyStatus, Policy, type Endpoint } from '../src/gen/dnsplane/v1/zone_pb.js';
import { OvhSimulator, type SimRecordInit } from '../src/ovhsim/index.js';
import * as store from '../src/store/index.js';
import { query, tcpExchange } from '../test/helpers/dns-client.js';
import { everyTypeRecords } from '../test/helpers/big-zone.js';
import { simulatorEnv, zoneClientFor } from '../test/helpers/sim-server.js';
import {
  benchDatabaseOrEmbedded,
  healthProbe,
  median,
  percentile,
  pooled,
  positiveEnv,
  startServerProcess,
  writeSimulatorCa,
  type ServerProcess,
} from './lib.js';

const list = (name: string, fallback: string): number[] => {
  const xs = (process.env[name] ?? fallback).split(',').map((s) => Number(s.trim()));
  if (xs.length === 0 || xs.some((x) => !Number.isInteger(x) || x < 1)) throw new Error(`${name}: expected positive integers separated by commas`);
  return xs;
};
const SIZES = [...new Set(list('BENCH_SCALE_N', '1000,10000,50000'))].sort((a, b) => a - b);
const TENANTS = [...new Set(list('BENCH_SCALE_T', '200,1000'))].sort((a, b) => a - b);
const MAX_T = TENANTS[TENANTS.length - 1]!;
const APPLIERS = Math.min(MAX_T, Math.floor(positiveEnv('BENCH_SCALE_APPLIERS', 100)));
const ALONE = Math.floor(positiveEnv('BENCH_SCALE_ALONE', 3));
const READERS = Math.floor(positiveEnv('BENCH_SCALE_READERS', 8));
const POLLERS = Math.floor(positiveEnv('BENCH_SCALE_POLLERS', 64));
const READ_BUDGET_MS = positiveEnv('BENCH_SCALE_READ_BUDGET_S', 240) * 1000;
const ROUND_BUDGET_MS = positiveEnv('BENCH_SCALE_ROUND_BUDGET_S', 180) * 1000;
const RATE = positiveEnv('BENCH_SCALE_RATE', 20);
const LATENCY_MS = Number(process.env['BENCH_SCALE_LATENCY_MS'] ?? 30);
const STORM = Math.floor(positiveEnv('BENCH_SCALE_STORM', 10));
const STORM_CREATES = Math.floor(positiveEnv('BENCH_SCALE_STORM_CREATES', 15));
const STORM_RATE = positiveEnv('BENCH_SCALE_STORM_RATE', 20);
const PARTS = ['sync', 'answer', 'axfr', 'alone', 'applies', 'reads', 'polls', 'storm'];
const SKIP = new Set(
  (process.env['BENCH_SCALE_SKIP'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);
for (const p of SKIP) if (!PARTS.includes(p)) throw new Error(`BENCH_SCALE_SKIP: unknown part "${p}" (parts: ${PARTS.join(', ')})`);
/** The most any one apply or poll round is waited for: past it the bench goes on (and says so). */
const CALL_TIMEOUT_MS = 180_000;
const STORM_WINDOW_MS = 5_000;

const zoneOf = (n: number) => `n${n}.scale.bench`;
const STORM_ZONES = [0, 1, 2].map((r) => `storm${r}.scale.bench`);
const note = (line: string) => console.error(`  ${line}`);
const ip4 = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

/** N records, one per name, every type OVH has in turn (issue 43: the AXFR of every wire form at scale). */
function seed(n: number, zone: string): SimRecordInit[] {
  return everyTypeRecords(n, zone);
}

// --- the server's figures and raw calls ---

async function scrape(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(60_000) })).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^(\S+?)(\{.*\})? (\S+)$/.exec(line);
    if (m) out.set(`${m[1]}${m[2] ?? ''}`, Number(m[3]));
  }
  return out;
}

/** The worst event-loop delay of the server (ms) over `fn`, its wall time, and fn's result. */
async function loopDelayOver<T>(url: string, fn: () => Promise<T>): Promise<{ lagMs: number; wallMs: number; value: T }> {
  await new Promise((r) => setTimeout(r, 200)); // a quiet moment, then a scrape (which resets the lag gauges)
  await scrape(url);
  const t = performance.now();
  const value = await fn();
  const wallMs = performance.now() - t;
  const after = await scrape(url);
  return { lagMs: (after.get('nodejs_eventloop_lag_max_seconds') ?? NaN) * 1000, wallMs, value };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: Math.max(READERS, POLLERS) });

/** POSTs Connect JSON to ZoneService.Records; the answer's bytes are counted, only its head decoded. */
function rawRecords(url: string, token: string, body: object): Promise<{ status: number; bytes: number; head: string }> {
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}/dnsplane.v1.ZoneService/Records`,
      { method: 'POST', agent, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } },
      (res) => {
        let bytes = 0;
        let head = '';
        res.on('data', (c: Buffer) => {
          if (head.length < 300) head += c.toString('utf8', 0, Math.min(c.length, 300));
          bytes += c.length;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, head }));
        res.on('error', reject);
      },
    );
    req.setTimeout(CALL_TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${CALL_TIMEOUT_MS / 1000} s`)));
    req.on('error', reject);
    req.end(data);
  });
}

// --- the table ---

type Cell = { value: number; text: string } | { text: string } | undefined;
/** figure -> size -> cell. */
const table = new Map<string, Map<number, Cell>>();

function put(figure: string, n: number, cell: Cell): void {
  if (!table.has(figure)) table.set(figure, new Map());
  table.get(figure)!.set(n, cell);
}
const msText = (x: number) => (x >= 10_000 ? `${(x / 1000).toFixed(1)} s` : `${x < 10 ? x.toFixed(1) : Math.round(x)} ms`);
const mib = (bytes: number) =>
  bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(2)} GiB` : bytes >= 2 ** 20 ? `${Math.round(bytes / 2 ** 20)} MiB` : `${Math.round(bytes / 1024)} KiB`;
const putMs = (figure: string, n: number, x: number, extra = '') => put(figure, n, { value: x, text: `${msText(x)}${extra}` });

function printTable(): void {
  const first = SIZES[0]!;
  const rows: string[][] = [['figure', ...SIZES.map((n) => `${n.toLocaleString('en')} records`)]];
  for (const [figure, cells] of table) {
    const base = cells.get(first);
    const baseValue = base && 'value' in base ? base.value : undefined;
    rows.push([
      figure,
      ...SIZES.map((n) => {
        const c = cells.get(n);
        if (!c) return '';
        if (!('value' in c) || n === first || baseValue === undefined || !(baseValue > 0)) return c.text;
        return `${c.text} (×${(c.value / baseValue).toFixed(2)})`;
      }),
    ]);
  }
  const w = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(w[i]!)).join(' | ')} |`;
  console.log(line(rows[0]!));
  console.log(`|${w.map((x) => '-'.repeat(x + 2)).join('|')}|`);
  for (const r of rows.slice(1)) console.log(line(r));
}

// --- one server ---

interface Live {
  server: ServerProcess;
  /** Why it exited, once it has (stderr's last lines). */
  death: string | undefined;
}

async function main(): Promise<void> {
  const benchStarted = performance.now();
  const loadAtStart = loadavg();
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-bench-scale-'));
  const zones: Record<string, SimRecordInit[]> = {};
  for (const n of SIZES) zones[zoneOf(n)] = seed(n, zoneOf(n));
  for (const z of STORM_ZONES) zones[z] = seed(8, z);
  const sim = await OvhSimulator.start({ zones });
  // OVH's expanded list mode answered: a cold sync reads a page of 5,000 records per call.
  sim.setBehavior({ expandedRecordLists: 'honoured' });
  const caFile = writeSimulatorCa(sim, dir);
  const database = await benchDatabaseOrEmbedded('dnsplane_bench_scale', path.join(dir, 'pg'));
  const db = await store.openDatabase({ databaseUrl: database.url, dataDir: dir });
  const secretsKey = randomBytes(32);
  const live: Live[] = [];
  let storm = '';
  try {
    await store.migrate(db.pool);
    let t = performance.now();
    const allZones = [...SIZES.map(zoneOf), ...STORM_ZONES];
    const tenants: { id: string; name: string; token: string }[] = [];
    for (let i = 0; i < MAX_T; i++) {
      const made = await createTenant(db.pool, { name: `cluster-${i}`, zones: allZones });
      tenants.push({ id: made.tenant.id, name: made.tenant.name, token: made.token });
    }
    const issued = await createTsigKey(
      { pool: db.pool, secrets: new SecretBox(secretsKey), actor: null },
      { tenant: tenants[0]!.name, algorithm: 'hmac-sha256' },
    );
    const tsig: TsigSigner = { name: issued.key.name, algorithm: 'hmac-sha256', secret: issued.secret };
    note(
      `setup: ${MAX_T} tenants, ${SIZES.map((n) => n.toLocaleString('en')).join(' / ')}-record zones in the simulator (${Math.round(performance.now() - t)} ms)`,
    );

    const env = (zoneList: string[], rate: number): Record<string, string> => ({
      DATABASE_URL: database.url,
      DNSPLANE_DATA_DIR: dir,
      DNSPLANE_LISTEN: '127.0.0.1:0',
      DNSPLANE_WEBHOOK_LISTEN: 'off',
      DNSPLANE_DNS_LISTEN: '127.0.0.1:0',
      DNSPLANE_DNS_RATE: '1000000000',
      DNSPLANE_SECRETS_KEY: secretsKey.toString('base64'),
      DNSPLANE_ZONES: zoneList.join(','),
      DNSPLANE_DRIFT_INTERVAL: 'off',
      DNSPLANE_LOG_LEVEL: 'info', // startServerProcess reads the ports from the info lines
      DNSPLANE_OVH_RATE: String(rate),
      DNSPLANE_MAX_CONNECTIONS_PER_ADDRESS: '4096',
      ...simulatorEnv(sim, caFile),
    });
    const start = async (zoneList: string[], rate: number): Promise<Live> => {
      const server = await startServerProcess(env(zoneList, rate));
      const l: Live = { server, death: undefined };
      const tail: string[] = [];
      server.proc.stderr!.on('data', (b: Buffer) => {
        tail.push(b.toString());
        if (tail.length > 20) tail.shift();
      });
      server.proc.once('exit', (code, signal) => {
        const why = /heap out of memory|Allocation failed[^\n]*/i.exec(tail.join(''))?.[0] ?? `exit ${code ?? signal}`;
        l.death = why;
      });
      live.push(l);
      return l;
    };
    const stop = async (l: Live) => {
      await l.server.stop();
      live.splice(live.indexOf(l), 1);
    };

    /** One create by tenant i in zone z: its answer, or the refusal's text. */
    const createOne = async (url: string, i: number, z: string, name: string): Promise<{ ms: number; ok: boolean; text: string; journalId: string }> => {
      const s = performance.now();
      try {
        const r = await zoneClientFor({ url }, tenants[i]!.token, { useBinaryFormat: false }).apply(
          {
            source: {
              case: 'plan',
              value: {
                policy: Policy.UPSERT_ONLY,
                input: {
                  case: 'desired',
                  value: { zones: [z], endpoints: [{ dnsName: `${name}.${z}`, recordType: 'A', targets: ['192.0.2.1'], ttl: 300 } as Endpoint] },
                },
              },
            },
          },
          { timeoutMs: CALL_TIMEOUT_MS },
        );
        const zr = r.zones[0]!;
        return { ms: performance.now() - s, ok: zr.status === ApplyStatus.APPLIED, text: ApplyStatus[zr.status], journalId: zr.journalId };
      } catch (e) {
        return { ms: performance.now() - s, ok: false, text: e instanceof ConnectError ? e.message : messageOf(e), journalId: '' };
      }
    };
    const generationOf = async (z: string) => (await store.getGenerations(db.pool, [z])).get(z) ?? 0n;

    for (const n of SIZES) {
      const zone = zoneOf(n);
      const sizeStarted = performance.now();
      sim.faults.setLatency(LATENCY_MS);
      let l = await start([zone], RATE);
      const url = () => l.server.url;

      // 1. the cold sync.
      const cold = await loopDelayOver(url(), () => rawRecords(url(), tenants[0]!.token, { zones: [zone] }));
      if (cold.value.status !== 200) throw new Error(`cold sync: HTTP ${cold.value.status}: ${cold.value.head}`);
      if (!SKIP.has('sync')) {
        putMs('worst event-loop delay: cold sync (first Records)', n, cold.lagMs);
        putMs('  the cold sync, wall time', n, cold.wallMs);
      }
      note(`${n}: cold sync ${msText(cold.wallMs)}, worst delay ${msText(cold.lagMs)}`);

      // 2. ownership: set i to tenant i mod MAX_T, one generation.
      t = performance.now();
      const sets = await store.listRecords(db.pool, zone);
      await store.withZoneLock(db.pool, zone, { lockTimeoutMs: 60_000 }, async (tx) => {
        for (const [i, r] of sets.filter((x) => x.subDomain !== '').entries()) {
          await store.setOwner(tx, { zone, dnsName: `${r.subDomain}.${zone}`, recordType: r.fieldType, tenantId: tenants[i % MAX_T]!.id });
        }
        const g = await store.bumpGeneration(tx, zone);
        await store.notifyZoneChanged(tx, zone, g);
      });
      note(`${n}: ownership of ${sets.length} records written (${Math.round(performance.now() - t)} ms)`);
      if (!SKIP.has('answer')) {
        const full = await loopDelayOver(url(), () => rawRecords(url(), tenants[0]!.token, { zones: [zone], includeForeign: true }));
        putMs('worst event-loop delay: a full Records answer (includeForeign, first of its generation)', n, full.lagMs);
        putMs('  its wall time', n, full.wallMs, `, ${mib(full.value.bytes)}`);
        note(`${n}: full answer ${msText(full.wallMs)} (${mib(full.value.bytes)}), worst delay ${msText(full.lagMs)}`);
      }
      if (!SKIP.has('axfr') && l.server.dnsPort) {
        const port = l.server.dnsPort;
        const x = await loopDelayOver(url(), () => tcpExchange(port, query(zone, TYPE.AXFR, { key: tsig }), { transfer: true, timeoutMs: CALL_TIMEOUT_MS }));
        const rrs = x.value.reduce((a, m) => a + m.parsed.message.answers.length, 0);
        putMs('worst event-loop delay: one AXFR of the zone', n, x.lagMs);
        putMs('  the AXFR, wall time', n, x.wallMs, `, ${rrs.toLocaleString('en')} RRs`);
        note(`${n}: AXFR ${msText(x.wallMs)} (${rrs} RRs in ${x.value.length} messages), worst delay ${msText(x.lagMs)}`);
      }

      // 3. one apply alone; 4. APPLIERS at the same moment.
      if (!SKIP.has('alone')) {
        const times: number[] = [];
        for (let k = 0; k < ALONE; k++) {
          const r = await createOne(url(), 0, zone, `alone${k}`);
          if (!r.ok) note(`${n}: an apply alone was not applied: ${r.text}`);
          times.push(r.ms);
        }
        putMs('one apply of one record, alone', n, median(times), ` (median of ${ALONE}; ${times.map((x) => Math.round(x)).join(', ')} ms)`);
        note(`${n}: alone ${times.map((x) => Math.round(x)).join(', ')} ms`);
      }
      if (!SKIP.has('applies')) {
        sim.clearCalls();
        const results = await Promise.all(Array.from({ length: APPLIERS }, (_, i) => createOne(url(), i, zone, `burst${i}`)));
        const applied = results.filter((r) => r.ok);
        const refused = results.filter((r) => !r.ok);
        const groups: number[] = [];
        for (const r of applied) {
          const e = r.journalId ? await store.getJournalEntry(db.pool, r.journalId) : undefined;
          const c = (e?.result as { coalesced?: { applies?: number } } | null)?.coalesced?.applies;
          groups.push(c ?? 1);
        }
        const refreshes = sim.calls().filter((c) => c.method === 'POST' && c.path.endsWith('/refresh')).length;
        const label = `${APPLIERS} tenants each apply one create at the same moment`;
        put(label, n, { value: applied.length, text: `${applied.length} applied, ${refused.length} refused` });
        // Always put (a dash when none): the row keeps its place under the applies.
        const texts = [...new Set(refused.map((r) => r.text.replace(/\d+ ms/g, 'N ms')))];
        put('  the refusal', n, { text: texts.length ? texts.slice(0, 2).join(' / ').slice(0, 160) : '—' });
        putMs('  the slowest answer', n, Math.max(...results.map((r) => r.ms)));
        put('  applies per coalesced group', n, { text: groups.length ? `${Math.min(...groups)}–${Math.max(...groups)}` : '-' });
        put('  refreshes seen by the simulator', n, { value: refreshes, text: String(refreshes) });
        note(
          `${n}: ${applied.length} applied, ${refused.length} refused, slowest ${msText(Math.max(...results.map((r) => r.ms)))}, groups ${groups.length ? `${Math.min(...groups)}–${Math.max(...groups)}` : '-'}, ${refreshes} refreshes`,
        );
      }
      sim.faults.setLatency(0);

      // 5. every tenant reads the zone with includeForeign once; figures after each T.
      if (!SKIP.has('reads')) {
        const probe = healthProbe(url());
        const readsStarted = performance.now();
        let done = 0;
        let killedAt: number | undefined;
        const checkpoints = [...TENANTS];
        let results: Array<unknown> = [];
        let from = 0;
        for (const T of checkpoints) {
          const label = `${T.toLocaleString('en')} tenants each read the zone with includeForeign once`;
          const stopReading = () => l.death !== undefined || performance.now() - readsStarted > READ_BUDGET_MS;
          results = await pooled(
            T - from,
            READERS,
            async (k) => {
              const r = await rawRecords(url(), tenants[from + k]!.token, { zones: [zone], includeForeign: true });
              if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${r.head}`);
              done++;
              return r;
            },
            stopReading,
          );
          from = T;
          const failed = results.find((r) => r instanceof Error) as Error | undefined;
          if (l.death !== undefined) {
            killedAt = done;
            put(label, n, { text: `**server killed at ${done} tenants** (${l.death})` });
            break;
          }
          if (done < T) {
            put(label, n, { text: `stopped at ${done} tenants after ${Math.round(READ_BUDGET_MS / 1000)} s` });
          }
          const m = await scrape(url());
          const rss = m.get('process_resident_memory_bytes') ?? NaN;
          const used = m.get('nodejs_heap_size_used_bytes') ?? NaN;
          const total = m.get('nodejs_heap_size_total_bytes') ?? NaN;
          if (done >= T) put(label, n, { value: rss, text: `RSS ${mib(rss)}, heap ${mib(used)} of ${mib(total)}` });
          note(
            `${n}: after ${done} includeForeign reads (${Math.round((performance.now() - readsStarted) / 1000)} s): RSS ${mib(rss)}, heap ${mib(used)} of ${mib(total)}${failed ? `; a read failed: ${failed.message}` : ''}`,
          );
          if (done < T) break;
        }
        const health = await probe.stop();
        putMs(
          '  /healthz p99 during the reads',
          n,
          percentile(health.latencies, 99),
          ` (max ${msText(Math.max(...health.latencies, 0))}, ${health.errors} failed)`,
        );
        if (killedAt !== undefined) {
          note(`${n}: the server died (${l.death}) after ${killedAt} reads`);
          live.splice(live.indexOf(l), 1);
        } else await stop(l);
        // The poll rounds get a server of their own (not one whose heap the reads filled): started again.
        l = await start([zone], RATE);
        await rawRecords(url(), tenants[0]!.token, { zones: [zone] });
      }

      // 6. one change, then every tenant polls once; the same round with nothing changed.
      if (!SKIP.has('polls')) {
        for (const T of TENANTS) {
          // Every poller holds the current generation's answer (warm: each fetched it from this server), then one change comes.
          const before = await generationOf(zone);
          await pooled(T, POLLERS, (i) => rawRecords(url(), tenants[i]!.token, { zones: [zone] }));
          const change = await createOne(url(), 0, zone, `change${T}`);
          if (!change.ok) note(`${n}: the change before the poll round was not applied: ${change.text}`);
          const after = await generationOf(zone);
          const round = async (known: bigint, want: 'full' | 'notModified') => {
            const times: number[] = [];
            const s = performance.now();
            const rs = await pooled(
              T,
              POLLERS,
              async (i) => {
                const c = performance.now();
                const r = await rawRecords(url(), tenants[i]!.token, { zones: [zone], knownGenerations: { [zone]: known.toString() } });
                times.push(performance.now() - c);
                if (r.status !== 200 || r.head.includes('"notModified":true') !== (want === 'notModified'))
                  throw new Error(`HTTP ${r.status}: ${r.head.slice(0, 200)}`);
                return r;
              },
              () => performance.now() - s > ROUND_BUDGET_MS,
            );
            const failed = rs.filter((r) => r instanceof Error) as Error[];
            if (failed.length) note(`${n}: ${failed.length} polls of the round failed: ${failed[0]!.message}`);
            const unfinished = T - rs.filter((r) => r !== undefined).length;
            const extra = `${failed.length ? `, ${failed.length} failed` : ''}${unfinished ? `, stopped after ${Math.round(ROUND_BUDGET_MS / 1000)} s: ${unfinished} tenants not polled` : ''}`;
            return { ms: performance.now() - s, p99: percentile(times, 99), extra };
          };
          const changed = await round(before, 'full');
          const same = await round(after, 'notModified');
          const tl = T.toLocaleString('en');
          putMs(`one change, then each of ${tl} tenants polls once`, n, changed.ms, ` (p99 ${msText(changed.p99)}${changed.extra})`);
          putMs(`  the same round of ${tl}, nothing changed`, n, same.ms, ` (p99 ${msText(same.p99)}${same.extra})`);
          note(
            `${n}: poll round of ${T} after a change ${msText(changed.ms)} (p99 ${msText(changed.p99)}), unchanged ${msText(same.ms)} (p99 ${msText(same.p99)})`,
          );
        }
      }
      await stop(l);
      note(`${n}: done in ${Math.round((performance.now() - sizeStarted) / 1000)} s`);
    }

    // Three replicas, one OVH account: the storm.
    if (!SKIP.has('storm')) {
      const replicas: Live[] = [];
      for (let r = 0; r < 3; r++) replicas.push(await start(STORM_ZONES, STORM_RATE));
      sim.faults.setLatency(LATENCY_MS);
      for (const [r, z] of STORM_ZONES.entries()) await rawRecords(replicas[r]!.server.url, tenants[0]!.token, { zones: [z] }); // each zone synced
      sim.clearCalls();
      t = performance.now();
      await Promise.all(
        replicas.flatMap((rep, r) =>
          Array.from({ length: STORM }, async (_, k) => {
            const z = STORM_ZONES[r]!;
            const endpoints = Array.from(
              { length: STORM_CREATES },
              (_, j) => ({ dnsName: `s${k}-${j}.${z}`, recordType: 'A', targets: [ip4(k * 1000 + j)], ttl: 300 }) as Endpoint,
            );
            await zoneClientFor({ url: rep.server.url }, tenants[k % MAX_T]!.token, { useBinaryFormat: false })
              .apply(
                { source: { case: 'plan', value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [z], endpoints } } } } },
                { timeoutMs: CALL_TIMEOUT_MS },
              )
              .catch((e: unknown) => note(`storm: an apply failed: ${messageOf(e)}`));
          }),
        ),
      );
      const wall = performance.now() - t;
      const at = sim
        .calls()
        .filter((c) => c.path !== '/auth/time')
        .map((c) => c.at)
        .sort((a, b) => a - b);
      let most = 0;
      for (let i = 0, j = 0; i < at.length; i++) {
        while (at[i]! - at[j]! >= STORM_WINDOW_MS) j++;
        most = Math.max(most, i - j + 1);
      }
      storm = `three replicas, DNSPLANE_OVH_RATE=${STORM_RATE}, each taking ${STORM} applies of ${STORM_CREATES} creates on a zone of its own: ${at.length} upstream calls in ${(wall / 1000).toFixed(1)} s; the most in any ${STORM_WINDOW_MS / 1000} s window, summed over the replicas: ${most} (${(most / (STORM_WINDOW_MS / 1000)).toFixed(1)}/s; the account's rate allows ${(STORM_RATE * STORM_WINDOW_MS) / 1000})`;
      note(storm);
      sim.faults.setLatency(0);
      for (const rep of replicas) await stop(rep);
    }
  } finally {
    for (const l of [...live]) await l.server.stop();
    agent.destroy();
    await db.close();
    await database.drop().catch(() => undefined);
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  console.log(
    `bench/scale: one dnsplane serve (a child process) per zone size, real Postgres, the OVH simulator (${LATENCY_MS} ms per call for applies, DNSPLANE_OVH_RATE=${RATE});`,
  );
  console.log(
    `tenants T = ${TENANTS.join(' / ')} (set i owned by tenant i mod ${MAX_T}); includeForeign reads ${READERS} at a time, polls ${POLLERS} at a time; (×r): the ratio to the ${SIZES[0]!.toLocaleString('en')}-record figure`,
  );
  console.log(
    `node ${process.version}; ${availableParallelism()} cores; bench time ${Math.round((performance.now() - benchStarted) / 1000)} s; load average at the start ${loadAtStart.map((x) => x.toFixed(1)).join(' ')}, at the end ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  console.log('');
  printTable();
  if (storm) {
    console.log('');
    console.log(storm);
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
