/**
 * What managing a tenant's credentials with a sealed secret (TSIG keys: core/credentials/tsig-admin.ts; OVH
 * keys: core/credentials/ovh-admin.ts) has in common: the tenant named, the box that seals (refused, saying
 * how to set it, when the server has none), and who acted, in the journal's words.
 */
import type pg from 'pg';
import type { Tenant } from '../../store/index.js';
import * as store from '../../store/index.js';
import { auditAdminAction } from '../journal/audit.js';
import { InvalidInputError, NotFoundError } from '../errors.js';
import { SECRETS_KEY_RULE, SECRETS_KEY_SETTING, SecretsKeyError, type SecretBox } from './secrets.js';

/** The tenant of that name, or InvalidInput (none given) / NotFound naming the field. */
export async function tenantNamed(q: store.Queryable, name: string, field: string): Promise<Tenant> {
  if (name.trim() === '') throw new InvalidInputError(field, 'a tenant name is required');
  const t = await store.getTenantByName(q, name.trim());
  if (!t) throw new NotFoundError('tenant', name.trim(), `${field}: no tenant named "${name.trim()}" (dnsplane tenant list shows them)`);
  return t;
}

/** The box to seal with, or SecretsKeyError saying how to set one; `what`: "TSIG secrets". */
export function sealingBox(secrets: SecretBox | undefined, what: string): SecretBox {
  if (secrets) return secrets;
  throw new SecretsKeyError(
    `${SECRETS_KEY_SETTING} is not set: ${what} are kept sealed with it. It ${SECRETS_KEY_RULE}, the same value for every replica and for this command`,
  );
}

/** "by <admin>", or "from the command line" (database access, no acting tenant). */
export function actedBy(actor: Tenant | null): string {
  return actor ? `by ${actor.name}` : 'from the command line';
}

/** What a rotation did to the old credential (`what`: "secret", ...), `until`: the end of its grace (ISO), if any. */
export function oldStops(what: string, until: string | undefined): string {
  const verb = what.includes(' and ') ? 'work' : 'works';
  return until ? `the old ${what} still ${verb} until ${until}` : `the old ${what} no longer ${verb}`;
}

/** What the journal says of one kind of key: its action's suffix ("tsig-key"), what a rotation replaces, a key's words and fields. */
export interface JournaledKind<V extends { tenant: string; oldSecretValidUntil: Date | null }> {
  slug: string;
  replaces: string;
  describe(key: V): string;
  fields(key: V): Record<string, unknown>;
  notFound(name: string): NotFoundError;
}

/** Journals a key created (`extra`: fields beyond the kind's), in the transaction that made it. */
export async function journalCreated<V extends { tenant: string; oldSecretValidUntil: Date | null }>(
  tx: store.Queryable,
  actor: Tenant | null,
  kind: JournaledKind<V>,
  key: V,
  extra: Record<string, unknown>,
): Promise<void> {
  await auditAdminAction(tx, null, actor, `create-${kind.slug}`, `${kind.describe(key)} created ${actedBy(actor)}`, { ...kind.fields(key), ...extra });
}

/** Journals a key rotated, saying until when the replaced credential still works. */
export async function journalRotated<V extends { tenant: string; oldSecretValidUntil: Date | null }>(
  tx: store.Queryable,
  actor: Tenant | null,
  kind: JournaledKind<V>,
  key: V,
): Promise<void> {
  const until = key.oldSecretValidUntil?.toISOString();
  await auditAdminAction(tx, null, actor, `rotate-${kind.slug}`, `${kind.describe(key)} rotated ${actedBy(actor)}: ${oldStops(kind.replaces, until)}`, {
    ...kind.fields(key),
    ...(until ? { oldSecretValidUntil: until } : {}),
  });
}

/** Deletes a key and journals it, in one transaction; the kind's NotFoundError (naming the field) when there is none. */
export async function deleteJournaled<V extends { tenant: string; oldSecretValidUntil: Date | null }>(
  admin: { pool: pg.Pool; actor: Tenant | null },
  kind: JournaledKind<V>,
  name: string,
  remove: (tx: store.Queryable) => Promise<V>,
): Promise<V> {
  return store.withTransaction(admin.pool, async (tx) => {
    let key: V;
    try {
      key = await remove(tx);
    } catch (e) {
      if (e instanceof store.NotFoundError) throw kind.notFound(name);
      throw e;
    }
    await auditAdminAction(tx, null, admin.actor, `delete-${kind.slug}`, `${kind.describe(key)} deleted ${actedBy(admin.actor)}`, kind.fields(key));
    return key;
  });
}

/** Until when a rotation's replaced credential still works, from the row; null: no grace, or it ended. */
export function graceOf(r: { previousValidUntil: Date | null }): Date | null {
  return r.previousValidUntil && r.previousValidUntil.getTime() > Date.now() ? r.previousValidUntil : null;
}
