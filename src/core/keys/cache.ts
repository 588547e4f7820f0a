/**
 * Credentials that authenticated, kept in memory so that the next call needs no round trip to
 * Postgres: bearer tokens by their hash (core/tenants/tenants.ts TokenCache), TSIG keys by name
 * (core/keys/tsig.ts), OVH keys by the hash of their consumer key (core/keys/ovh.ts). Only what was
 * found is kept: an unknown credential reads Postgres every time (what a limiter of failed attempts
 * sits in front of).
 *
 * Exactness across replicas comes from NOTIFY dnsplane_tenant, sent with every change of a tenant's
 * credentials (a token rotated, the tenant disabled or enabled, a TSIG or OVH key created, rotated or
 * deleted: store/tenants.ts, store/sealed-keys.ts): forget(name) drops that tenant's entries. Entries
 * are used only while `trusted()` says the replica is listening (server/server.ts: the listener is connected
 * and answered its heartbeat recently); clear() when the listener is lost or comes back, since
 * notifications sent in between were missed. An answer read from Postgres is kept only if nothing was
 * forgotten or cleared while it was being read (the epoch), so a read that raced a change cannot
 * outlive it.
 *
 * Here too the forms the TSIG and OVH keyrings hand out (core/keys/tsig.ts, ovh.ts), apart from
 * the keyrings so that CoreContext can hold the caches without importing them.
 */
import type { TsigAlgorithm } from '../../dns/wire/index.js';
import type { Tenant } from '../../store/index.js';

export class CredentialCache<V> {
  private readonly entries = new Map<string, V>();
  /** Entries valid only until a moment (ms since the epoch): an old token in its grace. */
  private readonly until = new Map<string, number>();
  /** Reads of Postgres in flight, by key, with the epoch they started in (lookup()). */
  private readonly reads = new Map<string, { epoch: number; read: Promise<V | undefined> }>();
  /** Bumped by every forget() and clear(). */
  epoch = 0;
  /** The epoch of the last clear(), and of each tenant's last forget() since (setUnlessChanged). */
  private clearedAt = 0;
  private readonly forgottenAt = new Map<string, number>();

  constructor(
    private readonly isTrusted: () => boolean,
    /** The tenant an entry belongs to (its name), for forget(). */
    private readonly tenantOf: (value: V) => string,
    /** Past this many entries, the cache starts again empty. */
    readonly maxEntries = 10_000,
  ) {}

  /** Whether entries may be used now (the replica is listening to tenant changes). */
  trusted(): boolean {
    return this.isTrusted();
  }

  get(key: string): V | undefined {
    if (!this.trusted()) return undefined;
    const until = this.until.get(key);
    if (until !== undefined && Date.now() >= until) {
      this.entries.delete(key);
      this.until.delete(key);
      return undefined;
    }
    return this.entries.get(key);
  }

  /**
   * The entry for `key`, from memory, else from `read` (Postgres), kept when found (until `validUntil`
   * of it, when that says). Reads of one key in flight at once are shared — never across an
   * invalidation, whose later callers read again.
   */
  async lookup(key: string, read: () => Promise<V | undefined>, validUntil?: (value: V) => Date | undefined): Promise<V | undefined> {
    const hit = this.get(key);
    if (hit) return hit;
    const epoch = this.epoch;
    const shared = this.reads.get(key);
    if (shared && shared.epoch === epoch) return shared.read;
    const pending = read().then((value) => {
      if (value) this.set(key, value, epoch, validUntil?.(value));
      return value;
    });
    const entry = { epoch, read: pending };
    this.reads.set(key, entry);
    try {
      return await pending;
    } finally {
      if (this.reads.get(key) === entry) this.reads.delete(key);
    }
  }

  /**
   * Keeps what Postgres answered, unless the cache was invalidated since `epoch` or is not trusted;
   * `validUntil`: the entry stops being used then (a credential in its grace).
   */
  set(key: string, value: V, epoch: number, validUntil?: Date): void {
    if (epoch !== this.epoch || !this.trusted()) return;
    if (this.entries.size >= this.maxEntries) {
      // Entries past their end first (verified workload tokens, kept until their exp, are replaced by
      // a new token every few minutes); only a cache still full is emptied.
      const now = Date.now();
      for (const [k, end] of this.until) {
        if (now < end) continue;
        this.entries.delete(k);
        this.until.delete(k);
      }
      if (this.entries.size >= this.maxEntries) {
        this.entries.clear();
        this.until.clear();
      }
    }
    this.entries.set(key, value);
    if (validUntil) this.until.set(key, validUntil.getTime());
    else this.until.delete(key);
  }

  /**
   * Keeps a value read since `epoch` (a read of many tenants at once, core/tenants/token-warmth.ts)
   * unless its own tenant was forgotten, or the cache cleared, since: another tenant's change does not
   * spoil it, as it would for set().
   */
  setUnlessChanged(key: string, value: V, epoch: number, validUntil?: Date): boolean {
    if (!this.trusted() || this.clearedAt > epoch || (this.forgottenAt.get(this.tenantOf(value)) ?? 0) > epoch) return false;
    this.set(key, value, this.epoch, validUntil);
    return true;
  }

  /** The tenant's credentials changed (or it was disabled or enabled). */
  forget(name: string): void {
    this.epoch++;
    this.forgottenAt.set(name, this.epoch);
    for (const [k, v] of this.entries) {
      if (this.tenantOf(v) !== name) continue;
      this.entries.delete(k);
      this.until.delete(k);
    }
  }

  clear(): void {
    this.epoch++;
    this.clearedAt = this.epoch;
    this.forgottenAt.clear();
    this.entries.clear();
    this.until.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

/** Keys that carry their tenant, forgotten by its name: server/server.ts builds one of each kind per process. */
export class KeyCache<V extends { tenant: Tenant }> extends CredentialCache<V> {
  constructor(isTrusted: () => boolean, maxEntries = 10_000) {
    super(isTrusted, (k) => k.tenant.name, maxEntries);
  }
}

/** The algorithms are the DNS wire format's (dns/wire/tsig.ts). */
export type { TsigAlgorithm };

export interface TsigKey {
  id: string;
  /** Lowercase, no trailing dot. */
  name: string;
  algorithm: TsigAlgorithm;
  secret: Buffer;
  /**
   * The secret a rotation with a grace replaced, still accepted until `previousValidUntil` (judged with
   * the context's clock when a message is verified, core/keys/tsig.ts replacedKeyOf).
   */
  previous?: { secret: Buffer; validUntil: Date };
  /** The key's tenant as it was when the key was read (kept exact by the cache's invalidation). */
  tenant: Tenant;
  /** The key may only add and delete TXT records named _acme-challenge.* inside its tenant's zones. */
  acmeOnly: boolean;
}

/** TSIG keys found, by name. */
export const TsigKeyCache = KeyCache<TsigKey>;
export type TsigKeyCache = KeyCache<TsigKey>;

export interface OvhKey {
  id: string;
  applicationKey: string;
  /** Opened from its sealed form; never logged. */
  applicationSecret: string;
  /** The key's tenant as it was when the key was read (kept exact by the cache's invalidation). */
  tenant: Tenant;
  /** null: never expires. */
  expiresAt: Date | null;
  createdAt: Date;
  /** Found by the consumer key a rotation with a grace replaced (`applicationSecret` is the replaced one): accepted until then, by the context's clock. */
  replacedUntil?: Date;
}

/** OVH keys found, by the sha-256 (hex) of their consumer key. */
export const OvhKeyCache = KeyCache<OvhKey>;
export type OvhKeyCache = KeyCache<OvhKey>;

declare module '../context.js' {
  interface CoreContext {
    /** TSIG keys found, kept like `tokens` (core/keys/tsig.ts). Absent: every lookup reads Postgres. */
    tsigKeys?: TsigKeyCache;
    /** OVH keys found, kept like `tokens` (core/keys/ovh.ts). Absent: every lookup reads Postgres. */
    ovhKeys?: OvhKeyCache;
  }
}
