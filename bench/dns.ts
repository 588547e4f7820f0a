/**
 * bench/dns — the DNS door (issue 23). `npm run bench:dns`; figures printed, not asserted, not part of
 * `npm test`.
 *
 * `dnsplane serve` as a child process (its own event loop and CPU) with DNSPLANE_DNS_LISTEN, on real
 * Postgres (a fresh database on DATABASE_URL's server, else an embedded one) and the OVH simulator over
 * HTTPS, an ACME-only TSIG key made as the command line makes it; the query load comes from a worker
 * thread. Measured:
 *
 * OVH is the simulator at BENCH_RATE calls per second at most (DNSPLANE_OVH_RATE, production's default)
 * and BENCH_LATENCY_MS per call.
 *
 *  1. the round trip of an UPDATE adding one TXT record (signed, UDP, as cert-manager sends it): from
 *     the message to its NOERROR, the refresh included; BENCH_ROUNDS of them one after the other;
 *  2. BENCH_BURST UPDATEs of one zone sent at once: all answered NOERROR? how long, how many
 *     refreshes they used (coalesced applies);
 *  3. unsigned queries per second served (UDP, 64 in flight, DNSPLANE_DNS_RATE lifted for the bench);
 *  4. what a client sees when the zone is busy: tenant A applies BENCH_BULK creates to the zone through
 *     the API, and meanwhile tenant B sends one UPDATE to the same zone: its round trip and RCODE.
 *
 * Environment (all optional):
 *   BENCH_ROUNDS=20  BENCH_BURST=50  BENCH_SECONDS=5  BENCH_BULK=300  BENCH_RATE=20  BENCH_LATENCY_MS=30
 *   DATABASE_URL     a Postgres server to create the bench database on (dropped at the end)
 */
import { availableParallelism, loadavg } from 'node:os';
import { Worker } from 'node:worker_threads';
import { createTenant } from '../src/core/tenants/tenants.js';
import { CLASS, OPCODE, TYPE, encodeMessage, rcodeName, signMessage, type TsigSigner } from '../src/dns/wire/index.js';
import { Policy, type Endpoint } from '../src/gen/dnsplane/v1/zone_pb.js';
import { query, udpExchange } from '../test/helpers/dns-client.js';
import { applyDesired } from '../test/helpers/zone-requests.js';
import { zoneClientFor } from '../test/helpers/sim-server.js';
import { positiveEnv, withBench } from './lib.js';

const ROUNDS = positiveEnv('BENCH_ROUNDS', 20);
const BURST = positiveEnv('BENCH_BURST', 50);
const SECONDS = positiveEnv('BENCH_SECONDS', 5);
const BULK = positiveEnv('BENCH_BULK', 300);
const RATE = positiveEnv('BENCH_RATE', 20);
const LATENCY_MS = Number(process.env['BENCH_LATENCY_MS'] ?? 30);

const ZONE = 'bench.test';
const say = (line = '') => console.log(line);
const ms = (x: number) => `${x.toFixed(1)} ms`;
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const pct = (xs: number[], p: number) => sorted(xs)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN;

function addTxt(key: TsigSigner, name: string, value: string): Buffer {
  const bytes = encodeMessage({
    header: { id: Math.floor(Math.random() * 0xffff), qr: false, opcode: OPCODE.UPDATE, aa: false, tc: false, rd: false, ra: false, z: 0, rcode: 0 },
    questions: [{ name: ZONE, type: TYPE.SOA, class: CLASS.IN }],
    answers: [],
    authorities: [{ name, type: TYPE.TXT, class: CLASS.IN, ttl: 60, data: { kind: 'TXT', strings: [Buffer.from(value)] } }],
    additionals: [],
  });
  return signMessage(bytes, key, undefined).bytes;
}

/** One signed UPDATE over UDP: its round trip and RCODE (TIMEOUT when no answer came in 60 s). */
async function update(port: number, bytes: Buffer): Promise<{ ms: number; rcode: string }> {
  const t = performance.now();
  const a = await udpExchange(port, bytes, 60_000);
  return { ms: performance.now() - t, rcode: a ? rcodeName(a.parsed.message.header.rcode) : 'TIMEOUT' };
}

/** Unsigned queries over UDP from a worker thread, `inFlight` at a time, for `seconds`: answers counted. */
function queryLoad(port: number, message: Buffer, seconds: number, inFlight: number): Promise<{ answers: number; seconds: number }> {
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const dgram = require('node:dgram');
     const s = dgram.createSocket('udp4');
     const msg = Buffer.from(workerData.message);
     let answers = 0; let sent = 0; const started = performance.now(); const until = started + workerData.seconds * 1000;
     const send = () => { sent++; s.send(msg, workerData.port, '127.0.0.1'); };
     s.on('message', () => { answers++; if (performance.now() < until) send(); });
     // A lost datagram must not shrink the window: top it up every 50 ms.
     const topUp = setInterval(() => { const missing = workerData.inFlight - (sent - answers); for (let i = 0; i < missing && performance.now() < until; i++) send(); }, 50);
     s.bind(0, '127.0.0.1', () => { for (let i = 0; i < workerData.inFlight; i++) send(); });
     setTimeout(() => { clearInterval(topUp); s.close(); parentPort.postMessage({ answers, seconds: (performance.now() - started) / 1000 }); }, workerData.seconds * 1000 + 200);`,
    { eval: true, workerData: { port, message, seconds, inFlight } },
  );
  return new Promise((resolve, reject) => {
    worker.once('message', (m: { answers: number; seconds: number }) => {
      void worker.terminate();
      resolve(m);
    });
    worker.once('error', reject);
  });
}

async function main(): Promise<void> {
  await withBench(
    'bench_dns',
    {
      zones: {
        [ZONE]: [
          { subDomain: '', fieldType: 'NS', target: 'dns1.sim.test.' },
          { subDomain: 'www', fieldType: 'A', target: '192.0.2.1' },
        ],
      },
    },
    async ({ pool, sim, serveDoor }) => {
      // Tenants and the key first, straight into the database, as the command line makes them.
      const a = await createTenant(pool, { name: 'bulk', zones: [ZONE] });
      await createTenant(pool, { name: 'acme', zones: [ZONE] });
      const { child, key } = await serveDoor({
        zone: ZONE,
        tenant: 'acme',
        acmeOnly: true,
        env: { DNSPLANE_LOG_LEVEL: 'info', DNSPLANE_OVH_RATE: String(RATE) },
      });
      const port = child.dnsPort!;
      await udpExchange(port, query(ZONE, TYPE.SOA)); // the zone read once
      sim.faults.setLatency(LATENCY_MS);
      say(
        `bench/dns — ${availableParallelism()} CPUs, load ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}; dnsplane serve as a child process; OVH (the simulator) at ${RATE} calls/s at most (DNSPLANE_OVH_RATE), ${LATENCY_MS} ms per call`,
      );
      say('');

      // 1. One TXT add, one after the other.
      const rounds: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const r = await update(port, addTxt(key, `_acme-challenge.r${i}.${ZONE}`, `round-${i}`));
        if (r.rcode !== 'NOERROR') throw new Error(`round ${i}: ${r.rcode}`);
        rounds.push(r.ms);
      }
      say(
        `1. UPDATE round trip, one TXT add (signed, UDP; POST + refresh): median ${ms(pct(rounds, 0.5))}, p95 ${ms(pct(rounds, 0.95))}, max ${ms(Math.max(...rounds))} (${ROUNDS} in turn)`,
      );

      // 2. A burst of UPDATEs of one zone.
      sim.clearCalls();
      const t2 = performance.now();
      const burst = await Promise.all(Array.from({ length: BURST }, (_, i) => update(port, addTxt(key, `_acme-challenge.b${i}.${ZONE}`, `burst-${i}`))));
      const wall = performance.now() - t2;
      const refreshes = sim.calls().filter((c) => c.path.endsWith('/refresh')).length;
      const noerror = burst.filter((r) => r.rcode === 'NOERROR').length;
      say(
        `2. ${BURST} UPDATEs of one zone at once: ${noerror}/${BURST} NOERROR (${[...new Set(burst.map((r) => r.rcode))].join(', ')}) in ${ms(wall)}; ${refreshes} refresh(es) for ${BURST} POSTs; round trips median ${ms(
          pct(
            burst.map((r) => r.ms),
            0.5,
          ),
        )}, max ${ms(Math.max(...burst.map((r) => r.ms)))}`,
      );

      // 3. Unsigned queries per second.
      const load = await queryLoad(port, query(`www.${ZONE}`, TYPE.A, { id: 1 }), SECONDS, 64);
      say(
        `3. unsigned queries served: ${Math.round(load.answers / load.seconds).toLocaleString('en')}/s (UDP, 64 in flight, ${load.seconds.toFixed(1)} s, one client thread; DNSPLANE_DNS_RATE lifted)`,
      );

      // 4. An UPDATE while another tenant's bulk apply holds the zone.
      const bulkClient = zoneClientFor({ url: child.url }, a.token, { useBinaryFormat: false });
      sim.clearCalls();
      const tBulk = performance.now();
      const bulkEndpoints = Array.from(
        { length: BULK },
        (_, i) => ({ dnsName: `bulk${i}.${ZONE}`, recordType: 'A', targets: [`10.1.${(i >> 8) & 255}.${i & 255}`], ttl: 3600 }) as Endpoint,
      );
      const bulk = applyDesired(bulkClient, bulkEndpoints, Policy.UPSERT_ONLY, [ZONE]).then((r) => ({
        ms: performance.now() - tBulk,
        status: String(r.zones[0]?.status),
      }));
      // Once the bulk apply is sending (its first record POSTs reached the simulator): never longer than a minute.
      const deadline = performance.now() + 60_000;
      while (sim.calls().filter((c) => c.method === 'POST').length < 5 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const during = await update(port, addTxt(key, `_acme-challenge.busy.${ZONE}`, 'busy'));
      const bulkDone = await bulk;
      say(
        `4. UPDATE while tenant "bulk" applies ${BULK} creates to the same zone (OVH ${RATE} calls/s at most, ${LATENCY_MS} ms each): ${during.rcode} after ${ms(during.ms)}; the bulk apply took ${ms(bulkDone.ms)} (batches of DNSPLANE_APPLY_BATCH=100 operations, the lock released between them)`,
      );
      say('');
    },
  );
}

await main();
