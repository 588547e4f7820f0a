/**
 * The series operators alert on (deploy/kubernetes/monitoring): drift found, and rollbacks left in
 * flight. A record added by hand is found by a drift check and counted; an apply whose refresh
 * never answers leaves its journal row in_flight, which /metrics shows (count and age, read from
 * Postgres at scrape time) until the next holder of the zone lock finishes the rollback.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkZoneDrift } from '../../src/core/drift/drift.js';
import { Policy } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { ep } from '../helpers/expect.js';
import { scrape } from '../helpers/prometheus.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'ops.test';
let h: Harness;
let alice: string;

beforeAll(async () => {
  h = await startHarness({
    zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 }] },
    env: { DNSPLANE_DRIFT_INTERVAL: 'off' },
  });
  alice = await h.tenant('alice', [ZONE]);
  await h.zoneClient(alice).records({ zones: [ZONE] });
});
afterAll(async () => {
  await h?.close();
});

describe('drift metrics', () => {
  it('counts checks by result and the records found changed outside dnsplane', async () => {
    expect((await checkZoneDrift(h.server.ctx, ZONE)).status).toBe('unchanged');
    h.sim.addRecord(ZONE, { subDomain: 'byhand', fieldType: 'A', target: '192.0.2.77', ttl: 60 });
    h.sim.addRecord(ZONE, { subDomain: 'byhand2', fieldType: 'A', target: '192.0.2.78', ttl: 60 });
    h.sim.publish(ZONE);
    expect(await checkZoneDrift(h.server.ctx, ZONE)).toMatchObject({ status: 'changed', added: 2 });
    const value = await scrape(h.server.url);
    expect(value('dnsplane_drift_checks_total', { zone: ZONE, result: 'unchanged' })).toBe(1);
    expect(value('dnsplane_drift_checks_total', { zone: ZONE, result: 'changed' })).toBe(1);
    expect(value('dnsplane_drift_records_total', { zone: ZONE, change: 'added' })).toBe(2);
    expect(value('dnsplane_drift_records_total', { zone: ZONE, change: 'removed' })).toBeUndefined();
  });
});

describe('in-flight journal metrics', () => {
  it('show an apply left in flight, with its age, until the next lock holder rolls it back', async () => {
    let value = await scrape(h.server.url);
    expect(value('dnsplane_journal_in_flight', { zone: ZONE })).toBeUndefined();

    // The refresh answers 500 to every attempt: it may have published, so the row stays in_flight.
    h.sim.faults.fail({ method: 'POST', path: `/domain/zone/${ZONE}/refresh`, times: 4, effect: { kind: 'status', status: 500 } });
    const err = await h
      .zoneClient(alice)
      .apply({
        source: {
          case: 'plan',
          value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`api.${ZONE}`, 'A', ['192.0.2.5'])] } } },
        },
      })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(err?.code).toBe(Code.Unavailable);

    value = await scrape(h.server.url);
    expect(value('dnsplane_journal_in_flight', { zone: ZONE })).toBe(1);
    expect(value('dnsplane_journal_in_flight_oldest_seconds', { zone: ZONE })).toBeGreaterThanOrEqual(0);
    // Counted as a failed or errored apply (what DnsplaneApplyFailures alerts on).
    const failed =
      (value('dnsplane_apply_duration_seconds_count', { zone: ZONE, outcome: 'failed' }) ?? 0) +
      (value('dnsplane_apply_duration_seconds_count', { zone: ZONE, outcome: 'error' }) ?? 0);
    expect(failed).toBe(1);

    // The next holder of the zone lock (here a drift check) finishes the rollback.
    await checkZoneDrift(h.server.ctx, ZONE);
    value = await scrape(h.server.url);
    expect(value('dnsplane_journal_in_flight', { zone: ZONE })).toBeUndefined();
    expect(value('dnsplane_journal_in_flight_oldest_seconds', { zone: ZONE })).toBeUndefined();
  });
});
