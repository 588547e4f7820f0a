/**
 * One OVH budget across replicas (issue 28 part 4), on a real Postgres: the account's bucket row
 * (store.leaseOvhBudget) driven at times the test gives, so grants are counted against the time the
 * database acted at, never against the wall clock; then two SharedOvhBudget instances (two replicas)
 * under real OVH client limiters; a replica that cannot reach the database.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SharedOvhBudget } from '../../src/core/ovh-budget.js';
import { RateLimiter } from '../../src/ovh/ratelimit.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await testDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const RATE = 10;
const CAPACITY = 2;
const LIFETIME_MS = 2_000;
let accounts = 0;
const T0 = Date.parse('2026-01-01T00:00:00Z');
const at = (ms: number) => new Date(T0 + ms);

describe('the account bucket, at the times the test gives', () => {
  it('two replicas asking in turn are never granted more than capacity + rate × elapsed, and get the full rate between them', async () => {
    const account = `acct-${++accounts}`;
    const held = new Map<string, string>();
    let granted = 0;
    const ask = async (replica: string, ms: number) => {
      const leaseId = held.get(replica);
      const r = await store.leaseOvhBudget(db.pool, {
        account,
        replica,
        rate: RATE,
        capacity: CAPACITY,
        want: CAPACITY,
        lifetimeMs: LIFETIME_MS,
        at: at(ms),
        ...(leaseId ? { close: { leaseId, unused: 0 } } : {}),
      });
      held.delete(replica);
      if (r.granted > 0) held.set(replica, r.leaseId!);
      granted += r.granted;
      // The invariant, at every step: what was handed out fits the bucket (full at the start) and its refill.
      expect(granted).toBeLessThanOrEqual(CAPACITY + (RATE * ms) / 1000);
      return r;
    };
    // 10 s of both replicas asking every 30 ms (each closing its spent lease as it asks again).
    for (let ms = 0; ms <= 10_000; ms += 30) {
      await ask('a', ms);
      await ask('b', ms + 7);
    }
    // Nothing lost to the sharing either: the full rate, give or take the last lease's rounding.
    expect(granted).toBeGreaterThanOrEqual((RATE * 10_000) / 1000 - CAPACITY);
  });

  it("a dead replica's lease holds its room until it expires, then the room comes back; a closed lease gives its unspent tokens back at once", async () => {
    const account = `acct-${++accounts}`;
    const lease = (replica: string, ms: number, close?: { leaseId: string; unused: number }, want = CAPACITY) =>
      store.leaseOvhBudget(db.pool, {
        account,
        replica,
        rate: RATE,
        capacity: CAPACITY,
        want,
        lifetimeMs: LIFETIME_MS,
        at: at(ms),
        ...(close ? { close } : {}),
      });
    const dead = await lease('dead', 0);
    expect(dead.granted).toBe(CAPACITY);
    // The bucket refills, but every token of the capacity is leased: none for the other replica.
    const waiting = await lease('alive', 1_000);
    expect(waiting.granted).toBe(0);
    expect(waiting.retryMs).toBeGreaterThan(0);
    expect(waiting.retryMs).toBeLessThanOrEqual(1000 / RATE);
    expect((await lease('alive', LIFETIME_MS - 1)).granted).toBe(0);
    // The dead replica never closed its lease: at its expiry, the room is back.
    const back = await lease('alive', LIFETIME_MS);
    expect(back.granted).toBe(CAPACITY);
    expect(back.replicas).toBe(2);
    // A live replica closing its lease unspent: the tokens go back to the bucket, the other gets them at once.
    const given = await lease('alive', LIFETIME_MS, { leaseId: back.leaseId!, unused: CAPACITY });
    expect(given.granted).toBe(CAPACITY); // its own again, from the tokens it gave back
    const other = await lease('other', LIFETIME_MS, undefined);
    expect(other.granted).toBe(0);
    // Nobody waits any more (want 0): closed, its tokens back, and the other replica gets them.
    await lease('alive', LIFETIME_MS, { leaseId: given.leaseId!, unused: CAPACITY }, 0);
    expect((await lease('other', LIFETIME_MS)).granted).toBe(CAPACITY);
  });

  it('time that runs back (another replica started first) refills nothing and takes nothing back', async () => {
    const account = `acct-${++accounts}`;
    const lease = (replica: string, ms: number) =>
      store.leaseOvhBudget(db.pool, { account, replica, rate: RATE, capacity: CAPACITY, want: 1, lifetimeMs: 50, at: at(ms) });
    expect((await lease('a', 5_000)).granted).toBe(1);
    expect((await lease('b', 5_000)).granted).toBe(1);
    expect((await lease('b', 4_000)).granted).toBe(0);
    expect((await lease('a', 5_100)).granted).toBe(1);
  });
});

describe('two replicas, each its own limiter over its own budget, on one database', () => {
  it('the calls granted by both stay within capacity + rate × the time the database saw pass; tenants still take turns', async () => {
    const account = `acct-${++accounts}`;
    const pools = [new pg.Pool({ connectionString: db.url, max: 1 }), new pg.Pool({ connectionString: db.url, max: 1 })];
    const budgets = pools.map((pool, i) => new SharedOvhBudget({ pool, account, replica: `replica-${i}`, ratePerSecond: 20 }));
    const limiters = budgets.map((b) => new RateLimiter(20, 8, undefined, b));
    const dbNow = async () => (await db.pool.query<{ t: Date }>('SELECT clock_timestamp() AS t')).rows[0]!.t.getTime();
    try {
      const started = await dbNow();
      const order: string[] = [];
      const calls = limiters.flatMap((l, i) => [
        ...Array.from({ length: 12 }, () =>
          l.acquire({ tenant: 'bulk' }).then(() => {
            l.release();
            order.push(`${i}:bulk`);
          }),
        ),
        l.acquire({ tenant: 'small' }).then(() => {
          l.release();
          order.push(`${i}:small`);
        }),
      ]);
      await Promise.all(calls);
      const elapsedS = ((await dbNow()) - started) / 1000;
      // 26 calls granted between the two: no faster than the bucket (full at the start) and its refill allow.
      expect(order).toHaveLength(26);
      expect(budgets.reduce((n, b) => n + b.leased, 0)).toBeGreaterThanOrEqual(26);
      expect(order.length).toBeLessThanOrEqual(budgets[0]!.batch + 20 * elapsedS);
      // Fairness is each replica's limiter's, as before: the small tenant is not served after the whole bulk queue.
      for (const i of [0, 1]) {
        const mine = order.filter((o) => o.startsWith(`${i}:`));
        expect(mine.indexOf(`${i}:small`)).toBeLessThanOrEqual(2);
      }
    } finally {
      for (const b of budgets) b.close();
      await Promise.all(pools.map((p) => p.end()));
    }
  });
});

describe('a replica that cannot reach the database', () => {
  it('falls back to its share of the rate (the whole rate when it never saw another replica), and says so', async () => {
    // Nothing listens on port 1: every lease fails at once.
    const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none', max: 1, connectionTimeoutMillis: 500 });
    pool.on('error', () => undefined);
    const warnings: string[] = [];
    const budget = new SharedOvhBudget({ pool, account: 'unreachable', replica: 'r', ratePerSecond: 5, warn: (m) => warnings.push(m) });
    try {
      expect(budget.take(1)).toBe(false);
      await budget.lease(1);
      expect(budget.fallingBack).toBe(true);
      expect(warnings).toEqual([expect.stringMatching(/did not lease tokens; calling at this replica's share/)]);
      // A bucket of one token at 5/s: one call now, the next not before 200 ms.
      expect(budget.take(2)).toBe(true);
      expect(budget.take(1)).toBe(false);
    } finally {
      budget.close();
      await pool.end();
    }
  });
});
