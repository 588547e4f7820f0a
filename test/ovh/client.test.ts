/**
 * The OVH client against the simulator over real HTTPS (through @ovhcloud/node-ovh): retries and what
 * they wait, Retry-After, timeouts, and the POST that must never create two records. Every test asserts
 * the exact calls the simulator received and the waits the client asked for (its sleep is recorded and
 * skipped, so no test depends on the wall clock).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { OvhApi } from '../../src/ovh/client.js';
import type { OvhCallInfo, RetryPolicy } from '../../src/ovh/client/transport.js';
import { OvhError } from '../../src/ovh/errors.js';
import { OvhSimulator } from '../../src/ovhsim/index.js';
import { ovhApiFor, simCalls } from '../helpers/ovh-api.js';

const ZONE = 'client.test';
const RECORDS = `/domain/zone/${ZONE}/record`;
let sim: OvhSimulator;
let sleeps: number[];
let infos: OvhCallInfo[];
let warnings: string[];

function api(opts: { timeoutMs?: number; retry?: Partial<RetryPolicy> } = {}): OvhApi {
  return ovhApiFor(sim, {
    timeoutMs: opts.timeoutMs ?? 5_000,
    retry: opts.retry,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    onCall: (info) => infos.push(info),
    warn: (msg) => warnings.push(msg),
  });
}

/** The simulator's log as "METHOD path?query status", /auth/time left out. */
function calls(): string[] {
  return simCalls(sim);
}

async function failure(p: Promise<unknown>): Promise<OvhError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(OvhError);
  return e as OvhError;
}

let client: OvhApi;
let wwwId: string;

beforeAll(async () => {
  sim = await OvhSimulator.start({ zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 }] } });
  sleeps = [];
  infos = [];
  warnings = [];
  client = api();
  await client.getSoa(ZONE); // learns the time once
  wwwId = sim.draftRecords(ZONE).find((r) => r.subDomain === 'www')!.id;
});

afterAll(async () => {
  await sim?.stop();
});

beforeEach(() => {
  sim.faults.clear();
  sim.clearCalls();
  sleeps = [];
  infos = [];
  warnings = [];
});

describe('retries of calls that are safe to repeat', () => {
  it.each([
    ['500', { kind: 'status', status: 500 } as const, 500],
    ['502', { kind: 'status', status: 502 } as const, 502],
    ['503', { kind: 'status', status: 503 } as const, 503],
    ['408 with an HTML body', { kind: 'html', status: 408 } as const, 408],
    ['a dropped connection', { kind: 'drop' } as const, 0],
  ])('a GET is retried after %s, with exponential backoff and jitter', async (_name, effect, status) => {
    sim.faults.fail({ method: 'GET', path: `/domain/zone/${ZONE}/soa`, times: 3, effect });
    const soa = await client.getSoa(ZONE);
    expect(soa.serial).toBe(sim.soaSerial(ZONE));
    expect(calls()).toEqual([...Array(3).fill(`GET /domain/zone/${ZONE}/soa ${status}`), `GET /domain/zone/${ZONE}/soa 200`]);
    // Equal jitter: attempt n waits in [d/2, d], d = 200 * 2^n.
    expect(sleeps).toHaveLength(3);
    sleeps.forEach((ms, n) => {
      expect(ms).toBeGreaterThanOrEqual((200 * 2 ** n) / 2);
      expect(ms).toBeLessThanOrEqual(200 * 2 ** n);
    });
    expect(infos.map((i) => [i.status, i.attempt])).toEqual([
      [status, 0],
      [status, 1],
      [status, 2],
      [200, 3],
    ]);
  });

  it('gives up after `attempts` calls in all and keeps the status, OVH message and query id', async () => {
    sim.faults.fail({ method: 'GET', path: `/domain/zone/${ZONE}/soa`, effect: { kind: 'status', status: 503 } });
    const e = await failure(client.getSoa(ZONE));
    expect(calls()).toEqual(Array(4).fill(`GET /domain/zone/${ZONE}/soa 503`));
    expect(sleeps).toHaveLength(3);
    expect(e).toMatchObject({ status: 503, kind: 'unavailable', transient: true, ovhMessage: 'Service is temporarily unavailable' });
    expect(e.queryId).toBe(sim.calls().at(-1)!.queryId);
    expect(e.message).toContain(`[query id ${e.queryId}]`);
  });

  it('the backoff is capped at maxDelayMs', async () => {
    const c = api({ retry: { attempts: 6, baseDelayMs: 100, maxDelayMs: 300 } });
    sim.faults.fail({ method: 'GET', path: `/domain/zone/${ZONE}/soa`, times: 5, effect: { kind: 'status', status: 500 } });
    await c.getSoa(ZONE);
    expect(sleeps).toHaveLength(5);
    expect(Math.max(...sleeps)).toBeLessThanOrEqual(300);
    expect(sleeps.slice(2).every((ms) => ms >= 150)).toBe(true);
  });

  it('honours Retry-After on a 429 (read from the answer headers node-ovh hides)', async () => {
    sim.faults.fail({ method: 'GET', path: `/domain/zone/${ZONE}/soa`, times: 2, effect: { kind: 'rateLimit', retryAfterSeconds: 3 } });
    await client.getSoa(ZONE);
    expect(calls()).toEqual([`GET /domain/zone/${ZONE}/soa 429`, `GET /domain/zone/${ZONE}/soa 429`, `GET /domain/zone/${ZONE}/soa 200`]);
    expect(sleeps).toEqual([3000, 3000]);
  });

  it('honours Retry-After on a 503 too', async () => {
    sim.faults.fail({ method: 'GET', path: `/domain/zone/${ZONE}/soa`, times: 1, effect: { kind: 'status', status: 503, headers: { 'Retry-After': '2' } } });
    await client.getSoa(ZONE);
    expect(sleeps).toEqual([2000]);
  });

  it('a 429 without Retry-After backs off', async () => {
    sim.faults.fail({ method: 'GET', path: `/domain/zone/${ZONE}/soa`, times: 1, effect: { kind: 'rateLimit' } });
    await client.getSoa(ZONE);
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThanOrEqual(100);
    expect(sleeps[0]).toBeLessThanOrEqual(200);
  });

  it('does not wait for a Retry-After longer than maxRetryAfterMs: it fails at once', async () => {
    sim.faults.fail({ method: 'GET', path: `/domain/zone/${ZONE}/soa`, effect: { kind: 'rateLimit', retryAfterSeconds: 120 } });
    const e = await failure(client.getSoa(ZONE));
    expect(e).toMatchObject({ status: 429, kind: 'rate_limited', retryAfterMs: 120_000 });
    expect(calls()).toEqual([`GET /domain/zone/${ZONE}/soa 429`]);
    expect(sleeps).toEqual([]);
  });

  it.each([
    [400, 'bad_request'],
    [403, 'auth'],
    [404, 'not_found'],
  ])('does not retry a %s', async (status, kind) => {
    sim.faults.fail({ method: 'GET', path: `/domain/zone/${ZONE}/soa`, times: 1, effect: { kind: 'status', status } });
    const e = await failure(client.getSoa(ZONE));
    expect(e.kind).toBe(kind);
    expect(calls()).toEqual([`GET /domain/zone/${ZONE}/soa ${status}`]);
    expect(sleeps).toEqual([]);
  });

  it('times out a call that gets no answer (our timeout destroys the request), then retries it', async () => {
    const c = api({ timeoutMs: 300 });
    await c.getSoa(ZONE);
    sim.clearCalls();
    infos = [];
    sim.faults.fail({ method: 'GET', path: `/domain/zone/${ZONE}/soa`, times: 1, effect: { kind: 'hang' } });
    await c.getSoa(ZONE);
    expect(calls()).toEqual([`GET /domain/zone/${ZONE}/soa 0`, `GET /domain/zone/${ZONE}/soa 200`]);
    expect(infos.map((i) => i.status)).toEqual([0, 200]);
    expect(warnings).toEqual(['OVH call failed, retrying']);
  });

  it('a timeout ends with "no answer within" when every attempt hangs', async () => {
    const c = api({ timeoutMs: 200, retry: { attempts: 2 } });
    await c.getSoa(ZONE);
    sim.clearCalls();
    sim.faults.fail({ method: 'GET', path: `/domain/zone/${ZONE}/soa`, effect: { kind: 'hang' } });
    const e = await failure(c.getSoa(ZONE));
    expect(e).toMatchObject({ status: 0, kind: 'network' });
    expect(e.message).toMatch(/no answer within 200 ms/);
    expect(calls()).toHaveLength(2);
  });

  it('PUT is retried (it sets the same values again)', async () => {
    sim.faults.fail({ method: 'PUT', path: `${RECORDS}/*`, times: 1, effect: { kind: 'status', status: 502, apply: true } });
    await client.updateRecord(ZONE, wwwId, { target: '192.0.2.9', ttl: 300 });
    expect(calls()).toEqual([`PUT ${RECORDS}/${wwwId} 502`, `PUT ${RECORDS}/${wwwId} 200`]);
    expect(sim.draftRecords(ZONE).find((r) => r.id === wwwId)).toMatchObject({ target: '192.0.2.9' });
    await client.updateRecord(ZONE, wwwId, { target: '192.0.2.1', ttl: 300 });
  });

  it('refresh is retried (publishing twice publishes the same)', async () => {
    sim.faults.fail({ method: 'POST', path: `/domain/zone/${ZONE}/refresh`, times: 1, effect: { kind: 'applyThenDrop' } });
    await client.refresh(ZONE);
    expect(calls()).toEqual([`POST /domain/zone/${ZONE}/refresh 0`, `POST /domain/zone/${ZONE}/refresh 204`]);
  });
});

describe('DELETE', () => {
  it('a 404 counts as done (the record is already gone)', async () => {
    const r = sim.addRecord(ZONE, { subDomain: 'gone', fieldType: 'A', target: '192.0.2.5' });
    sim.deleteRecord(ZONE, r.id);
    await client.deleteRecord(ZONE, r.id);
    expect(calls()).toEqual([`DELETE ${RECORDS}/${r.id} 404`]);
  });

  it('a DELETE whose answer was lost is sent again, and its 404 then counts as done', async () => {
    const r = sim.addRecord(ZONE, { subDomain: 'lost', fieldType: 'A', target: '192.0.2.6' });
    sim.faults.fail({ method: 'DELETE', path: `${RECORDS}/*`, times: 1, effect: { kind: 'applyThenDrop' } });
    await client.deleteRecord(ZONE, r.id);
    expect(calls()).toEqual([`DELETE ${RECORDS}/${r.id} 0`, `DELETE ${RECORDS}/${r.id} 404`]);
    expect(sim.draftRecords(ZONE).some((x) => x.id === r.id)).toBe(false);
  });
});

describe('POST …/record never creates two records', () => {
  const body = (subDomain: string, target = '192.0.2.50') => ({ fieldType: 'A', subDomain, target, ttl: 300 });
  const count = (subDomain: string) => sim.draftRecords(ZONE).filter((r) => r.subDomain === subDomain).length;
  const known = () => new Set(sim.draftRecords(ZONE).map((r) => r.id));

  it('done, then the connection dropped (a timed-out POST that happened): found by look-up, not sent again', async () => {
    sim.faults.fail({ method: 'POST', path: RECORDS, times: 1, effect: { kind: 'applyThenDrop' } });
    const r = await client.createRecord(ZONE, body('atd'), known());
    const made = sim.draftRecords(ZONE).find((x) => x.subDomain === 'atd')!;
    expect(r).toMatchObject({ id: made.id, subDomain: 'atd', target: '192.0.2.50' });
    expect(count('atd')).toBe(1);
    expect(calls()).toEqual([`POST ${RECORDS} 0`, `GET ${RECORDS}?fieldType=A&subDomain=atd 200`, `GET ${RECORDS}/${made.id} 200`]);
    expect(sleeps).toHaveLength(1); // waited before looking up
  });

  it('timed out without being done (no answer): looked up, not found, sent again: one record', async () => {
    const c = api({ timeoutMs: 300 });
    await c.getSoa(ZONE);
    sim.clearCalls();
    sim.faults.fail({ method: 'POST', path: RECORDS, times: 1, effect: { kind: 'hang' } });
    const r = await c.createRecord(ZONE, body('hung'), known());
    expect(count('hung')).toBe(1);
    expect(calls()).toEqual([`POST ${RECORDS} 0`, `GET ${RECORDS}?fieldType=A&subDomain=hung 200`, `POST ${RECORDS} 200`]);
    expect(r.id).toBe(sim.draftRecords(ZONE).find((x) => x.subDomain === 'hung')!.id);
  });

  it('a 503 that was not done: looked up, then sent again', async () => {
    sim.faults.fail({ method: 'POST', path: RECORDS, times: 1, effect: { kind: 'status', status: 503 } });
    await client.createRecord(ZONE, body('five'), known());
    expect(count('five')).toBe(1);
    expect(calls()).toEqual([`POST ${RECORDS} 503`, `GET ${RECORDS}?fieldType=A&subDomain=five 200`, `POST ${RECORDS} 200`]);
  });

  it('a 500 that was done: found by look-up', async () => {
    sim.faults.fail({ method: 'POST', path: RECORDS, times: 1, effect: { kind: 'status', status: 500, apply: true } });
    await client.createRecord(ZONE, body('done500'), known());
    expect(count('done500')).toBe(1);
    expect(calls().map((c) => c.replace(/\d{10,}/, 'ID'))).toEqual([
      `POST ${RECORDS} 500`,
      `GET ${RECORDS}?fieldType=A&subDomain=done500 200`,
      `GET ${RECORDS}/ID 200`,
    ]);
  });

  it('a 429 was refused: sent again after Retry-After, without a look-up', async () => {
    sim.faults.fail({ method: 'POST', path: RECORDS, times: 1, effect: { kind: 'rateLimit', retryAfterSeconds: 1 } });
    await client.createRecord(ZONE, body('limited'), known());
    expect(count('limited')).toBe(1);
    expect(calls()).toEqual([`POST ${RECORDS} 429`, `POST ${RECORDS} 200`]);
    expect(sleeps).toEqual([1000]);
  });

  it('id 0 in the answer: resolved by look-up among the ids it did not know', async () => {
    sim.faults.fail({ method: 'POST', path: RECORDS, times: 1, effect: { kind: 'idZero' } });
    const r = await client.createRecord(ZONE, body('zero'), known());
    const made = sim.draftRecords(ZONE).find((x) => x.subDomain === 'zero')!;
    expect(r.id).toBe(made.id);
    expect(count('zero')).toBe(1);
    expect(calls()).toEqual([`POST ${RECORDS} 200`, `GET ${RECORDS}?fieldType=A&subDomain=zero 200`, `GET ${RECORDS}/${made.id} 200`]);
    expect(warnings[0]).toMatch(/id 0/);
  });

  it('the look-up never takes a record it already knew (an identical one made before) for the new one', async () => {
    const old = sim.addRecord(ZONE, { subDomain: 'twin', fieldType: 'A', target: '192.0.2.50', ttl: 300 });
    sim.faults.fail({ method: 'POST', path: RECORDS, times: 1, effect: { kind: 'applyThenDrop' } });
    const r = await client.createRecord(ZONE, body('twin'), known());
    expect(r.id).not.toBe(old.id);
    expect(count('twin')).toBe(2); // the old one and exactly one new one
    expect(calls()).toEqual([`POST ${RECORDS} 0`, `GET ${RECORDS}?fieldType=A&subDomain=twin 200`, `GET ${RECORDS}/${r.id} 200`]);
  });

  it('a TXT record is recognized although OVH answers it quoted', async () => {
    sim.faults.fail({ method: 'POST', path: RECORDS, times: 1, effect: { kind: 'applyThenDrop' } });
    const r = await client.createRecord(ZONE, { fieldType: 'TXT', subDomain: 'txt', target: 'hello world', ttl: 300 }, known());
    expect(r.target).toBe('"hello world"');
    expect(sim.draftRecords(ZONE).filter((x) => x.subDomain === 'txt')).toHaveLength(1);
  });

  it('a 400 is not retried and not looked up', async () => {
    sim.faults.fail({ method: 'POST', path: RECORDS, times: 1, effect: { kind: 'status', status: 400 } });
    const e = await failure(client.createRecord(ZONE, body('bad'), known()));
    expect(e.kind).toBe('bad_request');
    expect(calls()).toEqual([`POST ${RECORDS} 400`]);
  });

  it('gives up after `attempts` POSTs, each preceded by a look-up, and creates nothing', async () => {
    sim.faults.fail({ method: 'POST', path: RECORDS, effect: { kind: 'status', status: 503 } });
    const e = await failure(client.createRecord(ZONE, body('never'), known()));
    expect(e.status).toBe(503);
    const lookup = `GET ${RECORDS}?fieldType=A&subDomain=never 200`;
    expect(calls()).toEqual([`POST ${RECORDS} 503`, lookup, `POST ${RECORDS} 503`, lookup, `POST ${RECORDS} 503`, lookup, `POST ${RECORDS} 503`, lookup]);
    expect(count('never')).toBe(0);
  });
});

describe('reads', () => {
  it('a record that 404s right after its creation is fetched again', async () => {
    const r = sim.addRecord(ZONE, { subDomain: 'late', fieldType: 'A', target: '192.0.2.7' });
    sim.faults.fail({ method: 'GET', path: `${RECORDS}/${r.id}`, times: 1, effect: { kind: 'status', status: 404 } });
    expect(await client.getRecord(ZONE, r.id, 2)).toMatchObject({ id: r.id, subDomain: 'late' });
    expect(calls()).toEqual([`GET ${RECORDS}/${r.id} 404`, `GET ${RECORDS}/${r.id} 200`]);
  });

  it('the export is the zone file (one call)', async () => {
    const text = await client.getExport(ZONE);
    expect(text).toMatch(/^\$TTL/);
    expect(text).toMatch(/www\s+300 IN A\s+192\.0\.2\.1/);
    expect(calls()).toEqual([`GET /domain/zone/${ZONE}/export 200`]);
  });
});
