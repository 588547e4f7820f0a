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
import { SECRETS_KEY_SETTING, SecretsKeyError } from './secrets.js';
import { InvalidInputError } from '../errors.js';
import { LastUsed } from './last-used.js';
import type { TsigAlgorithm, TsigKey } from './cache.js';

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

/** Every algorithm dnsplane accepts, in the order RFC 8945 lists them. */
export const TSIG_ALGORITHMS: readonly TsigAlgorithm[] = ['hmac-md5', 'hmac-sha1', 'hmac-sha224', 'hmac-sha256', 'hmac-sha384', 'hmac-sha512'];
export const DEFAULT_TSIG_ALGORITHM: TsigAlgorithm = 'hmac-sha256';

/** A new secret is as long as the HMAC's output (what BIND's tsig-keygen makes). */
export const TSIG_SECRET_BYTES: Readonly<Record<TsigAlgorithm, number>> = {
  'hmac-md5': 16,
  'hmac-sha1': 20,
  'hmac-sha224': 28,
  'hmac-sha256': 32,
  'hmac-sha384': 48,
  'hmac-sha512': 64,
};

export function isTsigAlgorithm(value: string): value is TsigAlgorithm {
  return (TSIG_ALGORITHMS as readonly string[]).includes(value);
}

/** An algorithm as a person or a tool writes it ("HMAC-SHA256", "hmac-sha256."); '' gives the default. */
export function parseTsigAlgorithm(raw: string, field: string): TsigAlgorithm {
  const value = raw.trim().toLowerCase().replace(/\.$/, '');
  if (value === '') return DEFAULT_TSIG_ALGORITHM;
  if (!isTsigAlgorithm(value))
    throw new InvalidInputError(field, `must be one of ${TSIG_ALGORITHMS.join(', ')} (default ${DEFAULT_TSIG_ALGORITHM}), got ${JSON.stringify(raw)}`);
  return value;
}

const LABEL = '[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?';
const KEY_NAME = new RegExp(`^${LABEL}(?:\\.${LABEL})*$`);

/** A key name as stored: lowercase, without the trailing dot; undefined when it is not a valid one. */
export function canonicalKeyName(raw: string): string | undefined {
  const name = raw.toLowerCase().replace(/\.$/, '');
  return name.length <= 253 && KEY_NAME.test(name) ? name : undefined;
}

/** canonicalKeyName, or InvalidInputError naming the field and the rule. */
export function normalizeTsigKeyName(raw: string, field: string): string {
  const name = canonicalKeyName(raw.trim());
  if (name === undefined) {
    throw new InvalidInputError(
      field,
      `must be a DNS name of at most 253 characters (e.g. "cluster1.dnsplane."): labels of 1-63 characters of a-z, 0-9, "-" and "_", not starting or ending with "-"; got ${JSON.stringify(raw)}`,
    );
  }
  return name;
}

/** What a key's sealed secret is bound to: moved to another key's row, it does not open. */
export function secretContext(name: string): string {
  return `tsig-key:${name}`;
}

export interface KeyringOptions {
  /** Default LAST_USED_EVERY_MS (core/credentials/last-used.ts). */
  lastUsedEveryMs?: number;
  /** Default Date.now. */
  clock?: () => number;
}

const keyrings = new WeakMap<CoreContext, TsigKeyring>();

/** The context's keyring (one per context: its cache is ctx.tsigKeys, its "last used" writes coalesced). */
export function tsigKeyring(ctx: CoreContext): TsigKeyring {
  let ring = keyrings.get(ctx);
  if (!ring) keyrings.set(ctx, (ring = createTsigKeyring(ctx)));
  return ring;
}

/** A keyring of its own (tests: another "last used" interval or clock). */
export function createTsigKeyring(ctx: CoreContext, opts: KeyringOptions = {}): TsigKeyring {
  const lastUsed = new LastUsed((uses) => store.TSIG_KEYS.noteUsed(ctx.pool, uses), ctx.log, 'TSIG key', opts.lastUsedEveryMs, opts.clock);

  const read = async (name: string): Promise<TsigKey | undefined> => {
    const row = await store.TSIG_KEYS.findForAuth(ctx.pool, name);
    if (!row || row.tenant.disabled || !isTsigAlgorithm(row.algorithm)) return undefined;
    if (!ctx.secrets) {
      throw new SecretsKeyError(
        `TSIG key "${name}": ${SECRETS_KEY_SETTING} is not set on this server, so its secret cannot be opened; set it to the key the secrets were sealed with`,
      );
    }
    const secret = ctx.secrets.open(row.sealed, secretContext(row.name));
    const previous =
      row.previousSealed && row.previousValidUntil
        ? { secret: ctx.secrets.open(row.previousSealed, secretContext(row.name)), validUntil: row.previousValidUntil }
        : undefined;
    return { id: row.id, name: row.name, algorithm: row.algorithm, secret, ...(previous ? { previous } : {}), tenant: row.tenant, acmeOnly: row.acmeOnly };
  };

  return {
    async find(raw) {
      const name = canonicalKeyName(raw);
      if (name === undefined) return undefined;
      return ctx.tsigKeys ? ctx.tsigKeys.lookup(name, () => read(name)) : read(name);
    },
    noteUsed(key) {
      lastUsed.note(key.id);
    },
  };
}
