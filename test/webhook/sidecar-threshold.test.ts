/**
 * The change threshold through the sidecar (`dnsplane webhook`, calling the centre over Connect): a
 * change set over the tenant's DNSPLANE_MAX_CHANGE_PERCENT is answered 503 (docs/errors.md: a soft
 * error, external-dns retries every loop and is refused again until someone forces it or raises the
 * limit), counted in the sidecar's dnsplane_webhook_threshold_refusals_total, logged with how to
 * proceed; nothing is sent to OVH. test/e2e/guard.test.ts covers the central listener.
 */
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { startSidecar, type Sidecar } from '../../src/webhook/index.js';
import { callLines } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { ExternalDns, ExternalDnsError } from '../helpers/external-dns.js';
import { captureLogger, type LogLine } from '../helpers/log-capture.js';

const ZONE = 'example.com';
let h: Harness;
let sidecar: Sidecar;
let lines: LogLine[];

const names = (n: number) => Array.from({ length: n }, (_, i) => `c${i}.carol.${ZONE}`);

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] } });
  const token = await h.tenant('carol', [ZONE], { suffixes: [`carol.${ZONE}`] });
  const captured = captureLogger();
  lines = captured.lines;
  sidecar = await startSidecar({ client: h.zoneClient(token), listen: { host: '127.0.0.1', port: 0 }, log: captured.log });
  // 10 owned record sets, created through the sidecar: the threshold applies (MIN_OWNED), at the default 30 %.
  await new ExternalDns(sidecar.url).applyChanges({
    create: names(10).map((dnsName) => ({ dnsName, targets: ['192.0.2.1'], recordType: 'A', recordTTL: 300 })),
  });
});

afterAll(async () => {
  await sidecar?.close();
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

it('a change set over the threshold is 503 (external-dns retries), counted and logged with how to proceed; nothing sent', async () => {
  const edns = new ExternalDns(sidecar.url);
  expect(await edns.records()).toHaveLength(10);
  h.sim.clearCalls();
  const del = names(5).map((dnsName) => ({ dnsName, targets: ['192.0.2.1'], recordType: 'A', recordTTL: 300 }));
  const err = await edns.applyChanges({ delete: del }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ExternalDnsError);
  expect([(err as ExternalDnsError).status, (err as ExternalDnsError).soft]).toEqual([503, true]);
  expect(edns.exchanges.at(-1)!.body).toMatch(
    /^change threshold: this apply would delete 5 of the 10 record sets tenant "carol" owns in zone example\.com \(50%, over the limit of 30%\)/,
  );
  expect(callLines(h.sim)).toEqual([]);
  expect(h.sim.draftRecords(ZONE).filter((r) => r.subDomain.endsWith('.carol'))).toHaveLength(10);

  const counted = await sidecar.metrics.registry.getSingleMetric('dnsplane_webhook_threshold_refusals_total')?.get();
  expect(counted?.values).toEqual([{ labels: { tenant: 'carol', zone: ZONE }, value: 1 }]);
  const line = lines.find((l) => l.msg.startsWith('change threshold'));
  expect(line, JSON.stringify(lines.filter((l) => l.level >= 40)).slice(0, 2000)).toBeDefined();
  expect(line).toMatchObject({ tenant: 'carol', zone: ZONE, level: 40 });
  expect(String(line!['proceed'])).toMatch(/--force.*set-max-change/);
  const request = [...lines].reverse().find((l) => l['webhook'] === 'apply' && l['status'] !== undefined);
  expect(request).toMatchObject({ status: 503, level: 40 });

  // Refused again on the next loop, still nothing sent.
  const again = await edns.applyChanges({ delete: del }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect((again as ExternalDnsError).status).toBe(503);
  expect(callLines(h.sim)).toEqual([]);
});
