/**
 * bench/loop-delay — `npm run bench:loop`: the worst event-loop delay of a `dnsplane serve` while it
 * does the big one-zone jobs of issue 28 (part 3). Figures printed, not asserted; not part of `npm test`.
 *
 * A server process (its own event loop; real Postgres, the OVH simulator over HTTPS answering
 * expanded record lists, as OVH does) with the DNS door on, one zone of BENCH_LOOP_N records (mixed A,
 * AAAA, TXT, CNAME) and a TSIG key of a tenant granted the zone. Each job is measured by the server's
 * own `nodejs_eventloop_lag_max_seconds` (perf_hooks' monitorEventLoopDelay, reset by each scrape:
 * scraped right before and right after the job, so the figure is the worst delay during exactly that
 * job; the monitor's resolution is 10 ms):
 *
 *  1. the cold sync: the first query of the never-read zone (OVH's records read, turned into cache
 *     rows and written, the zone's view built for the DNS door);
 *  2. an AXFR of the zone, signed (TSIG over every message), over TCP with our client;
 *  3. a second AXFR of the unchanged zone;
 *  4. the resync: AdminService InvalidateZone (the cache dropped and read again from OVH), then the
 *     first AXFR of the new generation;
 *  5. beside each, `/healthz` asked every 20 ms: the slowest answer seen during the job;
 *  6. first, 3 s of nothing: the floor the machine's load alone gives (on a shared machine, a
 *     process not scheduled for a while shows as loop delay too).
 *
 * Environment (all optional): BENCH_LOOP_N=50000, DATABASE_URL (a server to create the bench database
 * on, else an embedded Postgres), BENCH_CPU_PROF=dir (the server writes a CPU profile there).
 */
import { availableParallelism, loadavg } from 'node:os';
import { createTenant } from '../src/core/tenants/tenants.js';
import { TYPE } from '../src/dns/wire/index.js';
import { AdminService } from '../src/gen/dnsplane/v1/admin_pb.js';
import { query, tcpExchange, udpExchange } from '../test/helpers/dns-client.js';
import { mixedRecords } from '../test/helpers/big-zone.js';
import { serviceClient } from '../test/helpers/sim-server.js';
import { positiveEnv, withBench } from './lib.js';

const N = positiveEnv('BENCH_LOOP_N', 50_000);
const ZONE = 'loop.test';
const say = (line = '') => console.log(line);

async function scrapeLagMs(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text);
  return m ? Number(m[1]) * 1000 : NaN;
}

/** Runs job while /healthz is asked every 20 ms; the server's worst loop delay and the slowest /healthz during it. */
async function during(url: string, job: () => Promise<unknown>): Promise<{ lagMs: number; healthzMs: number; ms: number }> {
  await scrapeLagMs(url); // resets the monitor
  let healthzMs = 0;
  let running = true;
  const ticker = (async () => {
    while (running) {
      const t = performance.now();
      await (await fetch(`${url}/healthz`)).text();
      healthzMs = Math.max(healthzMs, performance.now() - t);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const started = performance.now();
  try {
    await job();
  } finally {
    running = false;
  }
  const ms = performance.now() - started;
  await ticker;
  return { lagMs: await scrapeLagMs(url), healthzMs, ms };
}

async function main(): Promise<void> {
  await withBench(
    'bench_loop',
    { zones: { [ZONE]: mixedRecords(N, ZONE) }, behavior: { expandedRecordLists: 'honoured' } },
    async ({ pool, sim, serveDoor }) => {
      await createTenant(pool, { name: 'cluster', zones: [ZONE] });
      const admin = await createTenant(pool, { name: 'ops', zones: [ZONE], admin: true });
      const { child, key } = await serveDoor({ zone: ZONE, tenant: 'cluster', env: { DNSPLANE_OVH_RATE: '1000' } });
      const url = child.url;
      const port = child.dnsPort!;
      say(
        `bench/loop-delay — ${availableParallelism()} CPUs, load ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}; one zone of ${N.toLocaleString('en')} records (A, AAAA, TXT, CNAME); dnsplane serve as a child process`,
      );
      say(
        'worst event-loop delay of the server during each job (nodejs_eventloop_lag_max_seconds, 10 ms resolution), slowest /healthz asked every 20 ms meanwhile',
      );
      say('');
      const rows: Array<[string, { lagMs: number; healthzMs: number; ms: number }, string]> = [];
      let messages = 0;
      let records = 0;
      const axfr = async () => {
        const answers = await tcpExchange(port, query(ZONE, TYPE.AXFR, { key }), { transfer: true, timeoutMs: 300_000 });
        messages = answers.length;
        records = answers.reduce((n, a) => n + a.parsed.message.answers.length, 0);
        if (answers.some((a) => a.parsed.message.header.rcode !== 0) || records < N) throw new Error(`AXFR: ${answers.length} messages, ${records} records`);
      };
      // What this machine's load alone costs a server doing nothing (the other rows' floor).
      rows.push(['idle, 3 s (the floor on this machine now)', await during(url, () => new Promise((r) => setTimeout(r, 3_000))), '']);
      rows.push([
        'cold sync (first query of the zone)',
        await during(url, () => udpExchange(port, query(ZONE, TYPE.SOA), 300_000)),
        `${sim.calls().length} OVH calls`,
      ]);
      rows.push(['AXFR, signed', await during(url, axfr), `${messages} messages, ${records.toLocaleString('en')} records`]);
      rows.push(['AXFR again, zone unchanged', await during(url, axfr), `${messages} messages`]);
      const adminClient = serviceClient(AdminService, { url }, admin.token);
      rows.push(['resync (InvalidateZone)', await during(url, () => adminClient.invalidateZone({ zone: ZONE })), '']);
      rows.push(['AXFR of the new generation', await during(url, axfr), `${messages} messages`]);
      const w = Math.max(...rows.map((r) => r[0].length));
      say(`| ${'job'.padEnd(w)} | worst loop delay | slowest /healthz |      took | notes`);
      say(`|-${'-'.repeat(w)}-|------------------|------------------|-----------|------`);
      for (const [name, r, notes] of rows) {
        say(
          `| ${name.padEnd(w)} | ${`${r.lagMs.toFixed(0)} ms`.padStart(16)} | ${`${r.healthzMs.toFixed(0)} ms`.padStart(16)} | ${`${r.ms.toFixed(0)} ms`.padStart(9)} | ${notes}`,
        );
      }
      say('');
    },
  );
}

await main();
