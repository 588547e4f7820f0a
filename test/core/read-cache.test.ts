import { describe, expect, it } from 'vitest';
import { FreshRead } from '../../src/core/read-cache.js';
import { TokenCache, type Tenant } from '../../src/core/tenants.js';

/** A read whose answers the test releases one by one; each answer is the number of the read. */
function manualRead() {
  const pending: Array<() => void> = [];
  let started = 0;
  const fresh = new FreshRead(() => {
    const n = ++started;
    return new Promise<number>((resolve) => pending.push(() => resolve(n)));
  });
  return { fresh, pending, started: () => started };
}

describe('FreshRead', () => {
  it('never answers a caller with a read that started before it called, and shares reads', async () => {
    const { fresh, pending, started } = manualRead();
    const a = fresh.get(); // starts read 1
    const b = fresh.get(); // read 1 is running: waits for read 2
    const c = fresh.get(); // shares read 2
    expect(started()).toBe(1);
    pending.shift()!();
    expect(await a).toBe(1);
    await new Promise((r) => setImmediate(r));
    expect(started()).toBe(2);
    const d = fresh.get(); // read 2 is running: waits for read 3
    pending.shift()!();
    expect(await b).toBe(2);
    expect(await c).toBe(2);
    await new Promise((r) => setImmediate(r));
    pending.shift()!();
    expect(await d).toBe(3);
    expect(fresh.reads).toBe(3);
  });

  it('starts the next read after the loop turn in which the current one ended, so that callers of that turn share it', async () => {
    const { fresh, pending, started } = manualRead();
    const a = fresh.get(); // starts read 1
    const b = fresh.get(); // waits for read 2
    pending.shift()!();
    expect(await a).toBe(1);
    // Read 1 has ended; read 2 has not started yet (check phase): a caller arriving now shares it,
    // and it is fresh for that caller too since it starts after the call.
    expect(started()).toBe(1);
    const c = fresh.get();
    await new Promise((r) => setImmediate(r));
    expect(started()).toBe(2);
    pending.shift()!();
    expect(await b).toBe(2);
    expect(await c).toBe(2);
    expect(fresh.reads).toBe(2);
  });

  it('passes a failed read to its callers and reads again for the next ones', async () => {
    let n = 0;
    const fresh = new FreshRead(async () => {
      n++;
      if (n === 1) throw new Error('database down');
      return n;
    });
    await expect(fresh.get()).rejects.toThrow('database down');
    expect(await fresh.get()).toBe(2);
  });
});

describe('TokenCache', () => {
  const tenant = (name: string) => ({ id: '1', name, scopes: [], zones: ['a.test'], suffixes: [], disabled: false, createdAt: new Date(), tokenRotatedAt: new Date(), maxChangePercent: null }) satisfies Tenant;

  it('serves entries only while trusted, and forgets a tenant', () => {
    let trusted = true;
    const cache = new TokenCache(() => trusted);
    cache.set('aa', tenant('x'), cache.epoch);
    cache.set('bb', tenant('y'), cache.epoch);
    expect(cache.get('aa')?.name).toBe('x');
    trusted = false;
    expect(cache.get('aa')).toBeUndefined();
    cache.set('cc', tenant('z'), cache.epoch);
    trusted = true;
    expect(cache.get('cc')).toBeUndefined();
    cache.forget('x');
    expect(cache.get('aa')).toBeUndefined();
    expect(cache.get('bb')?.name).toBe('y');
  });

  it('does not keep an answer read before an invalidation that came while it was read', () => {
    const cache = new TokenCache(() => true);
    const epoch = cache.epoch; // the read starts
    cache.forget('x'); // the rotation's NOTIFY arrives meanwhile
    cache.set('aa', tenant('x'), epoch); // the read, made before the rotation, ends
    expect(cache.get('aa')).toBeUndefined();
    cache.set('aa', tenant('x'), cache.epoch);
    expect(cache.get('aa')?.name).toBe('x');
    cache.clear();
    expect(cache.get('aa')).toBeUndefined();
  });
});
