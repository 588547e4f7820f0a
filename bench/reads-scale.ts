/**
 * bench/reads-scale — `npm run bench:reads-scale`: what the read path costs when many tenants read one
 * large zone (issue 28, part 2). Not part of `npm test`.
 *
 * A server process (real Postgres, the simulator, one zone of SCALE_N records of mixed A, AAAA, TXT
 * and CNAME, SCALE_T tenants each owning an equal share of its sets) and this process as SCALE_C
 * concurrent clients speaking Connect JSON over HTTP/1.1 (raw http.request, answers read as bytes):
 *   1. every tenant reads the zone with includeForeign once: the server's RSS and heap after, and
 *      /healthz's latency during (asked every 20 ms);
 *   2. one change (an Apply), then every tenant polls once with the generation it had (its own
 *      records): the round's time and its p99; the same round with nothing changed beside it; and
 *      the same for includeForeign polls;
 *   3. the worst event-loop delay in the server (perf_hooks.monitorEventLoopDelay) during one full
 *      Records answer of the zone, in Connect JSON and in binary Connect: first after a change (the
 *      generation's base built and the answer encoded) and again (from memory).
 * Environment: DATABASE_URL (required), SCALE_N (10000), SCALE_T (1000), SCALE_C (32), SCALE_ONLY
 * (the phases to run, e.g. "3"; default all).
 * SCALE_PROFILE=dir starts the server with `node --cpu-prof --cpu-prof-dir=dir`.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { records } from '../src/core/records/records.js';
import { createTenant } from '../src/core/tenants/tenants.js';
import { ZoneService } from '../src/gen/dnsplane/v1/zone_pb.js';
import { OvhSimulator } from '../src/ovhsim/index.js';
import * as store from '../src/store/index.js';
import { startServerOn } from '../test/helpers/sim-server.js';
import { benchDatabase, positiveEnv } from './lib.js';

const N = positiveEnv('SCALE_N', 10_000);
const T = positiveEnv('SCALE_T', 1_000);
const C = positiveEnv('SCALE_C', 32);
const ZONE = 'scale.test';
const runs = (phase: string) => (process.env['SCALE_ONLY'] ?? '123').includes(phase);

interface Ready {
  url: string;
  tokens: string[];
  generation: string;
}

/** The zone's records: mixed A, AAAA, TXT and CNAME, one record per set. */
function zoneRecords(): { subDomain: string; fieldType: string; target: string; ttl: number }[] {
  return Array.from({ length: N }, (_, i) => {
    switch (i % 4) {
      case 0:
        return { subDomain: `h${i}`, fieldType: 'A', target: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, ttl: 300 };
      case 1:
        return { subDomain: `h${i}`, fieldType: 'AAAA', target: `2001:db8::${i.toString(16)}`, ttl: 300 };
      case 2:
        return {
          subDomain: `t${i}`,
          fieldType: 'TXT',
          target: `"heritage=external-dns,external-dns/owner=c${i % T},external-dns/resource=service/ns/s${i}"`,
          ttl: 300,
        };
      default:
        return { subDomain: `c${i}`, fieldType: 'CNAME', target: `h${i - 3}.${ZONE}.`, ttl: 300 };
    }
  });
}

/** The server side: its own database, simulator and server; one JSON line when ready, then answers commands on stdin. */
async function serve(): Promise<void> {
  if (!process.env['DATABASE_URL']) throw new Error('DATABASE_URL is required');
  const db = await benchDatabase('dnsplane_reads_scale');
  const sim = await OvhSimulator.start({ zones: { [ZONE]: zoneRecords() } });
  const server = await startServerOn(sim, db.url!, {
    DNSPLANE_ZONES: ZONE,
    DNSPLANE_DRIFT_INTERVAL: 'off',
    DNSPLANE_LOCK_TIMEOUT: '120s',
    // The prober's first round after an apply asks the in-process simulator's name servers, which
    // index the whole zone then: not the answer's work, kept out of the figures' windows.
    DNSPLANE_PROBE_BACKOFF: '10m..10m',
  });
  const tenants: Awaited<ReturnType<typeof createTenant>>[] = [];
  for (let i = 0; i < T; i++) tenants.push(await createTenant(server.ctx.pool, { name: `c${i}`, zones: [ZONE] }));
  // Sync once, then give the sets round the tenants (one generation bump), as if each had created its own.
  const [first] = await records(server.ctx, tenants[0]!.tenant, { zones: [ZONE], knownGenerations: new Map(), includeForeign: true });
  let generation = 0n;
  // The rows written over 8 connections (a bench's set-up, nobody reads meanwhile), then one bump.
  const sets = first!.endpoints.filter((e) => e.dnsName !== ZONE); // the apex NS: nobody's
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < sets.length) {
        const i = next++;
        await store.setOwner(server.ctx.pool, { zone: ZONE, dnsName: sets[i]!.dnsName, recordType: sets[i]!.recordType, tenantId: tenants[i % T]!.tenant.id });
      }
    }),
  );
  await store.withZoneLock(server.ctx.pool, ZONE, { lockTimeoutMs: 60_000 }, async (tx) => {
    generation = await store.bumpGeneration(tx, ZONE);
    await store.notifyZoneChanged(tx, ZONE, generation);
  });
  const ready: Ready = { url: server.url, tokens: tenants.map((t) => t.token), generation: generation.toString() };
  process.stdout.write(`${JSON.stringify(ready)}\n`);
  const delay = monitorEventLoopDelay({ resolution: 1 });
  // The longest garbage collection pause while the delay is watched (how much of the worst delay is the GC's).
  let gcMax = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcMax = Math.max(gcMax, e.duration);
  }).observe({ entryTypes: ['gc'] });
  const commands: Record<string, () => unknown> = {
    memory: () => {
      globalThis.gc?.();
      const m = process.memoryUsage();
      return { rss: m.rss, heapUsed: m.heapUsed, external: m.external + m.arrayBuffers };
    },
    'delay-start': () => {
      delay.reset();
      delay.enable();
      gcMax = 0;
      return {};
    },
    'delay-stop': () => {
      delay.disable();
      return { maxMs: delay.max / 1e6, p99Ms: delay.percentile(99) / 1e6, gcMaxMs: gcMax };
    },
    reads: () => {
      const reads = server.ctx.reads as unknown as { builds: number; stats?: () => object };
      return { builds: reads.builds, ...reads.stats?.() };
    },
  };
  createInterface({ input: process.stdin }).on('line', (line) => process.stdout.write(`${JSON.stringify(commands[line]?.() ?? { error: line })}\n`));
  process.stdin.on('end', () => {
    void (async () => {
      await server.close();
      await sim.stop();
      await db.drop();
      process.exit(0);
    })();
  });
}

const agent = new http.Agent({ keepAlive: true, maxSockets: C });

/** One POST; resolves with the status and the length of the answer (and its text when asked). */
function post(url: string, headers: Record<string, string>, body: string | Buffer, keepText = false): Promise<{ status: number; bytes: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        if (keepText || bytes < 4096) chunks.push(c);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

function get(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      })
      .on('error', reject);
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

/** Runs fn(i) for i < count, C at a time; the wall time and each call's latency (sorted). */
async function round(count: number, fn: (i: number) => Promise<void>): Promise<{ ms: number; p99: number; max: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(C, count) }, async () => {
      while (next < count) {
        const i = next++;
        const t0 = performance.now();
        await fn(i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { ms: performance.now() - started, p99: percentile(latencies, 99), max: latencies.at(-1) ?? 0 };
}

async function main(): Promise<void> {
  if (process.argv.includes('--serve')) return serve();
  const profile = process.env['SCALE_PROFILE'];
  const self = fileURLToPath(import.meta.url);
  const child = spawn(process.execPath, ['--expose-gc', ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []), '--import', 'tsx', self, '--serve'], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: process.env,
  });
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  createInterface({ input: child.stdout! }).on('line', (l) => (waiting.length ? waiting.shift()!(l) : lines.push(l)));
  let exited: number | null | undefined;
  child.once('exit', (code) => {
    exited = code;
    for (const w of waiting.splice(0)) w(JSON.stringify({ exited: code }));
  });
  const nextLine = () =>
    new Promise<string>((resolve) =>
      lines.length ? resolve(lines.shift()!) : exited !== undefined ? resolve(JSON.stringify({ exited })) : waiting.push(resolve),
    );
  const ask = async <R>(command: string): Promise<R> => {
    child.stdin!.write(`${command}\n`);
    return JSON.parse(await nextLine()) as R;
  };
  const setupStarted = performance.now();
  const ready = JSON.parse(await nextLine()) as Ready;
  if (!ready.tokens) throw new Error(`server did not start: ${JSON.stringify(ready)}`);
  console.log(`zone of ${N} records, ${T} tenants, ${C} concurrent clients (set up in ${((performance.now() - setupStarted) / 1000).toFixed(0)} s)`);
  const rpc = `${ready.url}/dnsplane.v1.ZoneService/Records`;
  const apply = `${ready.url}/dnsplane.v1.ZoneService/Apply`;
  const bearer = (i: number) => ({ authorization: `Bearer ${ready.tokens[i]!}` });
  const mb = (n: number) => `${(n / 2 ** 20).toFixed(0)} MB`;
  const check = (what: string, r: { status: number; text: string }) => {
    if (r.status !== 200) throw new Error(`${what}: HTTP ${r.status}: ${r.text.slice(0, 300)}`);
  };
  let generation = ready.generation;
  let changes = 0;
  const change = async () => {
    const name = `bench${changes++}.${ZONE}`;
    const body = JSON.stringify({
      plan: { policy: 'POLICY_UPSERT_ONLY', desired: { endpoints: [{ dnsName: name, recordType: 'A', targets: ['192.0.2.7'], ttl: 300 }] } },
    });
    const r = await post(apply, bearer(0), body, true);
    check('apply', r);
    generation = (JSON.parse(r.text) as { zones: { generation: string }[] }).zones[0]!.generation;
  };
  const read = (i: number, includeForeign: boolean, known?: string) =>
    post(rpc, bearer(i), JSON.stringify({ zones: [ZONE], includeForeign, ...(known ? { knownGenerations: { [ZONE]: known } } : {}) }));

  try {
    const m0 = await ask<{ rss: number; heapUsed: number }>('memory');
    console.log(`server at rest (zone synced, nothing read): RSS ${mb(m0.rss)}, heap ${mb(m0.heapUsed)}`);

    // 1. Every tenant reads the zone with includeForeign once; /healthz asked beside.
    if (runs('1')) {
      const health: number[] = [];
      let reading = true;
      const healthLoop = (async () => {
        while (reading) {
          const t0 = performance.now();
          await get(`${ready.url}/healthz`);
          health.push(performance.now() - t0);
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      let answerBytes = 0;
      const r1 = await round(T, async (i) => {
        const r = await read(i, true);
        check('includeForeign read', r);
        answerBytes = r.bytes;
      });
      reading = false;
      await healthLoop;
      health.sort((a, b) => a - b);
      const m1 = await ask<{ rss: number; heapUsed: number; external: number }>('memory');
      console.log(
        `1. ${T} tenants read includeForeign once (answer ${mb(answerBytes)}): ${(r1.ms / 1000).toFixed(2)} s, p99 ${r1.p99.toFixed(0)} ms; then RSS ${mb(m1.rss)}, heap ${mb(m1.heapUsed)}, buffers ${mb(m1.external)}; /healthz p99 ${percentile(health, 99).toFixed(1)} ms, max ${(health.at(-1) ?? 0).toFixed(1)} ms`,
      );
      console.log(`   read cache: ${JSON.stringify(await ask('reads'))}`);
    }

    // 2. One change, then every tenant polls once with the generation it had.
    for (const includeForeign of runs('2') ? [false, true] : []) {
      const what = includeForeign ? 'includeForeign' : 'own records';
      // Warm: every tenant has this generation's answer (the round below starts from there).
      await round(T, async (i) => check('warm', await read(i, includeForeign)));
      const had = generation;
      const unchanged = await round(T, async (i) => check('poll', await read(i, includeForeign, had)));
      await change();
      const changed = await round(T, async (i) => {
        const r = await read(i, includeForeign, had);
        check('poll', r);
        if (r.text.includes('"notModified":true')) throw new Error('a poll after the change was answered not modified');
      });
      console.log(
        `2. one change, then ${T} tenants poll once (${what}): ${(changed.ms / 1000).toFixed(2)} s for the round, p99 ${changed.p99.toFixed(0)} ms; nothing changed: ${(unchanged.ms / 1000).toFixed(2)} s`,
      );
    }
    if (runs('2')) {
      const m2 = await ask<{ rss: number; heapUsed: number; external: number }>('memory');
      console.log(
        `   after the polls: RSS ${mb(m2.rss)}, heap ${mb(m2.heapUsed)}, buffers ${mb(m2.external)}; read cache: ${JSON.stringify(await ask('reads'))}`,
      );
    }

    // 3. The worst event-loop delay during one full Records answer.
    const binary = createClient(
      ZoneService,
      createConnectTransport({
        baseUrl: ready.url,
        httpVersion: '1.1',
        useBinaryFormat: true,
        interceptors: [
          (next) => (req) => {
            req.header.set('authorization', bearer(1).authorization);
            return next(req);
          },
        ],
      }),
    );
    // The floor: the worst delay over a second in which nothing is asked (a busy machine's own).
    await ask('delay-start');
    await new Promise((r) => setTimeout(r, 1_000));
    const idle = await ask<{ maxMs: number; gcMaxMs: number }>('delay-stop');
    console.log(`3. nothing asked for 1 s: worst event-loop delay ${idle.maxMs.toFixed(1)} ms (longest GC pause ${idle.gcMaxMs.toFixed(1)} ms)`);
    for (const [form, answer] of [
      ['Connect JSON', async () => check('full', await read(1, true))],
      ['binary Connect', async () => void (await binary.records({ zones: [ZONE], includeForeign: true }))],
    ] as const) {
      for (const when of ['first after a change', 'again']) {
        if (when !== 'again') {
          await change();
          // What the apply leaves running (its probe's first round, the NOTIFYs) is not the answer's:
          // let it pass. The base is built by the Records call below, not by the change.
          await new Promise((r) => setTimeout(r, 1_000));
        }
        await ask('delay-start');
        const t0 = performance.now();
        await answer();
        const ms = performance.now() - t0;
        const d = await ask<{ maxMs: number; p99Ms: number; gcMaxMs: number }>('delay-stop');
        console.log(
          `3. one full Records answer (includeForeign, ${form}, ${when}): ${ms.toFixed(0)} ms; worst event-loop delay ${d.maxMs.toFixed(1)} ms (longest GC pause ${d.gcMaxMs.toFixed(1)} ms)`,
        );
      }
    }
  } finally {
    agent.destroy();
    child.stdin!.end();
    if (exited === undefined) await new Promise((r) => child.once('exit', r));
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
