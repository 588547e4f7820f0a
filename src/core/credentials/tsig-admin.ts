/**
 * Managing TSIG keys (core/credentials/tsig.ts): create, list, rotate, delete — for AdminService (an admin
 * acting) and the command line (database access, no acting tenant). A secret is made here (random,
 * as long as its HMAC's output), sealed before it is stored (core/credentials/secrets.ts) and handed back once, to
 * be shown once; nothing here logs it. Each change is journaled (core/journal/audit.ts) in the transaction
 * that makes it, and notifies every replica (store/tsig-keys.ts).
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import * as store from '../../store/index.js';
import { deleteJournaled, graceOf, journalCreated, journalRotated, sealingBox, tenantNamed, type JournaledKind } from './admin.js';
import { InvalidInputError, NotFoundError } from '../errors.js';
import { checkSealedSecrets, type SecretBox } from './secrets.js';
import { checkGrace, type Tenant } from '../tenants/tenants.js';
import {
  TSIG_SECRET_BYTES,
  isTsigAlgorithm,
  normalizeTsigKeyName,
  parseTsigAlgorithm,
  secretContext,
  DEFAULT_TSIG_ALGORITHM,
  type TsigAlgorithm,
} from './tsig.js';

/** A key as listings show it: never its secret. */
export interface TsigKeyView {
  name: string;
  tenant: string;
  algorithm: TsigAlgorithm;
  acmeOnly: boolean;
  createdAt: Date;
  rotatedAt: Date | null;
  lastUsedAt: Date | null;
  /** A rotation with a grace: the old secret still works until then; null: none (or it ended). */
  oldSecretValidUntil: Date | null;
}

/** A key just made or rotated, with its secret: to be shown once, never logged. */
export interface IssuedTsigKey {
  key: TsigKeyView;
  secret: Buffer;
  /** The key's tenant (its zones, for the configuration printed beside the secret). */
  tenant: Tenant;
}

export interface NewTsigKeyInput {
  tenant: string;
  /** '' or absent: hmac-sha256. */
  algorithm?: string;
  /** '' or absent: "<tenant>-<8 hex>.dnsplane". */
  name?: string;
  acmeOnly?: boolean;
}

/** Where the keys live and who acts: `actor` null for the command line. */
export interface KeyAdmin {
  pool: pg.Pool;
  secrets: SecretBox | undefined;
  actor: Tenant | null;
}

function view(r: store.TsigKeyRow): TsigKeyView {
  return {
    name: r.name,
    tenant: r.tenantName,
    algorithm: isTsigAlgorithm(r.algorithm) ? r.algorithm : DEFAULT_TSIG_ALGORITHM,
    acmeOnly: r.acmeOnly,
    createdAt: r.createdAt,
    rotatedAt: r.rotatedAt,
    lastUsedAt: r.lastUsedAt,
    oldSecretValidUntil: graceOf(r),
  };
}

const JOURNAL: JournaledKind<TsigKeyView> = {
  slug: 'tsig-key',
  replaces: 'secret',
  describe: (k) => `TSIG key ${k.name} (${k.algorithm}${k.acmeOnly ? ', acme-only' : ''}) of tenant ${k.tenant}`,
  fields: (k) => ({ key: k.name, tenant: k.tenant }),
  notFound: (name) => new NotFoundError('TSIG key', name, `name: no TSIG key named "${name}" (dnsplane tenant tsig list TENANT shows them)`),
};

function newSecret(algorithm: TsigAlgorithm): Buffer {
  return randomBytes(TSIG_SECRET_BYTES[algorithm]);
}

function generatedName(tenant: string): string {
  return `${tenant.slice(0, 54)}-${randomBytes(4).toString('hex')}.dnsplane`;
}

/** A new key for a tenant; its secret is in the answer and nowhere else in clear. */
export async function createTsigKey(admin: KeyAdmin, input: NewTsigKeyInput): Promise<IssuedTsigKey> {
  const algorithm = parseTsigAlgorithm(input.algorithm ?? '', 'algorithm');
  const wanted = input.name?.trim() ? normalizeTsigKeyName(input.name, 'name') : undefined;
  const tenant = await tenantNamed(admin.pool, input.tenant, 'tenant');
  const box = sealingBox(admin.secrets, 'TSIG secrets');
  const secret = newSecret(algorithm);
  // A generated name that happens to be taken is drawn again; a name asked for is refused.
  for (let attempt = 0; ; attempt++) {
    const name = wanted ?? generatedName(tenant.name);
    try {
      return await store.withTransaction(admin.pool, async (tx) => {
        await checkSealedSecrets(tx, box);
        const row = await store.createTsigKey(tx, {
          tenantId: tenant.id,
          name,
          algorithm,
          acmeOnly: input.acmeOnly ?? false,
          sealed: box.seal(secret, secretContext(name)),
        });
        const key = view(row);
        await journalCreated(tx, admin.actor, JOURNAL, key, { algorithm, acmeOnly: key.acmeOnly });
        return { key, secret, tenant };
      });
    } catch (e) {
      if (!(e instanceof store.AlreadyExistsError)) throw e;
      if (wanted !== undefined)
        throw new InvalidInputError(
          'name',
          `a TSIG key named "${name}" already exists (key names are unique across tenants: a DNS message names only its key)`,
        );
      if (attempt >= 3) throw e;
    }
  }
}

/** Keys by tenant and name; `tenant` '': every tenant's. */
export async function listTsigKeys(q: store.Queryable, tenant: string): Promise<TsigKeyView[]> {
  const tenantId = tenant.trim() === '' ? undefined : (await tenantNamed(q, tenant, 'tenant')).id;
  return (await store.listTsigKeys(q, tenantId === undefined ? {} : { tenantId })).map(view);
}

/**
 * A new secret for the key (same name, algorithm, scope); the old one stops working at once, or after
 * `graceMs` (at most 7 days; a grace still running from an earlier rotation ends). `graceField`: what
 * a bad grace's error names.
 */
export async function rotateTsigKey(admin: KeyAdmin, rawName: string, graceMs = 0, graceField = 'graceSeconds'): Promise<IssuedTsigKey> {
  const name = normalizeTsigKeyName(rawName, 'name');
  checkGrace(graceMs, graceField, 'secret');
  const box = sealingBox(admin.secrets, 'TSIG secrets');
  return store.withTransaction(admin.pool, async (tx) => {
    const current = await store.getTsigKey(tx, name);
    if (!current) throw JOURNAL.notFound(name);
    await checkSealedSecrets(tx, box);
    const algorithm = isTsigAlgorithm(current.algorithm) ? current.algorithm : DEFAULT_TSIG_ALGORITHM;
    const secret = newSecret(algorithm);
    const key = view(await store.rotateTsigKey(tx, name, box.seal(secret, secretContext(name)), graceMs));
    await journalRotated(tx, admin.actor, JOURNAL, key);
    const tenant = await store.getTenantById(tx, current.tenantId);
    return { key, secret, tenant: tenant! };
  });
}

/** Deletes the key; it stops working at once. Returns what it was. */
export async function deleteTsigKey(admin: Omit<KeyAdmin, 'secrets'>, rawName: string): Promise<TsigKeyView> {
  const name = normalizeTsigKeyName(rawName, 'name');
  return deleteJournaled(admin, JOURNAL, name, async (tx) => view(await store.deleteTsigKey(tx, name)));
}
