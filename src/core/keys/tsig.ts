/**
 * TSIG keys (RFC 8945) as the DNS front door uses them (a keyring, core/keys/keyring.ts):
 * `tsigKeyring(ctx).find(name)` on every signed message — a DNS UPDATE per ACME challenge, signed
 * queries and transfers —, `noteUsed(key)` once it verified. A key acts as its tenant; a disabled
 * tenant's keys are not found. Keys are created, rotated and deleted by core/credentials/tsig-admin.ts.
 */
import * as store from '../../store/index.js';
import { nowMs, type CoreContext } from '../context.js';
import { canonicalKeyName, isTsigAlgorithm } from '../../dns/tsig-keys.js';
import type { TsigAlgorithm, TsigKey } from './cache.js';
import { perContext, sealedKeyring, type KeyringKind, type KeyringOptions, type SealedKeyring } from './keyring.js';

export type { TsigAlgorithm, TsigKey } from './cache.js';
export { TsigKeyCache } from './cache.js';

/** find(name): the key of that name, in any case, with a trailing dot or not. */
export type TsigKeyring = SealedKeyring<TsigKey>;

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
  lookup: (raw) => {
    const name = canonicalKeyName(raw);
    return name === undefined ? undefined : { cacheKey: name, authValue: name };
  },
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
  return sealedKeyring(ctx, TSIG_RING, opts);
}
