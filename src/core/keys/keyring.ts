/**
 * A keyring: how a door finds the key a request names (TSIG keys: core/keys/tsig.ts, the DNS
 * door; OVH keys: ovh.ts, the served OVH API) — from memory (core/keys/cache.ts, exact across
 * replicas by NOTIFY dnsplane_tenant), else from Postgres (store/sealed-keys.ts findForAuth) with its
 * sealed secrets opened once per key and process (core/keys/secrets.ts); reads of one key in
 * flight at once shared — and writes its "last used" at most once a minute per key and process
 * (core/keys/last-used.ts), never once per request. A kind (KeyringKind) says only what
 * differs: its store and cache, how a request names a key, which rows may be found, the key handed out.
 */
import type * as store from '../../store/index.js';
import { nowMs, type CoreContext } from '../context.js';
import type { KeyCache } from './cache.js';
import { LastUsed } from './last-used.js';
import { SecretsKeyError } from '../errors.js';
import { SECRETS_KEY_SETTING } from './secrets.js';

/** A keyring of one's own (tests: another "last used" interval or clock). */
export interface KeyringOptions {
  /** Default LAST_USED_EVERY_MS (core/keys/last-used.ts). */
  lastUsedEveryMs?: number;
  /** Default Date.now. */
  clock?: () => number;
}

/** What one kind of keyring differs in. `R`: its store's row; `K`: the key it hands out. */
export interface KeyringKind<R extends store.KeyRowBase, K extends { id: string }> {
  store: Pick<store.KeyStore<R>, 'findForAuth' | 'noteUsed'>;
  cache(ctx: CoreContext): KeyCache<K & { tenant: store.Tenant }> | undefined;
  /** What a request's name of a key is kept under in the cache and found by in the table; undefined: no key can have it. */
  lookup(raw: string): KeyAt | undefined;
  /** A key in messages and logs ("TSIG key"); a key's own words in the error of a server without a sealing key. */
  what: string;
  label(row: R): string;
  /** What is sealed ("secret", "application secret"), for that error. */
  secretWhat: string;
  /** What a row's sealed secrets are bound to (core/keys/secrets.ts). */
  context(row: R): string;
  /** Whether a row found may authenticate at all (before any secret is opened); default: every row. */
  accepts?(row: store.KeyForAuth<R>): boolean;
  /** The key handed out, opening (`open`) the sealed secrets it holds: each is opened only if asked for. */
  keyOf(row: store.KeyForAuth<R>, open: (sealed: store.SealedSecret) => Buffer): K & { tenant: store.Tenant };
  /** Until when a key found may be used (a replaced consumer key in its grace, by the context's clock); default: until forgotten. */
  validUntil?(key: K): Date | undefined;
}

/** Where a key a request names is found: its cache key, and what the table is searched by (SealedKeyring.at). */
export interface KeyAt {
  readonly cacheKey: string;
  readonly authValue: string | Buffer;
}

export interface SealedKeyring<K> {
  /**
   * The key a request names, or undefined (no such key, or the kind does not accept it). Rejects
   * (SecretsKeyError, SecretUnreadableError from core/keys/secrets.ts) when the key exists but
   * its secret cannot be opened — this server's DNSPLANE_SECRETS_KEY is missing or another one, or
   * the row was altered: an operator's fault, not the client's.
   */
  find(raw: string): Promise<K | undefined>;
  /** The key a request names when this process holds it in memory (no lookup, no promise); else undefined. */
  cached(raw: string): K | undefined;
  /** A request authenticated with this key: recorded as its "last used", coalesced. */
  noteUsed(key: K): void;
}

/**
 * A keyring whose caller may work out once where the key a request names would be (at(); for an OVH
 * key, the one sha-256 of its consumer key) and hand that to cached() and find() instead of the name.
 */
export interface LocatingKeyring<K> extends SealedKeyring<K> {
  /** Where the key named `raw` would be; undefined: no key can have that name. */
  at(raw: string): KeyAt | undefined;
  find(raw: string | KeyAt): Promise<K | undefined>;
  cached(raw: string | KeyAt): K | undefined;
}

export function sealedKeyring<R extends store.KeyRowBase, K extends { id: string }>(
  ctx: CoreContext,
  kind: KeyringKind<R, K>,
  opts: KeyringOptions = {},
): LocatingKeyring<K & { tenant: store.Tenant }> {
  const lastUsed = new LastUsed((uses) => kind.store.noteUsed(ctx.pool, uses), ctx.log, kind.what, opts.lastUsedEveryMs, opts.clock, ctx.lifecycle);
  const read = async (authValue: string | Buffer) => {
    const row = await kind.store.findForAuth(ctx.pool, authValue);
    if (!row || kind.accepts?.(row) === false) return undefined;
    if (!ctx.secrets) {
      throw new SecretsKeyError(
        `${kind.what} ${kind.label(row)}: ${SECRETS_KEY_SETTING} is not set on this server, so its ${kind.secretWhat} cannot be opened; set it to the key the secrets were sealed with`,
      );
    }
    const box = ctx.secrets;
    return kind.keyOf(row, (sealed) => box.open(sealed, kind.context(row)));
  };
  /** A key found, unless it is past its validUntil by the context's clock. */
  const valid = <T extends K>(key: T | undefined): T | undefined => {
    const until = key && kind.validUntil?.(key);
    return until && nowMs(ctx) >= until.getTime() ? undefined : key;
  };
  const where = (raw: string | KeyAt) => (typeof raw === 'string' ? kind.lookup(raw) : raw);
  return {
    at: (raw) => kind.lookup(raw),
    async find(raw) {
      const at = where(raw);
      if (!at) return undefined;
      const cache = kind.cache(ctx);
      return valid(await (cache ? cache.lookup(at.cacheKey, () => read(at.authValue), kind.validUntil) : read(at.authValue)));
    },
    cached(raw) {
      const at = where(raw);
      return at && valid(kind.cache(ctx)?.get(at.cacheKey));
    },
    noteUsed(key) {
      lastUsed.note(key.id);
    },
  };
}

/** One of `make`'s per context (so one cache's keyring and one "last used" coalescing per server). */
export function perContext<T>(make: (ctx: CoreContext) => T): (ctx: CoreContext) => T {
  const made = new WeakMap<CoreContext, T>();
  return (ctx) => {
    let value = made.get(ctx);
    if (!value) made.set(ctx, (value = make(ctx)));
    return value;
  };
}
