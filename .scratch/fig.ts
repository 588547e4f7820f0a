// Scratch figures for the report (not committed): DNS queries per visible change, notice lateness, prober CPU.
import pino from 'pino';
import { apply } from '../src/core/apply/index.js';
import type { CoreContext } from '../src/core/context.js';
import { Prober } from '../src/core/probe/prober.js';
import { ServerDirectory } from '../src/core/probe/servers.js';
import { waitVisible } from '../src/core/visibility.js';
import { applyRoom } from '../test/helpers/core-apply.js';

const ZONE = 'fig.test';
const room = await applyRoom({ zones: { [ZONE]: [] }, tenants: ['t'] });
const ctx: CoreContext = { ...room.ctx, instance: 'fig', log: pino({ level: 'silent' }), settings: { ...room.ctx.settings, visibility: { timeoutMs: 120_000, leaseMs: 15_000 } } };
const fixed = room.sim.dnsServers.map((s) => ({ host: s.host, port: s.port }));
const prober = await Prober.start(ctx, { directory: new ServerDirectory(ctx, { fixed }), maxQueries: 16, backoff: { minMs: 1000, maxMs: 30_000 } });
let round = 0;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const lag of [2000, 8000]) {
  for (const n of [1, 50]) {
    room.sim.propagation.setLag(lag);
    const queries: number[] = [];
    const late: number[] = [];
    const cpu: number[] = [];
    for (let rep = 0; rep < 3; rep++) {
      round++;
      const endpoints = Array.from({ length: n }, (_, i) => ({ dnsName: `n${i}.${ZONE}`, recordType: 'A', targets: [`192.0.2.${round % 250}`], ttl: 300 }));
      const q0 = room.sim.dnsQueries().reduce((a, b) => a + b, 0);
      const c0 = process.cpuUsage();
      const res = await apply(ctx, room.tenants['t']!, { input: { kind: 'desired', policy: 'upsert-only', zones: [ZONE], endpoints } });
      const id = res.zones[0]!.journalId!;
      const [v] = await waitVisible(ctx, [id], { timeoutMs: 120_000 });
      const c1 = process.cpuUsage(c0);
      if (v!.state !== 'visible') throw new Error(`not visible: ${JSON.stringify(v)}`);
      const serial = room.sim.soaSerial(ZONE);
      const landed = Math.max(...room.sim.propagation.deliveries().filter((d) => d.zone === ZONE && d.serial === serial).map((d) => d.at));
      late.push(v!.visibleAt!.getTime() - landed);
      queries.push(room.sim.dnsQueries().reduce((a, b) => a + b, 0) - q0);
      cpu.push((c1.user + c1.system) / 1000);
    }
    console.log(`lag ${lag / 1000} s, ${n} change(s)/apply: DNS queries per visible apply median ${median(queries)} max ${Math.max(...queries)} (${(median(queries) / n).toFixed(2)} per change); noticed after the slower server median ${median(late)} ms max ${Math.max(...late)} ms; process CPU per apply (apply + prober + sim) median ${median(cpu).toFixed(0)} ms`);
  }
}
await prober.stop();
await room.close();
