/**
 * A centre running with DNSPLANE_DRY_RUN: external-dns's apply is a success (204) in both modes —
 * nothing was sent on purpose — and OVH sees no write. A 5xx here would have external-dns retry
 * the same changes every loop.
 */
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { startSidecar, type Sidecar } from '../../src/webhook/index.js';
import { callLines } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { ExternalDns } from '../helpers/external-dns.js';
import { centralWebhook, type TestWebhook } from '../helpers/central-webhook.js';

const ZONE = 'example.com';
let h: Harness;
let wh: TestWebhook;
let sidecar: Sidecar;
let token: string;

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] }, env: { DNSPLANE_DRY_RUN: 'true' } });
  wh = await centralWebhook(h);
  token = await h.tenant('alice', [ZONE]);
  sidecar = await startSidecar({ client: h.zoneClient(token), listen: { host: '127.0.0.1', port: 0 }, log: pino({ level: 'silent' }) });
});

afterAll(async () => {
  await sidecar?.close();
  await wh?.close();
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

it.each([
  ['central', () => wh.url('alice', token)],
  ['sidecar', () => sidecar.url],
])('%s: an apply is 204 and OVH sees no write', async (_mode, url) => {
  const e = new ExternalDns(url());
  await e.records();
  h.sim.clearCalls();
  await e.applyChanges({ create: [{ dnsName: `www.${ZONE}`, targets: ['192.0.2.1'], recordType: 'A' }] });
  expect(e.exchanges.at(-1)!.status).toBe(204);
  expect(h.sim.writes()).toEqual([]);
  expect(callLines(h.sim)).toEqual([]);
});
