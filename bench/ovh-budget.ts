/**
 * bench/ovh-budget — `npm run bench:budget`: one OVH budget across replicas (issue 28 part 4).
 * Figures printed, not asserted; not part of `npm test`.
 *
 * BENCH_BUDGET_REPLICAS (3) `dnsplane serve` processes on one database and one OVH simulator (one OVH
 * account), each with DNSPLANE_OVH_RATE=BENCH_BUDGET_RATE (20). A write storm: at the same moment,
 * each replica applies BENCH_BUDGET_CREATES (150) creates to a zone of its own (so no zone lock
 * serializes them: the only thing they share is the account). The simulator logs every call it
 * receives: printed are the upstream calls per second summed over the replicas — the worst 5 s
 * window (sliding, from every call) and the worst 1 s window — against DNSPLANE_OVH_RATE, and how
 * the calls split between the replicas.
 *
 * Environment (all optional): BENCH_BUDGET_REPLICAS, BENCH_BUDGET_RATE, BENCH_BUDGET_CREATES,
 * BENCH_LATENCY_MS (30: the simulator's latency per call), DATABASE_URL.
 */
import { availableParallelism, loadavg } from 'node:os';
import { createTenant } from '../src/core/tenants/tenants.js';
import { Policy, type Endpoint } from '../src/gen/dnsplane/v1/zone_pb.js';
import { zoneClientFor } from '../test/helpers/sim-server.js';
import { applyDesired } from '../test/helpers/zone-requests.js';
import { positiveEnv, withBench } from './lib.js';

const REPLICAS = positiveEnv('BENCH_BUDGET_REPLICAS', 3);
const RATE = positiveEnv('BENCH_BUDGET_RATE', 20);
const CREATES = positiveEnv('BENCH_BUDGET_CREATES', 150);
const LATENCY_MS = Number(process.env['BENCH_LATENCY_MS'] ?? 30);
const say = (line = '') => console.log(line);

/** The most calls received in any window of `ms` starting at a call. */
function worstWindow(at: number[], ms: number): number {
  let worst = 0;
  let j = 0;
  for (let i = 0; i < at.length; i++) {
    while (j < at.length && at[j]! < at[i]! + ms) j++;
    worst = Math.max(worst, j - i);
  }
  return worst;
}

async function main(): Promise<void> {
  const zones = Array.from({ length: REPLICAS }, (_, i) => `storm${i}.test`);
  await withBench(
    'bench_budget',
    { zones: Object.fromEntries(zones.map((z) => [z, [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1' }]])) },
    async ({ pool, sim, serve }) => {
      const tenants = await Promise.all(zones.map((z, i) => createTenant(pool, { name: `cluster${i}`, zones: [z] })));
      const replicas = await Promise.all(zones.map(() => serve(zones.join(','), { DNSPLANE_OVH_RATE: String(RATE) })));
      if (process.env['BENCH_BUDGET_LOG']) for (const r of replicas) r.proc.stdout!.on('data', (b: Buffer) => process.stdout.write(b));
      // Each replica reads its zone once (the first sync), then the storm.
      const clients = replicas.map((r, i) => zoneClientFor(r, tenants[i]!.token, { useBinaryFormat: false }));
      await Promise.all(clients.map((c, i) => c.records({ zones: [zones[i]!] })));
      sim.faults.setLatency(LATENCY_MS);
      sim.clearCalls();
      say(
        `bench/ovh-budget — ${availableParallelism()} CPUs, load ${loadavg()
          .map((l) => l.toFixed(2))
          .join(
            ' ',
          )}; ${REPLICAS} dnsplane serve processes on one database and one OVH account (the simulator, ${LATENCY_MS} ms per call), DNSPLANE_OVH_RATE=${RATE} each`,
      );
      const started = performance.now();
      const results = await Promise.all(
        clients.map((c, i) =>
          applyDesired(
            c,
            Array.from(
              { length: CREATES },
              (_, k) => ({ dnsName: `h${k}.${zones[i]}`, recordType: 'A', targets: [`10.${i}.${(k >> 8) & 255}.${k & 255}`], ttl: 300 }) as Endpoint,
            ),
            Policy.UPSERT_ONLY,
            [zones[i]!],
          ),
        ),
      );
      const seconds = (performance.now() - started) / 1000;
      const calls = sim.calls();
      const at = calls.map((c) => c.at).sort((a, b) => a - b);
      const perZone = zones.map((z) => calls.filter((c) => c.path.includes(`/${z}/`)).length);
      const five = worstWindow(at, 5_000);
      const one = worstWindow(at, 1_000);
      say(
        `write storm: ${REPLICAS} × ${CREATES} creates at once, ${results.map((r) => String(r.zones[0]?.status)).join(', ')}; ${calls.length} OVH calls in ${seconds.toFixed(1)} s (${(calls.length / seconds).toFixed(1)}/s on average), per replica ${perZone.join(' / ')}`,
      );
      say('');
      say('| upstream calls per second, all replicas summed | measured | limit (DNSPLANE_OVH_RATE) |');
      say('|---|---|---|');
      say(`| worst 5 s window | ${(five / 5).toFixed(1)}/s (${five} calls) | ${RATE}/s (${RATE * 5} calls) |`);
      say(`| worst 1 s window | ${one}/s | ${RATE}/s |`);
      say(`| whole storm | ${(calls.length / seconds).toFixed(1)}/s | ${RATE}/s |`);
      say('');
    },
  );
}

await main();
