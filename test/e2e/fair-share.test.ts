/**
 * A fair OVH budget (issue 10 item 3): the process-wide token bucket (DNSPLANE_OVH_RATE) is shared
 * round robin between tenants, then between a tenant's zones (src/ovh/ratelimit.ts). Asserted where the
 * limiter decides (its grants, in order: RateLimiter.observe), not on wall times: tenant B's calls are
 * granted after at most one call of each other waiting party, while a FIFO would have put them behind
 * everything queued before them.
 *
 * One apply sends its operations one after the other, so a single bulk apply keeps one call waiting;
 * what fills the queue is work in parallel: tenant A applying to several zones at once, and a cold read
 * of a large zone (8 GETs at a time, work of no tenant).
 */
import { create } from '@bufbuild/protobuf';
import { afterAll, describe, expect, it } from 'vitest';
import { EndpointSchema, Policy, type Endpoint } from '../../src/gen/dnsplane/v1/zone_pb.js';
import type { GrantNotice } from '../../src/ovh/ratelimit.js';
import type { SimRecordInit } from '../../src/ovhsim/index.js';
import { startHarness, type Harness } from '../helpers/server.js';

const A_ZONES = ['a1.test', 'a2.test', 'a3.test', 'a4.test', 'a5.test', 'a6.test'];
const BIG = 'big.test';
const B_ZONE = 'b.test';

function records(n: number, prefix: string): SimRecordInit[] {
  return Array.from({ length: n }, (_, i) => ({ subDomain: `${prefix}${i}`, fieldType: 'A', target: `198.51.100.${(i % 250) + 1}`, ttl: 300 }));
}

function ep(dnsName: string, target: string): Endpoint {
  return create(EndpointSchema, { dnsName, recordType: 'A', targets: [target], ttl: 300 });
}

function createAll(h: Harness, token: string, endpoints: Endpoint[]) {
  return h.zoneClient(token).apply({
    source: {
      case: 'plan',
      value: { policy: Policy.SYNC, input: { case: 'changes', value: { create: endpoints, updateOld: [], updateNew: [], delete: [] } } },
    },
  });
}

let h: Harness | undefined;
afterAll(async () => {
  await h?.close();
});

describe('a fair OVH budget at DNSPLANE_OVH_RATE=20', () => {
  it("tenant B's one-record apply is served in turn while tenant A's work fills the queue", async () => {
    const zones: Record<string, SimRecordInit[]> = { [BIG]: records(150, 'r'), [B_ZONE]: [] };
    for (const z of A_ZONES) zones[z] = [];
    h = await startHarness({ zones, env: { DNSPLANE_OVH_RATE: '20', DNSPLANE_DRIFT_INTERVAL: 'off' } });
    const a = await h.tenant('a', [...A_ZONES, BIG]);
    const b = await h.tenant('b', [B_ZONE]);
    await h.zoneClient(a).records({ zones: A_ZONES });
    await h.zoneClient(b).records({ zones: [B_ZONE] });

    const grants: GrantNotice[] = [];
    let deep!: () => void;
    const queueIsDeep = new Promise<void>((resolve) => (deep = resolve));
    const stop = h.server.ctx.ovh.rateLimiter.observe((g) => {
      grants.push(g);
      if (g.queued >= 10) deep();
    });
    try {
      // A: a cold read of its big zone (152 records, one GET each, 8 at a time) and one apply of 5
      // creates in each of 6 zones (6 zones applied at once, each one call at a time).
      const aRead = h.zoneClient(a).records({ zones: [BIG] });
      const aApply = createAll(
        h,
        a,
        A_ZONES.flatMap((z) => [1, 2, 3, 4, 5].map((i) => ep(`n${i}.${z}`, `192.0.2.${i}`))),
      );
      await queueIsDeep;
      const started = performance.now();
      const bApply = await createAll(h, b, [ep(`web.${B_ZONE}`, '192.0.2.80')]);
      const bMs = performance.now() - started;
      await Promise.all([aRead, aApply]);

      expect(bApply.zones.map((z) => z.zone)).toEqual([B_ZONE]);
      const bGrants = grants.filter((g) => g.flow.tenant === 'b');
      expect(bGrants.map((g) => g.flow.zone)).toEqual([B_ZONE, B_ZONE]); // its POST and its refresh
      for (const g of bGrants) {
        // There was a queue to wait behind (a FIFO would have granted all of it first) ...
        expect(g.queued, 'calls still waiting when B was served').toBeGreaterThanOrEqual(4);
        // ... and B waited for one turn of each other party (A's applies, the cold read), not for it.
        expect(g.grantedWhileWaiting, 'calls granted before B').toBeLessThanOrEqual(2);
      }
      console.log(
        `fair share: B's apply took ${Math.round(bMs)} ms; its 2 calls were granted after ${bGrants.map((g) => g.grantedWhileWaiting).join(' and ')} other calls, with ${bGrants.map((g) => g.queued).join(' and ')} still queued (at 20/s a FIFO would have made each wait about ${Math.round(Math.min(...bGrants.map((g) => g.queued)) * 50)} ms more)`,
      );
    } finally {
      stop();
    }
  }, 60_000);
});
