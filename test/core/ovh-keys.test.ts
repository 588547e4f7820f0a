/**
 * OVH keys in core (core/credentials/ovh-admin.ts, core/keys/ovh.ts) on a real Postgres: made, listed,
 * rotated and deleted, each change journaled; the keyring finds a key by its consumer key and opens
 * its secret; what the database keeps is the application key, the consumer key's sha-256 and the
 * sealed secret — never the secret or the consumer key; the cache forgets a tenant's keys; a server
 * without the secrets key, a tenant without the admin scope and bad input are refused.
 */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CoreContext } from '../../src/core/context.js';
import { createOvhKey, deleteOvhKey, listOvhKeys, rotateOvhKey } from '../../src/core/credentials/ovh-admin.js';
import { createOvhKeyring, OvhKeyCache } from '../../src/core/keys/ovh.js';
import { SecretsKeyError } from '../../src/core/errors.js';
import { SecretBox } from '../../src/core/keys/secrets.js';
import { createTenant } from '../../src/core/tenants/tenants.js';
import { InvalidInputError, NotFoundError, PermissionDeniedError } from '../../src/core/errors.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { dumpText } from '../helpers/snapshot.js';

let db: TestDatabase;
const secrets = new SecretBox(randomBytes(32));
let admin: store.Tenant;
let plain: store.Tenant;

beforeAll(async () => {
  db = await testDatabase();
  await store.ensureZones(db.pool, ['example.test']);
  admin = (await createTenant(db.pool, { name: 'root', zones: [], admin: true })).tenant;
  plain = (await createTenant(db.pool, { name: 'alice', zones: ['example.test'] })).tenant;
});
afterAll(async () => db?.drop());

function ctxWith(keys?: OvhKeyCache): CoreContext {
  return { pool: db.pool, log: pino({ level: 'silent' }), secrets, ovhKeys: keys } as unknown as CoreContext;
}

describe('OVH keys', () => {
  it('are made as OVH makes them; the keyring finds one by its consumer key; the database keeps neither the secret nor the consumer key', async () => {
    const issued = await createOvhKey({ pool: db.pool, secrets, actor: admin }, { tenant: 'alice' });
    expect(issued.key.applicationKey).toMatch(/^[A-Za-z0-9]{16}$/);
    expect(issued.applicationSecret).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(issued.consumerKey).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(issued.key).toMatchObject({ tenant: 'alice', rotatedAt: null, lastUsedAt: null, expiresAt: null });

    const ring = createOvhKeyring(ctxWith());
    const found = await ring.find(issued.consumerKey);
    expect(found).toMatchObject({ applicationKey: issued.key.applicationKey, applicationSecret: issued.applicationSecret, expiresAt: null });
    expect(found?.tenant.name).toBe('alice');
    expect(await ring.find(`${issued.consumerKey}x`)).toBeUndefined();
    expect(await ring.applicationKnown(issued.key.applicationKey)).toBe(true);
    expect(await ring.applicationKnown('AAAAAAAAAAAAAAAA')).toBe(false);

    const dump = await dumpText(db.pool);
    expect(dump).toContain(issued.key.applicationKey);
    expect(dump).not.toContain(issued.applicationSecret);
    expect(dump).not.toContain(issued.consumerKey);
    expect(await store.sealedKeyIds(db.pool)).toContainEqual({ what: 'OVH application secret', keyId: secrets.keyIdHex, count: 1, tenants: ['alice'] });

    const journal = await store.listJournal(db.pool, { limit: 10 });
    expect(journal[0]?.intent).toMatchObject({ kind: 'create-ovh-key', detail: { applicationKey: issued.key.applicationKey, tenant: 'alice' } });
    await deleteOvhKey({ pool: db.pool, actor: null }, issued.key.applicationKey);
  });

  it('rotate: a new secret and consumer key, the old ones found no more; the cache forgets the tenant at once', async () => {
    const keys = new OvhKeyCache(() => true);
    const ctx = ctxWith(keys);
    const ring = createOvhKeyring(ctx);
    const issued = await createOvhKey({ pool: db.pool, secrets, actor: null }, { tenant: 'alice' });
    expect(await ring.find(issued.consumerKey)).toBeDefined();
    expect(keys.size).toBe(1);
    const rotated = await rotateOvhKey({ pool: db.pool, secrets, actor: admin, keys }, issued.key.applicationKey);
    expect(keys.size).toBe(0);
    expect(rotated.key.applicationKey).toBe(issued.key.applicationKey);
    expect(rotated.key.rotatedAt).not.toBeNull();
    expect(rotated.consumerKey).not.toBe(issued.consumerKey);
    expect(rotated.applicationSecret).not.toBe(issued.applicationSecret);
    expect(await ring.find(issued.consumerKey)).toBeUndefined();
    expect((await ring.find(rotated.consumerKey))?.applicationSecret).toBe(rotated.applicationSecret);

    const listed = await listOvhKeys({ pool: db.pool, actor: admin }, 'alice');
    expect(listed.map((k) => k.applicationKey)).toEqual([issued.key.applicationKey]);
    await deleteOvhKey({ pool: db.pool, actor: admin, keys }, issued.key.applicationKey);
    expect(await ring.find(rotated.consumerKey)).toBeUndefined();
    expect(await listOvhKeys({ pool: db.pool, actor: null }, '')).toEqual([]);
    const kinds = (await store.listJournal(db.pool, { limit: 3 })).map((e) => (e.intent as { kind: string }).kind);
    expect(kinds).toEqual(['delete-ovh-key', 'rotate-ovh-key', 'create-ovh-key']);
  });

  it('an expiry is kept with the key and handed out with it', async () => {
    const issued = await createOvhKey({ pool: db.pool, secrets, actor: null }, { tenant: 'alice', expiresInMs: 3_600_000 });
    const at = issued.key.expiresAt!.getTime();
    expect(at).toBeGreaterThan(Date.now() + 3_500_000);
    expect((await createOvhKeyring(ctxWith()).find(issued.consumerKey))?.expiresAt?.getTime()).toBe(at);
    await deleteOvhKey({ pool: db.pool, actor: null }, issued.key.applicationKey);
  });

  it('refuses: no secrets key, a tenant without the admin scope, an unknown tenant or key, a malformed key or expiry', async () => {
    await expect(createOvhKey({ pool: db.pool, secrets: undefined, actor: null }, { tenant: 'alice' })).rejects.toThrow(SecretsKeyError);
    await expect(createOvhKey({ pool: db.pool, secrets: undefined, actor: null }, { tenant: 'alice' })).rejects.toThrow(
      /DNSPLANE_SECRETS_KEY is not set: OVH application secrets are kept sealed with it/,
    );
    await expect(createOvhKey({ pool: db.pool, secrets, actor: plain }, { tenant: 'alice' })).rejects.toThrow(PermissionDeniedError);
    await expect(listOvhKeys({ pool: db.pool, actor: plain }, '')).rejects.toThrow(PermissionDeniedError);
    await expect(createOvhKey({ pool: db.pool, secrets, actor: null }, { tenant: 'nobody' })).rejects.toThrow(NotFoundError);
    await expect(rotateOvhKey({ pool: db.pool, secrets, actor: null }, 'AAAAAAAAAAAAAAAA')).rejects.toThrow(/no OVH key AAAAAAAAAAAAAAAA/);
    await expect(deleteOvhKey({ pool: db.pool, actor: null }, 'not-a-key')).rejects.toThrow(InvalidInputError);
    await expect(createOvhKey({ pool: db.pool, secrets, actor: null }, { tenant: 'alice', expiresInMs: -5 })).rejects.toThrow(/expiresIn: must be a duration/);
    expect(await listOvhKeys({ pool: db.pool, actor: null }, '')).toEqual([]);
  });
});
