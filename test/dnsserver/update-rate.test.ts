/**
 * DNS UPDATEs are limited per tenant (DNSPLANE_DNS_UPDATE_RATE, _BURST), not per source address:
 * with nsupdate, a tenant over its burst is REFUSED with nothing sent to OVH and no journal row per
 * refusal, while another tenant sending from the same address goes on; the refusals are counted.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTenant } from '../../src/core/tenants/tenants.js';
import type { TsigKey } from '../../src/core/keys/tsig.js';
import { callLines } from '../helpers/expect.js';
import { cliKey, memoryKeyring } from '../helpers/dns-keys.js';
import { describeWithTools, nsupdate } from '../helpers/dns-tools.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'rate.test';
const keyring = memoryKeyring();
let h: Harness;
let port: number;
let noisy: TsigKey;
let calm: TsigKey;

describeWithTools(['nsupdate'], 'DNS UPDATE rate per tenant', () => {
  beforeAll(async () => {
    h = await startHarness({
      zones: { [ZONE]: [{ subDomain: '', fieldType: 'NS', target: 'dns1.sim.test.' }] },
      env: { DNSPLANE_DNS_LISTEN: '127.0.0.1:0', DNSPLANE_DNS_UPDATE_RATE: '0.01', DNSPLANE_DNS_UPDATE_BURST: '2' },
      dnsKeyring: keyring,
    });
    port = h.server.dns!.port;
    noisy = keyring.add((await createTenant(h.server.ctx.pool, { name: 'noisy', zones: [ZONE] })).tenant);
    calm = keyring.add((await createTenant(h.server.ctx.pool, { name: 'calm', zones: [ZONE] })).tenant);
  });

  afterAll(async () => h?.close());

  const add = async (key: TsigKey, name: string) => {
    const out = await nsupdate(cliKey(key), [`server 127.0.0.1 ${port}`, `zone ${ZONE}`, `update add ${name}.${ZONE} 300 TXT "v"`, 'send', ''].join('\n'));
    return out.code === 0 ? 'NOERROR' : (/update failed: ([A-Z]+)/.exec(out.stdout + out.stderr)?.[1] ?? (out.stdout + out.stderr).trim());
  };

  it('refuses a tenant over its burst with nothing sent and no journal row; another tenant from the same address goes on', async () => {
    expect(await add(noisy, 'n1')).toBe('NOERROR');
    expect(await add(noisy, 'n2')).toBe('NOERROR');
    const journalRows = async () => Number((await h.server.ctx.pool.query('SELECT count(*) AS n FROM journal')).rows[0].n);
    const rowsBefore = await journalRows();
    h.sim.clearCalls();
    expect(await add(noisy, 'n3')).toBe('REFUSED');
    expect(await add(noisy, 'n4')).toBe('REFUSED');
    expect(callLines(h.sim)).toEqual([]);
    expect(await journalRows()).toBe(rowsBefore);
    // The same source address, another tenant: its own bucket.
    expect(await add(calm, 'c1')).toBe('NOERROR');
    const refusals = await h.server.metrics.registry.getSingleMetric('dnsplane_dns_refusals_total')?.get();
    expect(refusals?.values.find((v) => v.labels['tenant'] === 'noisy' && v.labels['rcode'] === 'REFUSED')?.value).toBe(2);
  });
});
