/**
 * Managing a tenant's keys with a sealed secret, written once for every kind (TSIG keys:
 * core/credentials/tsig-admin.ts; OVH keys: core/credentials/ovh-admin.ts): create, list, rotate with a
 * grace, delete — for AdminService (an admin acting: the admin scope is checked first) and the command
 * line (database access, no acting tenant). A kind (KeyKind) says what differs: its store, how a key
 * is named, how a secret is minted and bound, its view and its journal's words. A new secret is sealed
 * before it is stored (core/keys/secrets.ts) and handed back once, to be shown once; nothing here
 * logs it. Each change is journaled (core/journal/audit.ts) in the transaction that makes it and
 * notifies every replica (store/sealed-keys.ts); the replica that made it drops that tenant's cached keys at once.
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Tenant } from '../../store/index.js';
import * as store from '../../store/index.js';
import { actedBy, auditAdminAction } from '../journal/audit.js';
import { InvalidInputError, NotFoundError } from '../errors.js';
import { requireAdmin } from '../tenants/gate.js';
import { checkGrace } from '../tenants/tenants.js';
import { SecretsKeyError } from '../errors.js';
import { SECRETS_KEY_RULE, SECRETS_KEY_SETTING, checkSealedSecrets, type SecretBox } from '../keys/secrets.js';

/** Where the keys live and who acts: `actor` null for the command line (else it must be an admin). `keys`, `log`: the server's cache and logger, when it acts. */
export interface KeyAdmin {
  pool: pg.Pool;
  secrets: SecretBox | undefined;
  actor: Tenant | null;
  keys?: { forget(tenant: string): void };
  log?: Logger;
}

/** What every key shows in listings: never a secret. */
export interface KeyView {
  tenant: string;
  createdAt: Date;
  rotatedAt: Date | null;
  lastUsedAt: Date | null;
  /** A rotation with a grace: the old secret (and what else it replaced) still works until then; null: none (or it ended). */
  oldSecretValidUntil: Date | null;
}

/** A key just made or rotated with what was minted for it (`M`): to be shown once, never logged; `tenant`: its zones, for the configuration printed beside it. */
export type Issued<V, M> = { key: V } & M & { tenant: Tenant };

/** A new secret: `shown` once to the caller, `secret` sealed, `authValue` (a consumer key's hash) replacing the key's auth column. */
export interface Minted<M> {
  shown: M;
  secret: Buffer;
  authValue?: Buffer;
}

/** What the journal and the logs say of one kind of key (`V`: its view). */
interface JournaledKind<V extends KeyView> {
  /** A key in messages and logs ("TSIG key"); what the journal's actions end in ("tsig-key"); what a rotation replaces ("secret"). */
  what: string;
  slug: string;
  replaces: string;
  /** A key's words in the journal ("TSIG key k (hmac-sha256) of tenant t") and its fields there and in logs. */
  describe(key: V): string;
  fields(key: V): Record<string, unknown>;
  /** Logs say what the journal adds (created: the kind's fields; rotated: the grace). */
  logsDetail?: boolean;
}

/** What one kind of key differs in. `R`: its row, `V`: its view, `M`: what is minted and shown. */
export interface KeyKind<R extends store.KeyRowBase, V extends KeyView, M> extends JournaledKind<V> {
  store: store.KeyStore<R>;
  /** What is sealed, for the error of a server without a key ("TSIG secrets"). */
  sealedWhat: string;
  /** A key's name as given, checked and normalized, or InvalidInputError. */
  nameOf(raw: string): string;
  /** What a key's sealed secret is bound to: moved to another key's row, it does not open. */
  context(name: string): string;
  mint(current: R): Minted<M>;
  view(r: R): V;
  notFound(name: string): NotFoundError;
}

/** One creation: its name asked for (else drawn per attempt), what was minted, its own columns, what the journal adds. */
export interface Draft<M, V extends KeyView> {
  wanted?: string;
  draw(tenant: string): string;
  minted: Minted<M>;
  values(name: string): Record<string, unknown>;
  detail(key: V): Record<string, unknown>;
  /** The error when `wanted` is taken. */
  taken?(name: string): Error;
}

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

/** What a rotation did to the old credential (`what`: "secret", ...), `until`: the end of its grace (ISO), if any. */
export function oldStops(what: string, until: string | undefined): string {
  const verb = what.includes(' and ') ? 'work' : 'works';
  return until ? `the old ${what} still ${verb} until ${until}` : `the old ${what} no longer ${verb}`;
}

/** A row's times as a view shows them; the grace only while it runs. */
export function keyTimes(r: store.KeyRowBase): Omit<KeyView, 'tenant'> {
  const grace = r.previousValidUntil && r.previousValidUntil.getTime() > Date.now() ? r.previousValidUntil : null;
  return { createdAt: r.createdAt, rotatedAt: r.rotatedAt, lastUsedAt: r.lastUsedAt, oldSecretValidUntil: grace };
}

type Verb = 'created' | 'rotated' | 'deleted';

/** Journals a change in its transaction (`detail`: fields beyond the kind's). */
async function journal<V extends KeyView>(tx: store.Queryable, admin: Omit<KeyAdmin, 'secrets'>, kind: JournaledKind<V>, verb: Verb, key: V, detail = {}) {
  const until = verb === 'rotated' ? key.oldSecretValidUntil?.toISOString() : undefined;
  const summary = `${kind.describe(key)} ${verb} ${actedBy(admin.actor)}${verb === 'rotated' ? `: ${oldStops(kind.replaces, until)}` : ''}`;
  const action = `${verb === 'created' ? 'create' : verb === 'rotated' ? 'rotate' : 'delete'}-${kind.slug}`;
  await auditAdminAction(tx, null, admin.actor, action, summary, { ...kind.fields(key), ...detail, ...(until ? { oldSecretValidUntil: until } : {}) });
}

/** After the transaction: this replica forgets the tenant's keys at once (the others on NOTIFY dnsplane_tenant), and the change is logged. */
function done<V extends KeyView>(admin: Omit<KeyAdmin, 'secrets'>, kind: JournaledKind<V>, verb: Verb, key: V, detail: Record<string, unknown> = {}): void {
  if (verb !== 'created') admin.keys?.forget(key.tenant);
  const until = verb === 'rotated' && key.oldSecretValidUntil ? { oldSecretValidUntil: key.oldSecretValidUntil.toISOString() } : {};
  const [before, after] = kind.logsDetail ? [detail, until] : [{}, {}];
  admin.log?.info({ ...kind.fields(key), ...before, by: admin.actor?.name, ...after }, `${kind.what} ${verb}`);
}

function checkActor(admin: Pick<KeyAdmin, 'actor'>): void {
  if (admin.actor) requireAdmin(admin.actor);
}

/** A new key for a tenant (`prepare`: the input checked, after the actor); what was minted is in the answer and nowhere else in clear. */
export async function createKey<R extends store.KeyRowBase, V extends KeyView, M>(
  admin: KeyAdmin,
  kind: KeyKind<R, V, M>,
  tenantName: string,
  prepare: () => Draft<M, V>,
): Promise<Issued<V, M>> {
  checkActor(admin);
  const draft = prepare();
  const tenant = await tenantNamed(admin.pool, tenantName, 'tenant');
  const box = sealingBox(admin.secrets, kind.sealedWhat);
  // A drawn name that happens to be taken is drawn again; a name asked for is refused.
  for (let attempt = 0; ; attempt++) {
    const name = draft.wanted ?? draft.draw(tenant.name);
    try {
      const issued = await store.withTransaction(admin.pool, async (tx) => {
        await checkSealedSecrets(tx, box);
        const key = kind.view(await kind.store.create(tx, tenant.id, draft.values(name), box.seal(draft.minted.secret, kind.context(name))));
        await journal(tx, admin, kind, 'created', key, draft.detail(key));
        return { key, ...draft.minted.shown, tenant };
      });
      done(admin, kind, 'created', issued.key, draft.detail(issued.key));
      return issued;
    } catch (e) {
      if (!(e instanceof store.AlreadyExistsError)) throw e;
      if (draft.wanted !== undefined && draft.taken) throw draft.taken(name);
      if (attempt >= 3) throw e;
    }
  }
}

/** The kind's list, rotate and delete, its entry points; and its words (`what`, `replaces`) for the doors' messages. */
export function keyAdmin<R extends store.KeyRowBase, V extends KeyView, M>(kind: KeyKind<R, V, M>) {
  return {
    what: kind.what,
    replaces: kind.replaces,

    /** Keys by tenant and name; `tenant` '': every tenant's. */
    async list(admin: Pick<KeyAdmin, 'pool' | 'actor'>, tenant: string): Promise<V[]> {
      checkActor(admin);
      const tenantId = tenant.trim() === '' ? undefined : (await tenantNamed(admin.pool, tenant, 'tenant')).id;
      return (await kind.store.list(admin.pool, tenantId === undefined ? {} : { tenantId })).map((r) => kind.view(r));
    },

    /**
     * A new secret (and all else a rotation replaces) for the key, the rest unchanged; the old one stops
     * working at once, or after `graceMs` (at most 7 days; a grace still running from an earlier
     * rotation ends). `graceField`: what a bad grace's error names.
     */
    async rotate(admin: KeyAdmin, rawName: string, graceMs = 0, graceField = 'graceSeconds'): Promise<Issued<V, M>> {
      checkActor(admin);
      const name = kind.nameOf(rawName);
      checkGrace(graceMs, graceField, 'secret');
      const box = sealingBox(admin.secrets, kind.sealedWhat);
      const issued = await store.withTransaction(admin.pool, async (tx) => {
        const current = await kind.store.get(tx, name);
        if (!current) throw kind.notFound(name);
        await checkSealedSecrets(tx, box);
        const { shown, secret, authValue } = kind.mint(current);
        const key = kind.view(await kind.store.rotate(tx, name, box.seal(secret, kind.context(name)), graceMs, authValue));
        await journal(tx, admin, kind, 'rotated', key);
        return { key, ...shown, tenant: (await store.getTenantById(tx, current.tenantId))! };
      });
      done(admin, kind, 'rotated', issued.key);
      return issued;
    },

    /** Deletes the key; it stops working at once. Returns what it was. */
    async remove(admin: Omit<KeyAdmin, 'secrets'>, rawName: string): Promise<V> {
      checkActor(admin);
      const name = kind.nameOf(rawName);
      const key = await store.withTransaction(admin.pool, async (tx) => {
        const deleted = await kind.store.remove(tx, name).catch((e: unknown) => {
          throw e instanceof store.NotFoundError ? kind.notFound(name) : e;
        });
        const key = kind.view(deleted);
        await journal(tx, admin, kind, 'deleted', key);
        return key;
      });
      done(admin, kind, 'deleted', key);
      return key;
    },
  };
}
