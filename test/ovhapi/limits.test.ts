/**
 * Rate limits and fairness of the served OVH API, answered as OVH answers them: one tenant over its
 * rate (DNSPLANE_OVH_API_RATE, _BURST) gets 429 with OVH's body and Retry-After, and nothing it asked
 * is done — while another tenant's calls go on; an address that keeps failing to log in is refused
 * before any lookup (the failed-login limiter every door shares), a key that logged in from it is not.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createOvhKey } from '../../src/core/credentials/ovh-admin.js';
import { callLines } from '../helpers/expect.js';
import { ovhCall, type OvhKeyValues } from '../helpers/ovh-api-client.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'example.test';
let h: Harness;
let base: string;
const keys: Record<string, OvhKeyValues> = {};

beforeAll(async () => {
  h = await startHarness({
    zones: { [ZONE]: [] },
    // A rate no test run reaches by time alone: the burst is what the test spends.
    env: {
      DNSPLANE_SECRETS_KEY: randomBytes(32).toString('base64'),
      DNSPLANE_OVH_API_RATE: '0.01',
      DNSPLANE_OVH_API_BURST: '5',
      DNSPLANE_LOGIN_BURST: '3',
      DNSPLANE_LOGIN_RATE: '0.01',
    },
  });
  for (const name of ['noisy', 'calm', 'third']) {
    await h.tenant(name, [ZONE]);
    const issued = await createOvhKey({ pool: h.server.ctx.pool, secrets: h.server.ctx.secrets, actor: null }, { tenant: name });
    keys[name] = { applicationKey: issued.key.applicationKey, applicationSecret: issued.applicationSecret, consumerKey: issued.consumerKey };
  }
  base = `${h.server.url}/ovh/1.0`;
});

afterAll(async () => {
  await h?.close();
});

it("one tenant over its rate: 429, OVH's body, Retry-After, nothing done; another tenant's calls go on", async () => {
  for (let i = 0; i < 5; i++) expect((await ovhCall(base, keys['noisy'], 'GET', '/domain/zone')).status).toBe(200);
  h.sim.clearCalls();
  const refused = await ovhCall(base, keys['noisy'], 'POST', `/domain/zone/${ZONE}/record`, { body: { fieldType: 'TXT', subDomain: 'x', target: 'y' } });
  expect(refused.status).toBe(429);
  expect(refused.json).toEqual({
    class: 'Client::TooManyRequests',
    message: expect.stringMatching(/^tenant "noisy" is over 0\.01 calls per second to dnsplane's OVH API; retry in \d+ s$/),
  });
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(refused.headers.get('x-ovh-queryid')).not.toBeNull();
  expect((await h.server.ctx.pool.query('SELECT count(*)::int AS n FROM ovh_drafts')).rows[0].n).toBe(0);
  expect(callLines(h.sim)).toEqual([]);
  // The calm tenant's bucket is its own.
  for (let i = 0; i < 5; i++) expect((await ovhCall(base, keys['calm'], 'GET', '/domain/zone')).status).toBe(200);
  // GET /auth/time is unsigned and costs nobody's bucket.
  expect((await ovhCall(base, undefined, 'GET', '/auth/time')).status).toBe(200);
});

it('an address failing to log in is refused before any lookup once its burst is spent; a key that logged in from it still works', async () => {
  expect((await ovhCall(base, keys['third'], 'GET', '/domain/zone')).status).toBe(200);
  const stranger = { ...keys['third']!, consumerKey: 's'.repeat(32) };
  for (let i = 0; i < 3; i++) expect((await ovhCall(base, stranger, 'GET', '/domain/zone')).status).toBe(403);
  const limited = await ovhCall(base, stranger, 'GET', '/domain/zone');
  expect(limited.status).toBe(429);
  expect(limited.json).toEqual({ class: 'Client::TooManyRequests', message: expect.stringMatching(/^too many failed logins from .+; try again in \d+ s$/) });
  expect(limited.headers.get('retry-after')).not.toBeNull();
  // A consumer key that logged in from this address is welcome there while it is limited.
  expect((await ovhCall(base, keys['third'], 'GET', '/domain/zone')).status).toBe(200);
});
