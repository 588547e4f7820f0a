import { describe, expect, it } from 'vitest';
import { FreshRead, ZoneStateSource } from '../../src/core/reads/zone-states.js';
import type { ZoneGeneration } from '../../src/store/zones.js';
import { TokenCache, type Tenant } from '../../src/core/tenants/tenants.js';

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
  const tenant = (name: string) =>
    ({
      id: '1',
      name,
      scopes: [],
      zones: ['a.test'],
      suffixes: [],
      disabled: false,
      createdAt: new Date(),
      tokenRotatedAt: new Date(),
      maxChangePercent: null,
    }) satisfies Tenant;

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

describe('TokenCache when full', () => {
  it('drops the entries past their end (expired workload tokens) before it empties itself', () => {
    const t = (name: string) => ({ name }) as Tenant;
    const cache = new TokenCache(() => true, 3);
    const past = new Date(Date.now() - 1000);
    cache.set('jwt1', t('x'), cache.epoch, past);
    cache.set('jwt2', t('x'), cache.epoch, past);
    cache.set('static', t('y'), cache.epoch);
    cache.set('jwt3', t('x'), cache.epoch, new Date(Date.now() + 600_000));
    expect([cache.size, cache.get('static')?.name, cache.get('jwt3')?.name]).toEqual([2, 'y', 'x']);
    // Full of live entries: emptied, as before.
    cache.set('other', t('z'), cache.epoch);
    cache.set('more', t('z'), cache.epoch);
    expect([cache.size, cache.get('static'), cache.get('more')?.name]).toEqual([1, undefined, 'z']);
  });
});

describe('ZoneStateSource', () => {
  /** What "Postgres" holds (the test moves it), and a read of it the test may hold back. */
  function source(listening: () => boolean) {
    const db = new Map<string, ZoneGeneration>([['a.test', { name: 'a.test', generation: 5n, state: 'synced' }]]);
    let hold: Promise<void> | undefined;
    const states = new ZoneStateSource(async () => {
      const rows = [...db.values()].map((z) => ({ ...z }));
      await hold;
      return rows;
    }, listening);
    const gen = async () => (await states.get()).get('a.test')?.generation;
    const commit = (generation: bigint) => db.set('a.test', { ...db.get('a.test')!, generation });
    return { db, states, gen, commit, holdReads: (p: Promise<void> | undefined) => (hold = p) };
  }

  it('reads Postgres once while the listener is live, then moves with what it hears; every caller reads while it is not', async () => {
    let live = true;
    const { states, gen, commit } = source(() => live);
    expect(await gen()).toBe(5n);
    expect(await gen()).toBe(5n);
    expect(states.reads).toBe(1);
    commit(6n); // another replica's commit: unseen here until its NOTIFY arrives
    expect(await gen()).toBe(5n);
    states.heard('a.test', 6n);
    expect(await gen()).toBe(6n);
    states.heard('a.test', 4n); // an old one arriving late moves nothing back
    expect(await gen()).toBe(6n);
    expect(states.reads).toBe(1);
    // This replica's own change (a zone lock ended here): the next caller reads.
    commit(7n);
    states.forget();
    expect(states.now()).toBeUndefined();
    expect(await gen()).toBe(7n);
    expect(states.reads).toBe(2);
    // The listener silent or lost: every caller reads, none is kept.
    live = false;
    commit(8n);
    expect(states.now()).toBeUndefined();
    expect(await gen()).toBe(8n);
    expect(await gen()).toBe(8n);
    expect(states.reads).toBe(4);
    live = true;
    expect(await gen()).toBe(8n);
    expect(await gen()).toBe(8n);
    expect(states.reads).toBe(5);
    // fresh() always reads (a caller that has seen a newer generation).
    commit(9n);
    expect((await states.fresh()).get('a.test')?.generation).toBe(9n);
    expect(await gen()).toBe(9n);
  });

  it('keeps no read that a forget overtook, keeps what was heard while a read ran, and reads again for a zone it does not hold as synced', async () => {
    const { db, states, gen, commit, holdReads } = source(() => true);
    let release!: () => void;
    holdReads(new Promise<void>((r) => (release = r)));
    const first = states.get(); // reads generation 5, held back
    states.forget(); // a zone lock ended here meanwhile: that read may predate its commit
    release();
    holdReads(undefined);
    expect((await first).get('a.test')?.generation).toBe(5n);
    expect(states.now()).toBeUndefined();
    // A NOTIFY heard while a read runs: the read is moved to it when kept.
    holdReads(new Promise<void>((r) => (release = r)));
    const second = states.get();
    states.heard('a.test', 6n);
    release();
    holdReads(undefined);
    await second;
    expect(states.now()?.get('a.test')?.generation).toBe(6n);
    expect(states.reads).toBe(2);
    // A zone new to this replica, or not synced when read: the next caller reads Postgres.
    db.set('b.test', { name: 'b.test', generation: 1n, state: 'synced' });
    states.heard('b.test', 1n);
    expect(states.now()).toBeUndefined();
    expect((await states.get()).get('b.test')?.generation).toBe(1n);
    expect(states.reads).toBe(3);
    db.set('c.test', { name: 'c.test', generation: 0n, state: 'unsynced' });
    commit(7n);
    states.forget();
    expect(await gen()).toBe(7n);
    states.heard('c.test', 1n); // its first sync, on another replica
    expect(states.now()).toBeUndefined();
  });
});
