/**
 * A call's scope (ovh/client/scope.ts) rides with the client that makes it: OvhApi.scoped() hands out
 * a client whose calls take a flow's share of the rate and whose writes pass a guard, with nothing
 * kept in async context. Proved against the simulator over real HTTPS: the flows the limiter saw, the
 * guard consulted before each write (never a GET) and a refused write never sent, scopes that nest
 * without leaking into the client they came from, and no async context left on once the calls ended.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { callContextActive } from '../../src/ovh/client/diagnostics.js';
import { within, type WriteGuard } from '../../src/ovh/client/scope.js';
import type { GrantNotice } from '../../src/ovh/ratelimit.js';
import { OvhSimulator } from '../../src/ovhsim/index.js';
import { ovhApiFor, simCalls } from '../helpers/ovh-api.js';

const ZONE = 'scope.test';
let sim: OvhSimulator;

beforeAll(async () => {
  sim = await OvhSimulator.start({ zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 }] } });
});
afterAll(async () => {
  await sim.stop();
});

/** A guard that records what it was asked and refuses once told to. */
function recordingGuard(): WriteGuard & { asked: string[]; refuse: boolean } {
  const guard = {
    asked: [] as string[],
    refuse: false,
    async beforeWrite(method: string, path: string) {
      guard.asked.push(`${method} ${path}`);
      if (guard.refuse) throw new Error(`fence: ${method} ${path} refused`);
    },
  };
  return guard;
}

describe('within', () => {
  it("merges the flows (the inner one's fields win, the others are kept) and takes the inner guard only when it has one", () => {
    const outer = recordingGuard();
    const inner = recordingGuard();
    expect(within({ flow: { zone: 'z' }, guard: outer }, { flow: { tenant: 't' } })).toEqual({ flow: { zone: 'z', tenant: 't' }, guard: outer });
    expect(within({ flow: { zone: 'z', tenant: 'a' } }, { flow: { tenant: 'b' }, guard: inner })).toEqual({ flow: { zone: 'z', tenant: 'b' }, guard: inner });
    expect(within({}, {})).toEqual({ flow: {}, guard: undefined });
  });
});

describe('OvhApi.scoped', () => {
  it("each call reaches the limiter with its client's flow: a scope nests in another, and the client it came from keeps its own", async () => {
    const root = ovhApiFor(sim);
    const zoneClient = root.scoped({ flow: { zone: ZONE } });
    const tenantClient = zoneClient.scoped({ flow: { tenant: 'alice' } });
    const grants: GrantNotice[] = [];
    const stop = root.rateLimiter.observe((g) => grants.push(g));
    try {
      await root.getSoa(ZONE);
      await zoneClient.getSoa(ZONE);
      await tenantClient.listRecordsOrIds(ZONE, { subDomain: 'www' });
      await zoneClient.getSoa(ZONE);
    } finally {
      stop();
    }
    // /auth/time, asked once by the first call, rides in that call's flow.
    expect(grants.map((g) => g.flow)).toEqual([{}, {}, { zone: ZONE }, { zone: ZONE, tenant: 'alice' }, { zone: ZONE }]);
  });

  it('the guard is asked before every write of its client (never a GET); a refused write is not sent; other clients are not guarded', async () => {
    const root = ovhApiFor(sim);
    const guard = recordingGuard();
    const fenced = root.scoped({ flow: { zone: ZONE }, guard });
    sim.clearCalls();
    const ids = await fenced.listRecordIds(ZONE, { subDomain: 'www' });
    const created = await fenced.createRecord(ZONE, { subDomain: 'api', fieldType: 'A', target: '192.0.2.2', ttl: 300 }, new Set(ids));
    await fenced.updateRecord(ZONE, created.id, { ttl: 600 });
    expect(guard.asked).toEqual([`POST /domain/zone/${ZONE}/record`, `PUT /domain/zone/${ZONE}/record/${created.id}`]);

    guard.refuse = true;
    await expect(fenced.deleteRecord(ZONE, created.id)).rejects.toThrow(`fence: DELETE /domain/zone/${ZONE}/record/${created.id} refused`);
    await expect(fenced.refresh(ZONE)).rejects.toThrow('refused');
    // The client it came from, and a sibling scope without a guard, write as before.
    await root.deleteRecord(ZONE, created.id);
    await root.scoped({ flow: { tenant: 'bob' } }).refresh(ZONE);
    expect(guard.asked).toHaveLength(4);
    expect(simCalls(sim).map((c) => c.replace(/\/record\/\d+/, '/record/ID'))).toEqual([
      `GET /domain/zone/${ZONE}/record?subDomain=www 200`,
      `POST /domain/zone/${ZONE}/record 200`,
      `PUT /domain/zone/${ZONE}/record/ID 200`,
      `DELETE /domain/zone/${ZONE}/record/ID 200`,
      `POST /domain/zone/${ZONE}/refresh 204`,
    ]);
  });

  it('no async context stays on once the calls have ended (an idle process runs no async_hooks): answered, failed or timed out', async () => {
    const client = ovhApiFor(sim, { timeoutMs: 3_000, retry: { attempts: 1 } }).scoped({ flow: { zone: ZONE } });
    await Promise.all([client.getSoa(ZONE), client.listRecordIds(ZONE)]);
    expect(callContextActive()).toBe(false);
    await expect(client.getSoa('unknown.test')).rejects.toThrow();
    expect(callContextActive()).toBe(false);
    // While a call waits for its answer the context is on (its channel messages must find it) …
    const hang = sim.faults.fail({ method: 'GET', path: `/domain/zone/${ZONE}/soa`, times: 1, effect: { kind: 'hang' } });
    const pending = client.getSoa(ZONE).then(
      () => 'answered',
      (e: unknown) => String(e),
    );
    await vi.waitFor(() => expect(hang.fired).toBe(1), { timeout: 60_000 });
    expect(callContextActive()).toBe(true);
    // … and off once our timeout ended it.
    expect(await pending).toContain('no answer within 3000 ms');
    expect(callContextActive()).toBe(false);
  });
});
