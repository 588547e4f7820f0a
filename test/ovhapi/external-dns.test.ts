/**
 * external-dns v0.22's in-tree OVH provider (--provider=ovh), its call sequence replayed
 * (test/helpers/external-dns-ovh.ts: list zones, SOA, record ids, each record by id, creates, updates,
 * deletes, refresh), by three tenants' clusters on one zone at once, each with its own OVH-style key
 * against the OVH API dnsplane serves: each tenant's records end as it asked, none touches another's
 * (a write into another's set is refused at the write, and that cluster publishes nothing), OVH sees
 * the minimal operations and one refresh per coalesced group, and polling costs no OVH call — and,
 * the served SOA naming dnsplane's DNS door as its `server`, which answers the same serial, a loop
 * with nothing changed costs dnsplane two requests per cluster (the zone list and one DNS question),
 * while a change by any tenant makes every cluster read its zone again at its next loop.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOvhKey } from '../../src/core/credentials/ovh-admin.js';
import { RateLimiter } from '../../src/ovh/ratelimit.js';
import { queueBehindLock } from '../helpers/core-apply.js';
import { callLines } from '../helpers/expect.js';
import { dnsAtOf, ExternalDnsReplay, OvhHttp, type ExtChanges, type ExtEndpoint } from '../helpers/external-dns-ovh.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'shared.test';
const REC = `/domain/zone/${ZONE}/record`;
const REFRESH = `POST /domain/zone/${ZONE}/refresh`;
const CLUSTERS = ['c1', 'c2', 'c3'];

let h: Harness;
const clusters: Record<string, ExternalDnsReplay> = {};
const http: OvhHttp[] = [];

beforeAll(async () => {
  h = await startHarness({
    zones: { [ZONE]: [{ subDomain: '', fieldType: 'A', target: '192.0.2.1', ttl: 300 }] },
    // One group takes every apply queued behind it: no time bound a loaded machine could reach.
    env: {
      DNSPLANE_SECRETS_KEY: randomBytes(32).toString('base64'),
      DNSPLANE_APPLY_COALESCE: '10m',
      DNSPLANE_LOCK_TIMEOUT: '5m',
      DNSPLANE_OVH_API_RATE: '1000',
      DNSPLANE_OVH_API_BURST: '1000',
      DNSPLANE_DNS_LISTEN: '127.0.0.1:0',
    },
  });
  // The served SOA names the DNS door (127.0.0.1, port 53 behind a Service in a cluster): here its test port.
  const dnsAt = dnsAtOf({
    '127.0.0.1': `127.0.0.1:${h.server.dns!.port}`,
    ...Object.fromEntries(h.sim.dnsServers.map((s) => [s.name, `${s.host}:${s.port}`])),
  });
  for (const name of CLUSTERS) {
    const token = await h.tenant(name, [ZONE]);
    await h.zoneClient(token).records({ zones: [ZONE] });
    const issued = await createOvhKey({ pool: h.server.ctx.pool, secrets: h.server.ctx.secrets, actor: null }, { tenant: name });
    const client = new OvhHttp({
      endpoint: `${h.server.url}/ovh/1.0`,
      applicationKey: issued.key.applicationKey,
      applicationSecret: issued.applicationSecret,
      consumerKey: issued.consumerKey,
    });
    http.push(client);
    clusters[name] = new ExternalDnsReplay(client, ZONE, dnsAt, new RateLimiter(20, 64));
  }
});

afterAll(async () => {
  for (const c of http) c.close();
  await h?.close();
});

const a = (sub: string, ...targets: string[]): ExtEndpoint => ({ dnsName: `${sub}.${ZONE}`, recordType: 'A', targets, ttl: 300 });
const changes = (c: Partial<ExtChanges>): ExtChanges => ({ create: [], updateOld: [], updateNew: [], delete: [], ...c });
const upstream = () => callLines(h.sim).map((l) => l.replace(/\/record\/\d+$/, '/record/ID'));
const published = () =>
  h.sim
    .publishedRecords(ZONE)
    .map((r) => `${r.subDomain} ${r.fieldType} ${r.target}`)
    .sort();
const pollAll = () => Promise.all(CLUSTERS.map((c) => clusters[c]!.records()));

describe('external-dns --provider=ovh, three clusters on one zone', () => {
  it('create: every cluster polls (no OVH call), then all apply at once: the minimal POSTs and one refresh for the group', async () => {
    h.sim.clearCalls();
    await pollAll();
    expect(upstream()).toEqual([]);
    const outcomes = await queueBehindLock(
      h.server.ctx,
      ZONE,
      CLUSTERS.map((c, i) => () => clusters[c]!.apply(changes({ create: [a(`app-${c}`, `198.51.100.${i * 2 + 1}`, `198.51.100.${i * 2 + 2}`)] }))),
    );
    expect(outcomes.every((o) => o.ok)).toBe(true);
    expect(upstream()).toEqual([...Array(6).fill(`POST ${REC}`), REFRESH]);
    expect(published()).toEqual(
      [
        ' A 192.0.2.1',
        ...CLUSTERS.flatMap((c, i) => [`app-${c} A 198.51.100.${i * 2 + 1}`, `app-${c} A 198.51.100.${i * 2 + 2}`]),
        ' NS dns1.sim.test.',
        ' NS ns1.sim.test.',
      ].sort(),
    );
  });

  it('each cluster sees only its own records; polling again costs no OVH call', async () => {
    h.sim.clearCalls();
    await pollAll();
    for (const c of CLUSTERS) {
      expect(clusters[c]!.seen.map((r) => r.subDomain)).toEqual([`app-${c}`, `app-${c}`]);
    }
    await pollAll();
    expect(upstream()).toEqual([]);
  });

  it("a loop with nothing changed costs dnsplane two requests per cluster (GET /domain/zone, one SOA question to the door); another tenant's apply is seen at the next loop", async () => {
    await pollAll();
    const counts = () => CLUSTERS.map((c) => [clusters[c]!.apiCalls, clusters[c]!.dnsQueries]);
    const before = counts();
    await pollAll();
    expect(counts().map(([api, dns], i) => [api! - before[i]![0]!, dns! - before[i]![1]!])).toEqual(CLUSTERS.map(() => [1, 1]));
    // c3 writes: the zone's generation moves, so c1's next loop reads its records again (2 + 2 of them).
    await clusters['c3']!.apply(changes({ create: [a('extra-c3', '203.0.113.9')] }));
    const c1 = clusters['c1']!;
    const [api, dns] = [c1.apiCalls, c1.dnsQueries];
    await c1.records();
    expect([c1.apiCalls - api, c1.dnsQueries - dns]).toEqual([5, 1]);
    expect(c1.seen.map((r) => r.subDomain)).toEqual(['app-c1', 'app-c1']);
    await clusters['c3']!.records();
    await clusters['c3']!.apply(changes({ delete: [a('extra-c3', '203.0.113.9')] }));
  });

  it("update and delete at once, and a write into another cluster's set: refused at the write, that cluster publishes nothing, the others' one PUT, two DELETEs and one refresh", async () => {
    await pollAll();
    h.sim.clearCalls();
    const outcomes = await queueBehindLock(h.server.ctx, ZONE, [
      () =>
        clusters['c1']!.apply(changes({ updateOld: [a('app-c1', '198.51.100.1', '198.51.100.2')], updateNew: [a('app-c1', '198.51.100.1', '198.51.100.9')] })),
      () => clusters['c2']!.apply(changes({ delete: [a('app-c2', '198.51.100.3', '198.51.100.4')] })),
    ]);
    expect(outcomes.every((o) => o.ok)).toBe(true);
    // c3 thinks app-c1 is free (it does not see it): its create is refused as OVH refuses an ungranted call.
    await expect(clusters['c3']!.apply(changes({ create: [a('app-c1', '203.0.113.1')], delete: [] }))).rejects.toThrow(
      /^POST \/domain\/zone\/shared\.test\/record: 403 \{"errorCode":"NOT_GRANTED_CALL","httpCode":"403 Forbidden","message":"This call has not been granted \(app-c1\.shared\.test A is owned by tenant \\"c1\\"\)"\}$/,
    );
    expect(upstream()).toEqual([`PUT ${REC}/ID`, `DELETE ${REC}/ID`, `DELETE ${REC}/ID`, REFRESH]);
    expect(published().filter((r) => r.startsWith('app-'))).toEqual([
      'app-c1 A 198.51.100.1',
      'app-c1 A 198.51.100.9',
      'app-c3 A 198.51.100.5',
      'app-c3 A 198.51.100.6',
    ]);
    h.sim.clearCalls();
    await pollAll();
    expect(upstream()).toEqual([]);
  });
});
