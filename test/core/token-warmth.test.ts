/**
 * The token cache filled ahead of the calls (core/tenants/token-warmth.ts) on a real Postgres: every
 * enabled tenant's token, a rotation's replaced token only within its grace and only until then, no
 * disabled tenant, one tenant's own again after a change; nothing kept when the cache is not trusted
 * or was invalidated while it read; bounded by the cache's size.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenHashHex } from '../../src/core/keys/tokens.js';
import { createTenant, rotateTenantToken, setTenantDisabled, TokenCache } from '../../src/core/tenants/tenants.js';
import { warmTokenCache } from '../../src/core/tenants/token-warmth.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

let db: TestDatabase;
const tokens: Record<string, string> = {};

beforeAll(async () => {
  db = await testDatabase();
  await store.ensureZones(db.pool, ['warm.test']);
  for (const name of ['alpha', 'beta', 'gamma']) tokens[name] = (await createTenant(db.pool, { name, zones: ['warm.test'] })).token;
});
afterAll(async () => db?.drop());

describe('warmTokenCache', () => {
  it('holds every enabled tenant, never a disabled one, with no call made', async () => {
    await setTenantDisabled(db.pool, 'gamma', true);
    const cache = new TokenCache(() => true);
    expect(await warmTokenCache(db.pool, cache)).toBe(2);
    expect(cache.get(tokenHashHex(tokens['alpha']!))?.name).toBe('alpha');
    expect(cache.get(tokenHashHex(tokens['beta']!))?.name).toBe('beta');
    expect(cache.get(tokenHashHex(tokens['gamma']!))).toBeUndefined();
    expect(cache.size).toBe(2);
    await setTenantDisabled(db.pool, 'gamma', false);
  });

  it("after a rotation with a grace, one tenant's warming holds its new token and the old one until its grace ends", async () => {
    const cache = new TokenCache(() => true);
    await warmTokenCache(db.pool, cache);
    const old = tokens['beta']!;
    const { token: fresh, tenant } = await rotateTenantToken(db.pool, 'beta', 60_000);
    cache.forget('beta');
    expect(cache.get(tokenHashHex(fresh))).toBeUndefined();
    expect(await warmTokenCache(db.pool, cache, 'beta')).toBe(1);
    expect(cache.get(tokenHashHex(fresh))?.name).toBe('beta');
    expect(cache.get(tokenHashHex(old))?.name).toBe('beta');
    // The cache drops the old token at the end of its grace by the wall clock: moved back, it is gone.
    const until = tenant.previousTokenValidUntil!.getTime();
    const realNow = Date.now;
    Date.now = () => until + 1;
    try {
      expect(cache.get(tokenHashHex(old))).toBeUndefined();
      expect(cache.get(tokenHashHex(fresh))?.name).toBe('beta');
    } finally {
      Date.now = realNow;
    }
    // A rotation without a grace: the old token is not warmed at all.
    const { token: third } = await rotateTenantToken(db.pool, 'beta');
    const again = new TokenCache(() => true);
    await warmTokenCache(db.pool, again);
    expect(again.get(tokenHashHex(third))?.name).toBe('beta');
    expect(again.get(tokenHashHex(fresh))).toBeUndefined();
  });

  it('keeps nothing when the cache is not trusted or was cleared while it read; a tenant forgotten meanwhile is left out, the others kept', async () => {
    const untrusted = new TokenCache(() => false);
    expect(await warmTokenCache(db.pool, untrusted)).toBe(0);
    const during = (change: () => void) =>
      ({
        query: async (...args: Parameters<typeof db.pool.query>) => {
          change(); // heard while the read was in flight
          return db.pool.query(...args);
        },
      }) as unknown as typeof db.pool;
    const cleared = new TokenCache(() => true);
    expect(
      await warmTokenCache(
        during(() => cleared.clear()),
        cleared,
      ),
    ).toBe(0);
    expect(cleared.size).toBe(0);
    const forgot = new TokenCache(() => true);
    expect(
      await warmTokenCache(
        during(() => forgot.forget('alpha')),
        forgot,
      ),
    ).toBe(2);
    expect(forgot.get(tokenHashHex(tokens['alpha']!))).toBeUndefined();
    expect(forgot.get(tokenHashHex(tokens['gamma']!))?.name).toBe('gamma');
  });

  it('takes at most half the cache in tenants, the most recently seen first', async () => {
    await store.noteTenantsSeen(db.pool, [{ id: (await store.getTenantByName(db.pool, 'gamma'))!.id, at: new Date() }]);
    const small = new TokenCache(() => true, 4);
    expect(await warmTokenCache(db.pool, small)).toBe(1);
    expect(small.get(tokenHashHex(tokens['gamma']!))?.name).toBe('gamma');
  });
});
