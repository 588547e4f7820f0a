import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError } from '../../src/store/errors.js';
import { ownedSets } from '../../src/core/plan/guard.js';
import { countOwnedSets, listOwnership, listOwnershipForTenant, removeOwner, setOwner } from '../../src/store/ownership.js';
import { createTenant, type Tenant } from '../../src/store/tenants.js';
import { ensureZones } from '../../src/store/zones.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

const sha = (token: string): Buffer => createHash('sha256').update(token).digest();

describe('ownership', () => {
  let db: TestDatabase;
  let alice: Tenant;
  let bob: Tenant;
  beforeAll(async () => {
    db = await testDatabase();
    await ensureZones(db.pool, ['example.com', 'example.org']);
    alice = await createTenant(db.pool, { name: 'alice', tokenSha256: sha('a'), scopes: [], zones: ['example.com'], suffixes: [] });
    bob = await createTenant(db.pool, { name: 'bob', tokenSha256: sha('b'), scopes: [], zones: ['example.com'], suffixes: [] });
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('sets an exclusive owner of a whole set and lists it with the tenant name', async () => {
    const row = await setOwner(db.pool, { zone: 'example.com', dnsName: 'www.example.com', recordType: 'A', tenantId: alice.id });
    expect(row).toMatchObject({
      zone: 'example.com',
      dnsName: 'www.example.com',
      recordType: 'A',
      target: '',
      tenantId: alice.id,
      tenantName: 'alice',
      shared: false,
    });
    expect(Number.isInteger(row.createdMs) && row.createdMs > 0).toBe(true);
    expect(await listOwnership(db.pool, 'example.com')).toEqual([row]);
  });

  it('upserts: re-setting the same owner keeps created_at, a new owner resets it', async () => {
    const first = (await listOwnership(db.pool, 'example.com'))[0]!;
    await new Promise((r) => setTimeout(r, 5));
    const same = await setOwner(db.pool, { zone: 'example.com', dnsName: 'www.example.com', recordType: 'A', tenantId: alice.id });
    expect(same.createdMs).toBe(first.createdMs);
    const moved = await setOwner(db.pool, { zone: 'example.com', dnsName: 'www.example.com', recordType: 'A', tenantId: bob.id });
    expect(moved.tenantName).toBe('bob');
    expect(moved.createdMs).toBeGreaterThan(first.createdMs);
    expect(await listOwnership(db.pool, 'example.com')).toHaveLength(1);
  });

  it('shared sets: one row per target, each with its owner', async () => {
    const a = await setOwner(db.pool, { zone: 'example.com', dnsName: 'lb.example.com', recordType: 'A', tenantId: alice.id, target: '192.0.2.1' });
    const b = await setOwner(db.pool, {
      zone: 'example.com',
      dnsName: 'lb.example.com',
      recordType: 'A',
      tenantId: bob.id,
      target: '192.0.2.2',
      shared: true,
    });
    expect(a.shared).toBe(true);
    expect(b.shared).toBe(true);
    const rows = (await listOwnership(db.pool, 'example.com')).filter((r) => r.dnsName === 'lb.example.com');
    expect(rows.map((r) => [r.target, r.tenantName])).toEqual([
      ['192.0.2.1', 'alice'],
      ['192.0.2.2', 'bob'],
    ]);
  });

  it('countOwnedSets counts the sets (name, type) a tenant owns, a shared set once however many targets', async () => {
    await setOwner(db.pool, { zone: 'example.com', dnsName: 'lb.example.com', recordType: 'A', tenantId: alice.id, target: '192.0.2.3', shared: true });
    const rows = await listOwnership(db.pool, 'example.com');
    for (const t of [alice, bob]) {
      expect(await countOwnedSets(db.pool, 'example.com', t.id)).toBe(ownedSets(rows, t.id));
    }
    // Alice holds two targets of lb: two rows, one set (a count of rows would say one more).
    const alices = rows.filter((r) => r.tenantId === alice.id);
    expect(alices.filter((r) => r.dnsName === 'lb.example.com')).toHaveLength(2);
    expect(await countOwnedSets(db.pool, 'example.com', alice.id)).toBe(alices.length - 1);
    expect(await countOwnedSets(db.pool, 'example.org', alice.id)).toBe(0);
  });

  it('a set is never both exclusive and shared', async () => {
    await expect(setOwner(db.pool, { zone: 'example.com', dnsName: 'lb.example.com', recordType: 'A', tenantId: alice.id })).rejects.toBeInstanceOf(
      ConflictError,
    );
    await expect(
      setOwner(db.pool, { zone: 'example.com', dnsName: 'www.example.com', recordType: 'A', tenantId: alice.id, target: '192.0.2.9' }),
    ).rejects.toBeInstanceOf(ConflictError);
    // the same name with another type is another set
    await setOwner(db.pool, { zone: 'example.com', dnsName: 'lb.example.com', recordType: 'AAAA', tenantId: alice.id });
  });

  it('rejects inconsistent shared/target input and names outside the zone', async () => {
    await expect(setOwner(db.pool, { zone: 'example.com', dnsName: 'x.example.com', recordType: 'A', tenantId: alice.id, shared: true })).rejects.toThrow(
      TypeError,
    );
    await expect(
      setOwner(db.pool, { zone: 'example.com', dnsName: 'x.example.com', recordType: 'A', tenantId: alice.id, target: 't', shared: false }),
    ).rejects.toThrow(TypeError);
    await expect(setOwner(db.pool, { zone: 'example.com', dnsName: 'www.example.org', recordType: 'A', tenantId: alice.id })).rejects.toThrow(
      /ownership_dns_name_in_zone/,
    );
    await expect(setOwner(db.pool, { zone: 'example.com', dnsName: 'wwwexample.com', recordType: 'A', tenantId: alice.id })).rejects.toThrow(
      /ownership_dns_name_in_zone/,
    );
    await setOwner(db.pool, { zone: 'example.com', dnsName: 'example.com', recordType: 'TXT', tenantId: alice.id }); // apex
  });

  it('NotFoundError for an unknown zone or tenant', async () => {
    const z: unknown = await setOwner(db.pool, { zone: 'nope.example', dnsName: 'a.nope.example', recordType: 'A', tenantId: alice.id }).catch(
      (e: unknown) => e,
    );
    expect(z).toBeInstanceOf(NotFoundError);
    expect((z as NotFoundError).what).toBe('zone');
    const t: unknown = await setOwner(db.pool, { zone: 'example.com', dnsName: 'a.example.com', recordType: 'A', tenantId: '999999' }).catch((e: unknown) => e);
    expect(t).toBeInstanceOf(NotFoundError);
    expect((t as NotFoundError).what).toBe('tenant');
  });

  it('lists ownership per tenant, optionally per zone', async () => {
    await ensureZones(db.pool, ['example.net']);
    await setOwner(db.pool, { zone: 'example.net', dnsName: 'n.example.net', recordType: 'CNAME', tenantId: alice.id });
    const all = await listOwnershipForTenant(db.pool, alice.id);
    expect(all.every((r) => r.tenantId === alice.id)).toBe(true);
    expect(new Set(all.map((r) => r.zone))).toEqual(new Set(['example.com', 'example.net']));
    const net = await listOwnershipForTenant(db.pool, alice.id, 'example.net');
    expect(net.map((r) => r.dnsName)).toEqual(['n.example.net']);
    expect(await listOwnershipForTenant(db.pool, bob.id, 'example.net')).toEqual([]);
  });

  it('removeOwner: one target, a tenant’s rows, or the whole set', async () => {
    await setOwner(db.pool, { zone: 'example.com', dnsName: 'lb.example.com', recordType: 'A', tenantId: alice.id, target: '192.0.2.3' });
    // only bob's rows
    expect(await removeOwner(db.pool, { zone: 'example.com', dnsName: 'lb.example.com', recordType: 'A', tenantId: bob.id })).toBe(1);
    // one target
    expect(await removeOwner(db.pool, { zone: 'example.com', dnsName: 'lb.example.com', recordType: 'A', target: '192.0.2.1' })).toBe(1);
    let left = (await listOwnership(db.pool, 'example.com')).filter((r) => r.dnsName === 'lb.example.com' && r.recordType === 'A');
    expect(left.map((r) => r.target)).toEqual(['192.0.2.3']);
    // whole set
    expect(await removeOwner(db.pool, { zone: 'example.com', dnsName: 'lb.example.com', recordType: 'A' })).toBe(1);
    left = (await listOwnership(db.pool, 'example.com')).filter((r) => r.dnsName === 'lb.example.com' && r.recordType === 'A');
    expect(left).toEqual([]);
    // the exclusive row by its '' target
    expect(await removeOwner(db.pool, { zone: 'example.com', dnsName: 'www.example.com', recordType: 'A', target: '' })).toBe(1);
    expect(await removeOwner(db.pool, { zone: 'example.com', dnsName: 'www.example.com', recordType: 'A' })).toBe(0);
    // once empty, the set may become shared
    await setOwner(db.pool, { zone: 'example.com', dnsName: 'www.example.com', recordType: 'A', tenantId: bob.id, target: '192.0.2.5' });
  });

  it('a tenant that owns something cannot be deleted; a zone with ownership cannot be deleted', async () => {
    await expect(db.pool.query('DELETE FROM tenants WHERE id = $1', [alice.id])).rejects.toThrow(/foreign key/);
    await expect(db.pool.query("DELETE FROM zones WHERE name = 'example.com'")).rejects.toThrow(/foreign key/);
  });
});
