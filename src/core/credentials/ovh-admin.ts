/**
 * Managing OVH keys (core/credentials/ovh.ts): create, list, rotate, delete — for AdminService (an admin
 * acting: the admin scope is checked here) and the command line (database access, no acting tenant).
 * A key is three random values made here, as OVH issues them: an application key (16 letters and
 * digits, an identifier kept in clear), an application secret (32, sealed before it is stored:
 * core/credentials/secrets.ts) and a consumer key (32, of which only the sha-256 is stored). The secret and the
 * consumer key are handed back once, to be shown once; nothing here logs them. Each change is
 * journaled (core/journal/audit.ts) in the transaction that makes it, and notifies every replica
 * (store/ovh-keys.ts); the replica that made it drops its cached keys of that tenant at once.
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import * as store from '../../store/index.js';
import { requireAdmin } from '../admin/index.js';
import { deleteJournaled, graceOf, journalCreated, journalRotated, sealingBox, tenantNamed, type JournaledKind } from './admin.js';
import { InvalidInputError, NotFoundError } from '../errors.js';
import { APPLICATION_KEY_LENGTH, SECRET_LENGTH, consumerKeyHash, ovhSecretContext, randomKey, type OvhKeyCache } from './ovh.js';
import { checkSealedSecrets, type SecretBox } from './secrets.js';
import { checkGrace, type Tenant } from '../tenants/tenants.js';

/** A key as listings show it: never its secret or consumer key. */
export interface OvhKeyView {
  applicationKey: string;
  tenant: string;
  createdAt: Date;
  rotatedAt: Date | null;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  /** A rotation with a grace: the old secret and consumer key still work until then; null: none (or it ended). */
  oldSecretValidUntil: Date | null;
}

/** A key just made or rotated, with its secret and consumer key: to be shown once, never logged. */
export interface IssuedOvhKey {
  key: OvhKeyView;
  applicationSecret: string;
  consumerKey: string;
  /** The key's tenant (its zones, for the configuration printed beside the keys). */
  tenant: Tenant;
}

export interface NewOvhKeyInput {
  tenant: string;
  /** How long the consumer key stays valid; absent or 0: never expires. */
  expiresInMs?: number;
}

/**
 * Where the keys live and who acts: `actor` null for the command line (else it must be an admin).
 * `keys` and `log`: the server's cache (this replica forgets at once) and logger, when it acts.
 */
export interface OvhKeyAdmin {
  pool: pg.Pool;
  secrets: SecretBox | undefined;
  actor: Tenant | null;
  keys?: OvhKeyCache;
  log?: Logger;
}

/** The longest expiry a key may be given (ten years): a mistyped duration is refused, not kept. */
export const MAX_EXPIRY_MS = 10 * 366 * 24 * 3_600_000;

function view(r: store.OvhKeyRow): OvhKeyView {
  return {
    applicationKey: r.applicationKey,
    tenant: r.tenantName,
    createdAt: r.createdAt,
    rotatedAt: r.rotatedAt,
    lastUsedAt: r.lastUsedAt,
    expiresAt: r.expiresAt,
    oldSecretValidUntil: graceOf(r),
  };
}

const JOURNAL: JournaledKind<OvhKeyView> = {
  slug: 'ovh-key',
  replaces: 'secret and consumer key',
  describe: (k) => `OVH key ${k.applicationKey} of tenant ${k.tenant}`,
  fields: (k) => ({ applicationKey: k.applicationKey, tenant: k.tenant }),
  notFound: (key) => new NotFoundError('OVH key', key, `applicationKey: no OVH key ${key} (dnsplane tenant ovh-key list TENANT shows them)`),
};

function checkActor(admin: Pick<OvhKeyAdmin, 'actor'>): void {
  if (admin.actor) requireAdmin(admin.actor);
}

function applicationKeyOf(raw: string, field: string): string {
  const key = raw.trim();
  if (!/^[A-Za-z0-9]{16}$/.test(key))
    throw new InvalidInputError(
      field,
      `must be an application key as \`dnsplane tenant ovh-key list\` shows it (16 letters and digits), got ${JSON.stringify(raw)}`,
    );
  return key;
}

function expiryOf(ms: number | undefined): Date | null {
  if (ms === undefined || ms === 0) return null;
  if (!Number.isFinite(ms) || ms < 0 || ms > MAX_EXPIRY_MS)
    throw new InvalidInputError('expiresIn', `must be a duration from 1s to ${MAX_EXPIRY_MS / 3_600_000}h, or 0 for never, got ${ms} ms`);
  return new Date(Date.now() + ms);
}

/** A new key for a tenant; its secret and consumer key are in the answer and nowhere else in clear. */
export async function createOvhKey(admin: OvhKeyAdmin, input: NewOvhKeyInput): Promise<IssuedOvhKey> {
  checkActor(admin);
  const expiresAt = expiryOf(input.expiresInMs);
  const tenant = await tenantNamed(admin.pool, input.tenant, 'tenant');
  const box = sealingBox(admin.secrets, 'OVH application secrets');
  const applicationSecret = randomKey(SECRET_LENGTH);
  const consumerKey = randomKey(SECRET_LENGTH);
  // A drawn application key that happens to be taken is drawn again (16 characters: never, in practice).
  for (let attempt = 0; ; attempt++) {
    const applicationKey = randomKey(APPLICATION_KEY_LENGTH);
    try {
      const issued = await store.withTransaction(admin.pool, async (tx) => {
        await checkSealedSecrets(tx, box);
        const row = await store.createOvhKey(tx, {
          tenantId: tenant.id,
          applicationKey,
          consumerKeySha256: consumerKeyHash(consumerKey),
          sealed: box.seal(Buffer.from(applicationSecret, 'utf8'), ovhSecretContext(applicationKey)),
          expiresAt,
        });
        const key = view(row);
        await journalCreated(tx, admin.actor, JOURNAL, key, { expiresAt: key.expiresAt?.toISOString() ?? null });
        return { key, applicationSecret, consumerKey, tenant };
      });
      admin.log?.info({ applicationKey, tenant: tenant.name, by: admin.actor?.name }, 'OVH key created');
      return issued;
    } catch (e) {
      if (!(e instanceof store.AlreadyExistsError) || attempt >= 3) throw e;
    }
  }
}

/** Keys by tenant and application key; `tenant` '': every tenant's. */
export async function listOvhKeys(admin: Pick<OvhKeyAdmin, 'pool' | 'actor'>, tenant: string): Promise<OvhKeyView[]> {
  checkActor(admin);
  const tenantId = tenant.trim() === '' ? undefined : (await tenantNamed(admin.pool, tenant, 'tenant')).id;
  return (await store.listOvhKeys(admin.pool, tenantId === undefined ? {} : { tenantId })).map(view);
}

/**
 * A new application secret and consumer key (same application key, same expiry); the old ones stop
 * working at once, or after `graceMs` (at most 7 days; a grace still running from an earlier rotation
 * ends). `graceField`: what a bad grace's error names.
 */
export async function rotateOvhKey(admin: OvhKeyAdmin, rawKey: string, graceMs = 0, graceField = 'graceSeconds'): Promise<IssuedOvhKey> {
  checkActor(admin);
  const applicationKey = applicationKeyOf(rawKey, 'applicationKey');
  checkGrace(graceMs, graceField, 'secret');
  const box = sealingBox(admin.secrets, 'OVH application secrets');
  const applicationSecret = randomKey(SECRET_LENGTH);
  const consumerKey = randomKey(SECRET_LENGTH);
  const issued = await store.withTransaction(admin.pool, async (tx) => {
    const current = await store.getOvhKey(tx, applicationKey);
    if (!current) throw JOURNAL.notFound(applicationKey);
    await checkSealedSecrets(tx, box);
    const key = view(
      await store.rotateOvhKey(
        tx,
        applicationKey,
        consumerKeyHash(consumerKey),
        box.seal(Buffer.from(applicationSecret, 'utf8'), ovhSecretContext(applicationKey)),
        graceMs,
      ),
    );
    await journalRotated(tx, admin.actor, JOURNAL, key);
    const tenant = await store.getTenantById(tx, current.tenantId);
    return { key, applicationSecret, consumerKey, tenant: tenant! };
  });
  admin.keys?.forget(issued.key.tenant); // this replica at once; the others on NOTIFY dnsplane_tenant
  admin.log?.info({ applicationKey, tenant: issued.key.tenant, by: admin.actor?.name }, 'OVH key rotated');
  return issued;
}

/** Deletes the key; it stops working at once. Returns what it was. */
export async function deleteOvhKey(admin: Omit<OvhKeyAdmin, 'secrets'>, rawKey: string): Promise<OvhKeyView> {
  checkActor(admin);
  const applicationKey = applicationKeyOf(rawKey, 'applicationKey');
  const key = await deleteJournaled(admin, JOURNAL, applicationKey, async (tx) => view(await store.deleteOvhKey(tx, applicationKey)));
  admin.keys?.forget(key.tenant); // this replica at once; the others on NOTIFY dnsplane_tenant
  admin.log?.info({ applicationKey, tenant: key.tenant, by: admin.actor?.name }, 'OVH key deleted');
  return key;
}
