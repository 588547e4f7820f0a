import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AlreadyExistsError, NotFoundError } from '../../src/store/errors.js';
import { createTenant, findTenantByTokenHash, getTenantById, getTenantByName, listTenants, setDisabled, setTokenHash } from '../../src/store/tenants.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

const sha = (token: string): Buffer => createHash('sha256').update(token).digest();

describe('tenants', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await testDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('creates a tenant and never returns the hash', async () => {
    const t = await createTenant(db.pool, {
      name: 'cluster-a',
      tokenSha256: sha('token-a'),
      scopes: [],
      zones: ['example.com', 'example.org'],
      suffixes: ['a.example.com'],
    });
    expect(t).toMatchObject({
      name: 'cluster-a',
      scopes: [],
      zones: ['example.com', 'example.org'],
      suffixes: ['a.example.com'],
      disabled: false,
    });
    expect(t.id).toMatch(/^[0-9]+$/);
    expect(t.createdAt).toBeInstanceOf(Date);
    expect(t.tokenRotatedAt).toBeInstanceOf(Date);
    expect(Object.keys(t).some((k) => /token_?sha|hash/i.test(k))).toBe(false);
    expect(JSON.stringify(t)).not.toContain(sha('token-a').toString('hex'));
    // the database holds the hash, not the token
    const { rows } = await db.pool.query<{ token_sha256: Buffer }>('SELECT token_sha256 FROM tenants WHERE id = $1', [t.id]);
    expect(rows[0]?.token_sha256.equals(sha('token-a'))).toBe(true);
  });

  it('rejects a duplicate name with AlreadyExistsError', async () => {
    await createTenant(db.pool, { name: 'dup', tokenSha256: sha('dup-1'), scopes: [], zones: [], suffixes: [] });
    const err: unknown = await createTenant(db.pool, {
      name: 'dup',
      tokenSha256: sha('dup-2'),
      scopes: [],
      zones: [],
      suffixes: [],
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AlreadyExistsError);
    expect((err as AlreadyExistsError).what).toBe('tenant');
    expect((err as Error).message).toContain('"dup"');
  });

  it('rejects a token hash already in use with AlreadyExistsError', async () => {
    await createTenant(db.pool, { name: 'tok-1', tokenSha256: sha('same'), scopes: [], zones: [], suffixes: [] });
    const err: unknown = await createTenant(db.pool, {
      name: 'tok-2',
      tokenSha256: sha('same'),
      scopes: [],
      zones: [],
      suffixes: [],
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AlreadyExistsError);
    expect((err as AlreadyExistsError).what).toBe('tenant token hash');
  });

  it('enforces the name form and the hash length', async () => {
    for (const name of ['', 'Upper', '-lead', 'a_b', 'x'.repeat(64), 'dot.ted']) {
      await expect(createTenant(db.pool, { name, tokenSha256: sha(`n-${name}`), scopes: [], zones: [], suffixes: [] })).rejects.toThrow(/tenants_name_form/);
    }
    await createTenant(db.pool, { name: 'x'.repeat(63), tokenSha256: sha('long'), scopes: [], zones: [], suffixes: [] });
    await createTenant(db.pool, { name: '0ok-9', tokenSha256: sha('digits'), scopes: [], zones: [], suffixes: [] });
    await expect(createTenant(db.pool, { name: 'short-hash', tokenSha256: Buffer.alloc(16), scopes: [], zones: [], suffixes: [] })).rejects.toThrow(TypeError);
  });

  it('finds by token hash, name and id', async () => {
    const t = await createTenant(db.pool, {
      name: 'finder',
      tokenSha256: sha('find-me'),
      scopes: ['admin'],
      zones: ['example.net'],
      suffixes: [],
    });
    expect(await findTenantByTokenHash(db.pool, sha('find-me'))).toEqual(t);
    expect(await findTenantByTokenHash(db.pool, sha('nobody'))).toBeUndefined();
    expect(await getTenantByName(db.pool, 'finder')).toEqual(t);
    expect(await getTenantByName(db.pool, 'nobody')).toBeUndefined();
    expect(await getTenantById(db.pool, t.id)).toEqual(t);
    expect(await getTenantById(db.pool, '999999999')).toBeUndefined();
    await expect(getTenantById(db.pool, 'abc')).rejects.toThrow(TypeError);
  });

  it('lists tenants by name', async () => {
    const names = (await listTenants(db.pool)).map((t) => t.name);
    expect(names).toEqual([...names].sort());
    expect(names).toContain('cluster-a');
  });

  it('rotates the token hash', async () => {
    const before = await createTenant(db.pool, { name: 'rotor', tokenSha256: sha('old'), scopes: [], zones: [], suffixes: [] });
    await new Promise((r) => setTimeout(r, 5));
    const after = await setTokenHash(db.pool, 'rotor', sha('new'));
    expect(after.id).toBe(before.id);
    expect(after.tokenRotatedAt.getTime()).toBeGreaterThan(before.tokenRotatedAt.getTime());
    expect(await findTenantByTokenHash(db.pool, sha('old'))).toBeUndefined();
    expect((await findTenantByTokenHash(db.pool, sha('new')))?.name).toBe('rotor');
    await expect(setTokenHash(db.pool, 'nobody', sha('x'))).rejects.toBeInstanceOf(NotFoundError);
    await expect(setTokenHash(db.pool, 'rotor', sha('find-me'))).rejects.toBeInstanceOf(AlreadyExistsError);
  });

  it('disables and re-enables', async () => {
    await createTenant(db.pool, { name: 'sleepy', tokenSha256: sha('sleepy'), scopes: [], zones: [], suffixes: [] });
    expect((await setDisabled(db.pool, 'sleepy', true)).disabled).toBe(true);
    expect((await findTenantByTokenHash(db.pool, sha('sleepy')))?.disabled).toBe(true);
    expect((await setDisabled(db.pool, 'sleepy', false)).disabled).toBe(false);
    await expect(setDisabled(db.pool, 'nobody', true)).rejects.toBeInstanceOf(NotFoundError);
  });
});
