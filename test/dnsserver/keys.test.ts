/**
 * The DNS door with the keys dnsplane stores (core/keys/tsig.ts: sealed under DNSPLANE_SECRETS_KEY,
 * cached, exact across rotations), not keys handed to it: a key made through core signs nsupdate's
 * UPDATE; once rotated, its old secret is BADSIG and the new one works; once its tenant is disabled,
 * or the key deleted, it is BADKEY. An UPDATE at a protected name is REFUSED naming it (journaled).
 * Nothing is sent to OVH for a refused message.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { createTenant, setTenantDisabled } from '../../src/core/tenants/tenants.js';
import { createTsigKey, deleteTsigKey, rotateTsigKey } from '../../src/core/credentials/tsig-admin.js';
import { protectNames } from '../../src/core/plan/protected-names.js';
import * as store from '../../src/store/index.js';
import { callLines } from '../helpers/expect.js';
import { describeWithTools, nsupdate } from '../helpers/dns-tools.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'example.test';
let h: Harness;
let port: number;

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] }, env: { DNSPLANE_DNS_LISTEN: '127.0.0.1:0', DNSPLANE_SECRETS_KEY: randomBytes(32).toString('base64') } });
  port = h.server.dns!.port;
  await createTenant(h.server.ctx.pool, { name: 'cluster1', zones: [ZONE] });
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

describeWithTools(['nsupdate'], 'stored TSIG keys at the DNS door', () => {
  const admin = () => ({ pool: h.server.ctx.pool, secrets: h.server.ctx.secrets, actor: null });
  const send = (name: string, secret: Buffer, value: string) =>
    nsupdate(
      { algorithm: 'hmac-sha256', name, secret: secret.toString('base64') },
      `server 127.0.0.1 ${port}\nzone ${ZONE}\nupdate add _acme-challenge.${ZONE} 60 TXT "${value}"\nsend\n`,
    );

  it('a key made through core signs an UPDATE; rotated, deleted, or its tenant disabled, it no longer does', async () => {
    const issued = await createTsigKey(admin(), { tenant: 'cluster1', algorithm: 'hmac-sha256', acmeOnly: true });
    const name = issued.key.name;
    const first = await send(name, issued.secret, 'one');
    expect(first.code, first.stderr).toBe(0);
    // (The zone's first read, its GETs, comes first: the UPDATE is the first to need the zone.)
    expect(callLines(h.sim).filter((c) => !c.startsWith('GET '))).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);

    const rotated = await rotateTsigKey(admin(), name);
    h.sim.clearCalls();
    const old = await send(name, issued.secret, 'two');
    expect(old.code).not.toBe(0);
    expect(old.stdout + old.stderr).toMatch(/BADSIG|tsig indicates error/);
    expect((await send(name, rotated.secret, 'two')).code).toBe(0);

    await setTenantDisabled(h.server.ctx.pool, 'cluster1', true);
    h.sim.clearCalls();
    const disabled = await send(name, rotated.secret, 'three');
    expect(disabled.code).not.toBe(0);
    expect(disabled.stdout + disabled.stderr).toMatch(/BADKEY|tsig indicates error/);
    await setTenantDisabled(h.server.ctx.pool, 'cluster1', false);

    await deleteTsigKey(admin(), name);
    const deleted = await send(name, rotated.secret, 'four');
    expect(deleted.code).not.toBe(0);
    expect(deleted.stdout + deleted.stderr).toMatch(/BADKEY|tsig indicates error/);
    expect(callLines(h.sim)).toEqual([]);
  });
  it('an UPDATE at a protected name is REFUSED, naming it, with nothing sent to OVH; the refusal is journaled', async () => {
    const issued = await createTsigKey(admin(), { tenant: 'cluster1', algorithm: 'hmac-sha256' });
    await protectNames(h.server.ctx.pool, null, ZONE, [`locked.${ZONE}`], false);
    h.sim.clearCalls();
    const out = await nsupdate(
      { algorithm: 'hmac-sha256', name: issued.key.name, secret: issued.secret.toString('base64') },
      `server 127.0.0.1 ${port}\nzone ${ZONE}\nupdate add locked.${ZONE} 60 A 192.0.2.1\nsend\n`,
    );
    expect(out.code).not.toBe(0);
    expect(out.stdout + out.stderr).toMatch(/REFUSED/);
    expect(callLines(h.sim)).toEqual([]);
    const refusal = (await store.listJournal(h.server.ctx.pool, { zone: ZONE, limit: 5 })).find((e) => (e.intent as { kind?: string }).kind === 'dns-refusal')!;
    expect((refusal.intent as { summary: string }).summary).toMatch(
      /^DNS UPDATE refused \(REFUSED\): protected names: this apply changes locked\.example\.test, protected in zone example\.test/,
    );
  });
});
