/**
 * For the tests of the apply room (test/core/apply) and of the API's handlers in memory (test/api):
 * core driven directly, without the server — a CoreContext on a real Postgres (a database of the test file's own, with a journal pool
 * beside it as server/server.ts builds one) and the OVH simulator over real HTTPS through the real client,
 * its zones registered and synced, its tenants made — and applies of one zone queued in a known
 * order behind a zone lock the test holds (queueBehindLock, which the end-to-end tests use too).
 */
import pino from 'pino';
import type { CoreContext, CoreSettings } from '../../src/core/context.js';
import { createTenant, type Tenant } from '../../src/core/tenants/tenants.js';
import { ensureSynced } from '../../src/core/zones/zones.js';
import { zoneLockWaiters } from '../../src/core/zones/lock-queue.js';
import { OvhSimulator, type SimOptions, type SimRecordInit } from '../../src/ovhsim/index.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from './db.js';
import { ovhApiFor, simCalls } from './ovh-api.js';
import { until } from './until.js';
import { holdZoneLock, zoneLocksWaited } from './zone-locks.js';

export interface ApplyRoom {
  sim: OvhSimulator;
  db: TestDatabase;
  ctx: CoreContext;
  /** The tenants made at start, by name (each may use every zone). */
  tenants: Record<string, Tenant>;
  /** Their bearer tokens, by name. */
  tokens: Record<string, string>;
  /** The simulator's calls since it last cleared them: "METHOD path[?query] status", /auth/time left out. */
  calls(): string[];
  close(): Promise<void>;
}

/**
 * Settings no test reaches unless it asks: no coalescing time bound a loaded machine could hit, no
 * change threshold, a lock timeout of a minute.
 */
const SETTINGS: CoreSettings = {
  lockTimeoutMs: 60_000,
  planTtlMs: 3_600_000,
  syncConcurrency: 4,
  maxChangePercent: 100,
  applyBatch: 100,
  applyCoalesceMs: 600_000,
};

export async function applyRoom(opts: {
  zones: Record<string, SimRecordInit[]>;
  tenants: string[];
  settings?: Partial<CoreSettings>;
  behavior?: SimOptions['behavior'];
}): Promise<ApplyRoom> {
  const sim = await OvhSimulator.start({ zones: opts.zones, ...(opts.behavior ? { behavior: opts.behavior } : {}) });
  const db = await testDatabase();
  const journalPool = store.createSidePool(db.pool);
  const zones = Object.keys(opts.zones);
  const ctx: CoreContext = {
    pool: db.pool,
    journalPool,
    ovh: ovhApiFor(sim),
    log: pino({ level: 'silent' }),
    settings: { ...SETTINGS, zones, ...opts.settings },
  };
  await store.ensureZones(db.pool, zones);
  for (const zone of zones) await ensureSynced(ctx, zone);
  const tenants: Record<string, Tenant> = {};
  const tokens: Record<string, string> = {};
  for (const name of opts.tenants) ({ tenant: tenants[name], token: tokens[name] } = await createTenant(db.pool, { name, zones }));
  sim.clearCalls();
  return {
    sim,
    db,
    ctx,
    tenants,
    tokens,
    calls: () => simCalls(sim),
    async close() {
      await journalPool.end().catch(() => undefined);
      await sim.stop();
      await db.drop();
    },
  };
}

export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * Starts the applies of `zone` one by one while the test holds the zone lock, each once the one before
 * it waits (the first in Postgres, the others in the in-process queue of `ctx`'s pool), then releases
 * the lock: they reach it in this order. Answers each one's outcome.
 */
export async function queueBehindLock<T>(ctx: CoreContext, zone: string, starts: Array<() => Promise<T>>): Promise<Array<Settled<T>>> {
  const lock = await holdZoneLock(ctx.pool, zone);
  const outcomes: Array<Promise<Settled<T>>> = [];
  for (const [i, start] of starts.entries()) {
    outcomes.push(
      start().then(
        (value) => ({ ok: true as const, value }),
        (error: unknown) => ({ ok: false as const, error }),
      ),
    );
    if (i === 0) await until('the first apply to wait in Postgres', async () => (await zoneLocksWaited(ctx.pool)) === 1);
    else await until(`apply ${i + 1} to wait in the queue`, () => zoneLockWaiters(ctx, zone) === i);
  }
  await lock.release();
  return Promise.all(outcomes);
}
