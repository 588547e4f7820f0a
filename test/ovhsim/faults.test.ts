/**
 * Injected faults, seen through the real node client (and raw HTTPS where the client hides things).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { OvhClient } from '@ovhcloud/node-ovh';
import { OvhSimulator } from '../../src/ovhsim/index.js';
import { clientFor, raw, rejection, trust } from '../helpers/sim-clients.js';

const ZONE = 'faults.test';
const RECORDS = `/domain/zone/${ZONE}/record`;
let sim: OvhSimulator;
let client: OvhClient;
let wwwId: string;

beforeAll(async () => {
  sim = await OvhSimulator.start({ zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1' }] } });
  trust(sim);
  client = clientFor(sim);
  await client.requestPromised('GET', '/domain/zone'); // learn the time once
  wwwId = sim.draftRecords(ZONE).find((r) => r.subDomain === 'www')?.id ?? '';
});

afterAll(async () => {
  await sim?.stop();
});

beforeEach(() => {
  sim.faults.clear();
  sim.clearCalls();
});

const getWww = (): Promise<unknown> => client.requestPromised('GET', `${RECORDS}/${wwwId}`);

describe('fault rules', () => {
  it('fails only the nth matching call', async () => {
    const h = sim.faults.fail({ method: 'GET', path: `/domain/zone/*/record/*`, nth: 2, effect: { kind: 'status', status: 500 } });
    await expect(getWww()).resolves.toMatchObject({ subDomain: 'www' });
    expect(await rejection(getWww())).toEqual({ error: 500, message: 'Internal server error' });
    await expect(getWww()).resolves.toMatchObject({ subDomain: 'www' });
    expect(h).toMatchObject({ matched: 2, fired: 1, active: false });
    // Other routes and methods do not count.
    expect(sim.calls().map((c) => c.status)).toEqual([200, 500, 200]);
  });

  it('fails the next N matching calls with `times`, then lets calls through', async () => {
    sim.faults.fail({ path: '/domain/zone/faults.test/record', times: 2, effect: { kind: 'status', status: 503 } });
    expect(await rejection(client.requestPromised('GET', RECORDS))).toEqual({ error: 503, message: 'Service is temporarily unavailable' });
    expect(await rejection(client.requestPromised('GET', RECORDS))).toMatchObject({ error: 503 });
    await expect(client.requestPromised('GET', RECORDS)).resolves.toEqual(expect.any(Array));
  });

  it('fails every matching call until cleared when neither nth nor times is given; RegExp paths work', async () => {
    const h = sim.faults.fail({ path: /\/record\/\d+$/, effect: { kind: 'status', status: 404 } });
    for (let i = 0; i < 3; i++) {
      expect(await rejection(getWww())).toEqual({ error: 404, message: `The requested object (id = ${wwwId}) does not exist` });
    }
    h.remove();
    await expect(getWww()).resolves.toMatchObject({ subDomain: 'www' });
  });

  it('answers a route with a given status and OVH body, without performing the operation', async () => {
    sim.faults.fail({
      method: 'POST',
      path: '/domain/zone/*/record',
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'Simulated refusal' } },
    });
    const before = sim.draftRecords(ZONE).length;
    expect(await rejection(client.requestPromised('POST', RECORDS, { fieldType: 'A', subDomain: 'x', target: '192.0.2.2' }))).toEqual({
      error: 400,
      message: 'Simulated refusal',
    });
    expect(sim.draftRecords(ZONE)).toHaveLength(before);
    const res = await raw(sim, 'POST', `/1.0${RECORDS}`, { body: '{}', sign: {} });
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['x-ovh-queryid']).toBeTruthy();
  });

  it('performs the operation before a status answer with apply: true', async () => {
    sim.faults.fail({ method: 'POST', path: '/domain/zone/*/record', times: 1, effect: { kind: 'status', status: 500, apply: true } });
    expect(await rejection(client.requestPromised('POST', RECORDS, { fieldType: 'A', subDomain: 'applied', target: '192.0.2.3' }))).toMatchObject({
      error: 500,
    });
    expect(sim.draftRecords(ZONE).filter((r) => r.subDomain === 'applied')).toHaveLength(1);
  });

  it('answers 408 with an HTML body (the node client rejects with a string error)', async () => {
    sim.faults.fail({ path: '/domain/zone', times: 1, effect: { kind: 'html' } });
    const err = await rejection(client.requestPromised('GET', '/domain/zone'));
    expect(typeof err.error).toBe('string');
    expect(err.error).toMatch(/Unable to parse JSON/);
    expect(sim.calls().at(-1)?.status).toBe(408);
    sim.faults.fail({ path: '/domain/zone', times: 1, effect: { kind: 'html' } });
    const res = await raw(sim, 'GET', '/1.0/domain/zone', { sign: {} });
    expect(res.status).toBe(408);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('<html>');
  });

  it('answers 429 with Retry-After', async () => {
    sim.faults.fail({ path: '/domain/zone', times: 2, effect: { kind: 'rateLimit', retryAfterSeconds: 7 } });
    const res = await raw(sim, 'GET', '/1.0/domain/zone', { sign: {} });
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('7');
    expect(JSON.parse(res.text)).toMatchObject({ class: 'Client::TooManyRequests', message: expect.any(String) });
    expect(await rejection(client.requestPromised('GET', '/domain/zone'))).toMatchObject({ error: 429 });
    await expect(client.requestPromised('GET', '/domain/zone')).resolves.toEqual([ZONE]);
  });

  it('drops the connection without answering and without performing the operation', async () => {
    sim.faults.fail({ method: 'POST', times: 1, effect: { kind: 'drop' } });
    const err = await rejection(client.requestPromised('POST', RECORDS, { fieldType: 'A', subDomain: 'dropped', target: '192.0.2.4' }));
    expect(typeof err.error === 'number' && err.error >= 200).toBe(false); // a connection error, no HTTP status
    expect(sim.draftRecords(ZONE).filter((r) => r.subDomain === 'dropped')).toHaveLength(0);
    expect(sim.calls().at(-1)).toMatchObject({ method: 'POST', status: 0 });
    await expect(client.requestPromised('GET', '/domain/zone')).resolves.toEqual([ZONE]);
  });

  it('applies then drops (a POST that timed out after OVH did it)', async () => {
    sim.faults.fail({ method: 'POST', path: '/domain/zone/*/record', nth: 1, effect: { kind: 'applyThenDrop' } });
    const err = await rejection(client.requestPromised('POST', RECORDS, { fieldType: 'A', subDomain: 'ghost', target: '192.0.2.5' }));
    expect(typeof err.error === 'number' && err.error >= 200).toBe(false);
    const ghost = sim.draftRecords(ZONE).filter((r) => r.subDomain === 'ghost');
    expect(ghost).toHaveLength(1);
    expect(sim.calls().at(-1)).toMatchObject({ method: 'POST', status: 0 });
    expect(await client.requestPromised('GET', RECORDS, { subDomain: 'ghost' })).toEqual([Number(ghost[0]?.id)]);
  });

  it('answers id 0 to a POST that created the record (idZero)', async () => {
    sim.faults.fail({ method: 'POST', path: '/domain/zone/*/record', times: 1, effect: { kind: 'idZero' } });
    const rec = (await client.requestPromised('POST', RECORDS, { fieldType: 'A', subDomain: 'zero', target: '192.0.2.6' })) as { id: number };
    expect(rec.id).toBe(0);
    const stored = sim.draftRecords(ZONE).filter((r) => r.subDomain === 'zero');
    expect(stored).toHaveLength(1);
    expect(Number(stored[0]?.id)).toBeGreaterThan(2 ** 32);
  });

  it('delays one call (delay) and every call (latency), measured from the log', async () => {
    sim.faults.fail({ path: '/domain/zone', times: 1, effect: { kind: 'delay', ms: 120 } });
    let t0 = Date.now();
    await client.requestPromised('GET', '/domain/zone');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(115);

    sim.faults.setLatency(100);
    sim.clearCalls();
    await client.requestPromised('GET', '/domain/zone');
    const done = Date.now();
    const at = sim.calls()[0]?.at ?? done;
    expect(done - at).toBeGreaterThanOrEqual(95);
    sim.faults.clear(); // latency back to 0
    t0 = Date.now();
    await client.requestPromised('GET', '/domain/zone');
    expect(Date.now() - t0).toBeLessThan(95);
  });

  it('hangs a call without answering; stop() still completes', async () => {
    const hung = await OvhSimulator.start({ zones: { 'hang.test': [] } });
    trust(hung);
    hung.faults.fail({ path: '/domain/zone', effect: { kind: 'hang' } });
    const pending = raw(hung, 'GET', '/1.0/domain/zone', { sign: {} }).then(
      () => 'answered',
      () => 'failed',
    );
    const winner = await Promise.race([pending, new Promise((r) => setTimeout(() => r('still waiting'), 150))]);
    expect(winner).toBe('still waiting');
    expect(hung.calls()).toMatchObject([{ path: '/domain/zone', status: 0 }]);
    await hung.stop();
    expect(await pending).toBe('failed');
  });

  it('checks faults before authentication (they model the network and the front end)', async () => {
    sim.faults.fail({ path: '/auth/time', times: 1, effect: { kind: 'status', status: 502 } });
    const res = await raw(sim, 'GET', '/1.0/auth/time');
    expect(res.status).toBe(502);
    expect(JSON.parse(res.text)).toMatchObject({ class: 'Server::BadGateway' });
  });
});

describe('automatic rate limit (assumed, opt-in)', () => {
  it('answers 429 with Retry-After above the configured rate', async () => {
    const limited = await OvhSimulator.start({ zones: { 'rl.test': [] }, behavior: { rateLimit: { max: 3, windowMs: 60_000, retryAfterSeconds: 2 } } });
    try {
      trust(limited);
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await raw(limited, 'GET', '/1.0/domain/zone', { sign: {} })).status);
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      const res = await raw(limited, 'GET', '/1.0/domain/zone', { sign: {} });
      expect(res.headers['retry-after']).toBe('2');
      expect((await raw(limited, 'GET', '/1.0/auth/time')).status).toBe(200); // unsigned: not counted
    } finally {
      await limited.stop();
    }
  });
});
