/**
 * TSIG keys (RFC 8945) as the DNS front door uses them: `tsigKeyring(ctx).find(name)` on every signed
 * message, `noteUsed(key)` once it verified. A key acts as its tenant; a disabled tenant's keys are not
 * found. Keys are created, rotated and deleted by core/credentials/tsig-admin.ts; their secrets are sealed at
 * rest (core/credentials/secrets.ts) and opened here, once per key and process while it stays cached.
 *
 * Cheap on the hot path (a DNS UPDATE per ACME challenge, signed queries and transfers): a key found
 * is kept in memory by name (core/credentials/cache.ts) and exact across replicas the way tokens are:
 * creating, rotating or deleting a key, and disabling or enabling its tenant, send NOTIFY
 * dnsplane_tenant with the tenant's name, and every replica drops that tenant's keys when it is
 * delivered; a replica not listening reads Postgres each time. Reads of one name in flight at once
 * are shared (not across an invalidation). "Last used" is written at most once a minute per key and
 * process (the latest use of the minute is written at its end), never once per request.
 */
import * as store from '../../store/index.js';
import { nowMs, type CoreContext } from '../context.js';
import { canonicalKeyName, isTsigAlgorithm } from '../../dns/tsig-keys.js';
import type { TsigAlgorithm, TsigKey } from './cache.js';
import { perContext, sealedKeyring, type KeyringKind, type KeyringOptions } from './keyring.js';

export type { TsigAlgorithm, TsigKey } from './cache.js';
export { TsigKeyCache } from './cache.js';

export interface TsigKeyring {
  /**
   * The key of that name (any case, a trailing dot or not), or undefined: no such key, or its tenant
   * is disabled. Rejects (SecretsKeyError, SecretUnreadableError from core/credentials/secrets.ts) when the key
   * exists but its secret cannot be opened — this server's DNSPLANE_SECRETS_KEY is missing or another
   * one, or the row was altered: an operator's fault, not the client's (answer SERVFAIL).
   */
  find(name: string): Promise<TsigKey | undefined>;
  /** A message authenticated with this key: recorded as its "last used", coalesced (at most once a minute). */
  noteUsed(key: TsigKey): void;
}

/**
 * The key as signed with the secret its last rotation replaced, while that rotation's grace runs (by
 * the context's clock); undefined: no grace, or it ended. The DNS door tries it when the current
 * secret's MAC does not match, and signs the answer with the secret that matched.
 */
export function replacedKeyOf(ctx: Pick<CoreContext, 'clock'>, key: TsigKey): TsigKey | undefined {
  if (!key.previous || nowMs(ctx) >= key.previous.validUntil.getTime()) return undefined;
  const { previous: _, ...rest } = key;
  return { ...rest, secret: key.previous.secret };
}

/** What a key's sealed secret is bound to: moved to another key's row, it does not open. */
export function secretContext(name: string): string {
  return `tsig-key:${name}`;
}

const TSIG_RING: KeyringKind<store.TsigKeyRow, TsigKey> = {
  store: store.TSIG_KEYS,
  cache: (ctx) => ctx.tsigKeys,
  what: 'TSIG key',
  label: (row) => `"${row.name}"`,
  secretWhat: 'secret',
  context: (row) => secretContext(row.name),
  accepts: (row) => !row.tenant.disabled && isTsigAlgorithm(row.algorithm),
  keyOf: (row, open) => ({
    id: row.id,
    name: row.name,
    algorithm: row.algorithm as TsigAlgorithm,
    secret: open(row.sealed),
    ...(row.previousSealed && row.previousValidUntil ? { previous: { secret: open(row.previousSealed), validUntil: row.previousValidUntil } } : {}),
    tenant: row.tenant,
    acmeOnly: row.acmeOnly,
  }),
};

/** The context's keyring (one per context: its cache is ctx.tsigKeys, its "last used" writes coalesced). */
export const tsigKeyring = perContext((ctx) => createTsigKeyring(ctx));

/** A keyring of its own (tests: another "last used" interval or clock). */
export function createTsigKeyring(ctx: CoreContext, opts: KeyringOptions = {}): TsigKeyring {
  const ring = sealedKeyring(ctx, TSIG_RING, opts);
  return {
    async find(raw) {
      const name = canonicalKeyName(raw);
      return name === undefined ? undefined : ring.find(name, name);
    },
    noteUsed: ring.noteUsed,
  };
}
