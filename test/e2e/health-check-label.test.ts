/**
 * The health check's label end to end (issue 30, docs/failover.md): `dnsplane/health-check` on an
 * endpoint (Connect) and the provider-specific property `webhook/dnsplane-health-check` (external-dns,
 * through the webhook) are validated, stored on the owner's ownership rows, and echoed back by
 * Records, so that no client plans an update; a change of the check alone costs no OVH call.
 * Real Postgres, the OVH simulator over HTTPS, external-dns's plan (test/helpers/external-dns.ts).
 */
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApplyStatus, EndpointSchema, Policy, type Endpoint, type PlanRequest } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { callLines } from '../helpers/expect.js';
import { centralWebhook, type TestWebhook } from '../helpers/central-webhook.js';
import { ExternalDns, hasChanges, type GoEndpoint } from '../helpers/external-dns.js';
import { listOwnership } from '../../src/store/index.js';
import pg from 'pg';

const ZONE = 'example.com';
const CHECK = 'dnsplane/health-check';
let h: Harness;
let wh: TestWebhook;
let alice: string;
let pool: pg.Pool;

const calls = (): string[] => callLines(h.sim);
const ep = (name: string, targets: string[], labels: Record<string, string> = {}, recordType = 'A'): Endpoint =>
  create(EndpointSchema, { dnsName: `${name}.${ZONE}`, recordType, targets, ttl: 300, labels });
const desired = (endpoints: Endpoint[]): PlanRequest =>
  ({ policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints } } }) as unknown as PlanRequest;
const apply = async (token: string, req: PlanRequest) => (await h.zoneClient(token).apply({ source: { case: 'plan', value: req } })).zones[0]!;
const checksOf = async (name: string) =>
  (await listOwnership(pool, ZONE)).filter((r) => r.dnsName === `${name}.${ZONE}`).map((r) => `${r.tenantName} ${r.target || '-'} ${r.healthCheck ?? 'none'}`);
const recordsOf = async (token: string, name: string) =>
  (await h.zoneClient(token).records({ zones: [ZONE] })).zones[0]!.endpoints.filter((e) => e.dnsName === `${name}.${ZONE}`);

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  wh = await centralWebhook(h);
  pool = new pg.Pool({ connectionString: h.databaseUrl, max: 2 });
  alice = await h.tenant('alice', [ZONE]);
});

afterAll(async () => {
  await pool?.end();
  await wh?.close();
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

describe('the label dnsplane/health-check through Connect', () => {
  it('is stored with the set it comes with and echoed by Records', async () => {
    const z = await apply(alice, desired([ep('www', ['192.0.2.1', '192.0.2.2'], { [CHECK]: 'http://:8080/healthz' })]));
    expect(z.status).toBe(ApplyStatus.APPLIED);
    expect(await checksOf('www')).toEqual(['alice - http://:8080/healthz']);
    expect((await recordsOf(alice, 'www'))[0]!.labels).toMatchObject({ owner: 'alice', [CHECK]: 'http://:8080/healthz' });
  });

  it('the same desired state again plans nothing and calls nothing', async () => {
    const z = await apply(alice, desired([ep('www', ['192.0.2.1', '192.0.2.2'], { [CHECK]: 'http://:8080/healthz' })]));
    expect(z.status).toBe(ApplyStatus.NO_CHANGES);
    expect(calls()).toEqual([]);
  });

  it('a change of the check alone: no OVH call, the generation moves, Records shows the new check', async () => {
    const before = (await h.zoneClient(alice).records({ zones: [ZONE] })).zones[0]!.generation;
    const z = await apply(alice, desired([ep('www', ['192.0.2.1', '192.0.2.2'], { [CHECK]: 'tcp://:443' })]));
    expect(z.status).toBe(ApplyStatus.NO_CHANGES);
    expect(calls()).toEqual([]);
    expect(await checksOf('www')).toEqual(['alice - tcp://:443']);
    const after = (await h.zoneClient(alice).records({ zones: [ZONE] })).zones[0]!;
    expect(after.generation).toBe(before + 1n);
    expect(after.endpoints.find((e) => e.dnsName === `www.${ZONE}`)!.labels[CHECK]).toBe('tcp://:443');
  });

  it('a desired state without the label removes the check (no OVH call)', async () => {
    await apply(alice, desired([ep('www', ['192.0.2.1', '192.0.2.2'])]));
    expect(calls()).toEqual([]);
    expect(await checksOf('www')).toEqual(['alice - none']);
    expect((await recordsOf(alice, 'www'))[0]!.labels[CHECK]).toBeUndefined();
  });

  it.each([
    ['http://backend:8080/healthz', /a host was named/],
    ['http://10.0.0.1:8080/', /a host was named/],
    ['ftp://:21', /empty host/],
    ['http://:99999/', /port 99999 is out of range/],
    ['tcp://:443/path', /tcp:\/\/:PORT/],
    ['http://:8080/a b', /empty host/],
  ])('refuses %s naming the field and the rule, writing nothing', async (value, rule) => {
    const err = await apply(alice, desired([ep('www', ['192.0.2.9'], { [CHECK]: value })])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toContain(`desired.endpoints[0].labels["${CHECK}"]`);
    expect((err as ConnectError).rawMessage).toMatch(rule);
    expect(calls()).toEqual([]);
  });

  it('refuses a check on a set whose targets are not addresses', async () => {
    const err = (await apply(alice, desired([ep('alias', ['www.example.com'], { [CHECK]: 'tcp://:443' }, 'CNAME')])).catch((e: unknown) => e)) as ConnectError;
    expect(err.rawMessage).toMatch(/a CNAME record set cannot be checked/);
  });
});

describe('the annotation external-dns.alpha.kubernetes.io/webhook-dnsplane-health-check through the webhook', () => {
  let cluster: ExternalDns;
  const api = (check?: string): GoEndpoint => ({
    dnsName: `api.${ZONE}`,
    targets: ['192.0.2.50'],
    recordType: 'A',
    recordTTL: 300,
    ...(check ? { providerSpecific: [{ name: 'webhook/dnsplane-health-check', value: check }] } : {}),
  });

  beforeAll(async () => {
    cluster = new ExternalDns(wh.url('c1', await h.tenant('c1', [ZONE])));
    await cluster.negotiate();
  });

  it('arrives as the property webhook/dnsplane-health-check, is stored, and comes back in GET /records', async () => {
    await cluster.runOnce([api('https://:443/ready')]);
    expect(await checksOf('api')).toEqual(['c1 - https://:443/ready']);
    const read = (await cluster.records()).find((e) => e.dnsName === `api.${ZONE}`)!;
    expect(read.providerSpecific).toEqual([{ name: 'webhook/dnsplane-health-check', value: 'https://:443/ready' }]);
    expect(read.labels?.[CHECK]).toBeUndefined();
  });

  it("external-dns's next loop plans nothing", async () => {
    h.sim.clearCalls();
    const sent = await cluster.runOnce([api('https://:443/ready')]);
    expect(hasChanges(sent)).toBe(false);
    expect(calls()).toEqual([]);
  });

  it('a changed annotation is an update of the check alone: stored, no OVH call, then nothing planned', async () => {
    const sent = await cluster.runOnce([api('tcp://:8443')]);
    expect(sent.updateNew?.[0]?.providerSpecific).toEqual([{ name: 'webhook/dnsplane-health-check', value: 'tcp://:8443' }]);
    expect(calls()).toEqual([]);
    expect(await checksOf('api')).toEqual(['c1 - tcp://:8443']);
    expect(hasChanges(await cluster.runOnce([api('tcp://:8443')]))).toBe(false);
  });

  it('the annotation removed: the check goes, nothing planned after', async () => {
    await cluster.runOnce([api()]);
    expect(await checksOf('api')).toEqual(['c1 - none']);
    expect(hasChanges(await cluster.runOnce([api()]))).toBe(false);
    expect(calls()).toEqual([]);
  });
});
