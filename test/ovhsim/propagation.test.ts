/**
 * The simulator's two authoritative servers (ovhsim/propagation.ts): GET /domain/zone/{zone} names
 * both; each serves its own copy of the zone, which a refresh reaches after that server's lag — at
 * once by default, held until released, never, or a random lag per server and refresh.
 */
import { Resolver } from 'node:dns/promises';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { OvhSimulator, parseLag } from '../../src/ovhsim/index.js';
import { clientFor, trust } from '../helpers/sim-clients.js';
import { until } from '../helpers/until.js';

const ZONE = 'lag.test';
let sim: OvhSimulator;

beforeAll(async () => {
  sim = await OvhSimulator.start({ zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1' }] } });
  trust(sim);
});

afterAll(async () => {
  await sim?.stop();
});

beforeEach(() => {
  sim.propagation.release();
  sim.propagation.setLag(0);
});

function resolverOf(port: number): Resolver {
  const r = new Resolver({ timeout: 10_000, tries: 1 });
  r.setServers([`127.0.0.1:${port}`]);
  return r;
}

/** What each name server answers for www's A records. */
async function answers(): Promise<string[][]> {
  return Promise.all(sim.dnsServers.map(async (s) => (await resolverOf(s.port).resolve4(`www.${ZONE}`)).sort()));
}

/** Changes www to `target` in the draft and publishes it (as POST …/refresh does). */
function change(target: string): void {
  const id = sim.draftRecords(ZONE).find((r) => r.subDomain === 'www')!.id;
  sim.updateRecord(ZONE, id, { target });
  sim.publish(ZONE);
}

describe('two authoritative servers', () => {
  it('GET /domain/zone/{zone} lists both name servers; each has a port of its own', async () => {
    const info = (await clientFor(sim).requestPromised('GET', `/domain/zone/${ZONE}`)) as { nameServers: string[] };
    expect(info.nameServers).toEqual(['dns1.sim.test', 'ns1.sim.test']);
    expect(sim.dnsServers.map((s) => s.name)).toEqual(['dns1.sim.test', 'ns1.sim.test']);
    expect(sim.dnsServers[0]!.port).toBe(sim.dnsPort);
    expect(new Set(sim.dnsServers.map((s) => s.port)).size).toBe(2);
  });

  it('by default both answer a refresh at once', async () => {
    change('192.0.2.2');
    expect(await answers()).toEqual([['192.0.2.2'], ['192.0.2.2']]);
    expect(sim.servedSerial(ZONE, 0)).toBe(sim.soaSerial(ZONE));
    expect(sim.servedSerial(ZONE, 'ns1.sim.test')).toBe(sim.soaSerial(ZONE));
  });

  it('a held server keeps the old data, with its old serial, until released', async () => {
    change('192.0.2.3');
    const before = sim.soaSerial(ZONE);
    sim.propagation.hold('ns1.sim.test');
    change('192.0.2.4');
    expect(await answers()).toEqual([['192.0.2.4'], ['192.0.2.3']]);
    expect(sim.servedSerial(ZONE, 1)).toBe(before);
    expect(sim.servedSerial(ZONE, 0)).toBe(sim.soaSerial(ZONE));
    const delivered = sim.propagation.deliveries().length;
    sim.propagation.release('ns1.sim.test');
    expect(await answers()).toEqual([['192.0.2.4'], ['192.0.2.4']]);
    expect(sim.propagation.deliveries().slice(delivered)).toEqual([
      { server: 'ns1.sim.test', zone: ZONE, serial: sim.soaSerial(ZONE), at: expect.any(Number) },
    ]);
  });

  it('a server that never publishes keeps the old data; a later lag of 0 lets the next refresh through', async () => {
    change('192.0.2.5');
    sim.propagation.setLag('never', 0);
    change('192.0.2.6');
    expect(await answers()).toEqual([['192.0.2.5'], ['192.0.2.6']]);
    sim.propagation.setLag(0, 0);
    change('192.0.2.7');
    expect(await answers()).toEqual([['192.0.2.7'], ['192.0.2.7']]);
  });

  it('a random lag is drawn per server and refresh within the range, never below its least', async () => {
    sim.propagation.setLag({ min: 100, max: 300 });
    const delivered = sim.propagation.deliveries().length;
    const sent = Date.now();
    change('192.0.2.8');
    expect(await answers()).toEqual([['192.0.2.7'], ['192.0.2.7']]);
    const landed = await until('both servers to publish', () => {
      const d = sim.propagation.deliveries().slice(delivered);
      return d.length === 2 && d;
    });
    for (const d of landed) expect(d.at - sent).toBeGreaterThanOrEqual(100);
    expect(await answers()).toEqual([['192.0.2.8'], ['192.0.2.8']]);
  });

  it('an older refresh landing after a newer one is dropped', async () => {
    sim.propagation.hold(0);
    change('192.0.2.9');
    change('192.0.2.10');
    sim.propagation.release(0);
    expect(await answers()).toEqual([['192.0.2.10'], ['192.0.2.10']]);
    expect(sim.servedSerial(ZONE, 0)).toBe(sim.soaSerial(ZONE));
  });

  it('counts the queries each server receives', async () => {
    const before = sim.dnsQueries();
    await resolverOf(sim.dnsServers[1]!.port).resolve4(`www.${ZONE}`);
    const after = sim.dnsQueries();
    expect(after[0]).toBe(before[0]);
    expect(after[1]).toBe(before[1]! + 1);
  });
});

describe('DNSPLANE_SIM_PROPAGATION', () => {
  it('reads 0, a duration, a range and never; refuses the rest naming the rule', () => {
    expect(parseLag('0')).toBe(0);
    expect(parseLag('5s')).toBe(5000);
    expect(parseLag('250ms')).toBe(250);
    expect(parseLag('2s..8s')).toEqual({ min: 2000, max: 8000 });
    expect(parseLag('never')).toBe('never');
    expect(() => parseLag('8s..2s')).toThrow(/0 <= min <= max/);
    expect(() => parseLag('5')).toThrow(/needs its unit/);
    expect(() => parseLag('soon')).toThrow(/a range \(2s..8s\)/);
  });
});
