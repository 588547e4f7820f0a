/**
 * OVH-style keys (an application key, its application secret and a consumer key, as OVH issues them)
 * as the OVH API dnsplane serves (ovhapi/) uses them (a keyring, core/keys/keyring.ts):
 * `ovhKeyring(ctx).find(consumerKey)` on every signed call, `noteUsed(key)` once its signature
 * verified. A key acts as its tenant. Keys are made, rotated and deleted by core/credentials/ovh-admin.ts.
 * A call names its consumer key in clear (X-Ovh-Consumer), so a key is found, and cached, by the
 * sha-256 of it: what the table keeps instead of the consumer key.
 */
import { randomInt } from 'node:crypto';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import type { OvhKey } from './cache.js';
import { type KeyringKind, type KeyringOptions, type LocatingKeyring, perContext, sealedKeyring } from './keyring.js';
import { hashToken } from './tokens.js';

export type { OvhKey } from './cache.js';
export { OvhKeyCache } from './cache.js';

/** The lengths OVH's own keys have: 16 characters for an application key, 32 for a secret and a consumer key. */
export const APPLICATION_KEY_LENGTH = 16;
export const SECRET_LENGTH = 32;

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `length` random letters and digits (each of 62, uniformly: ~5.95 bits a character). */
export function randomKey(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[randomInt(ALPHABET.length)];
  return out;
}

/** What a key's sealed secret is bound to: moved to another key's row, it does not open. */
export function ovhSecretContext(applicationKey: string): string {
  return `ovh-key:${applicationKey}`;
}

/** What the table keeps of a consumer key. */
export function consumerKeyHash(consumerKey: string): Buffer {
  return hashToken(consumerKey);
}

/**
 * find(consumerKey): the key with this consumer key, disabled tenant or expired included (the caller
 * answers those as OVH answers a credential that is not valid); a consumer key a rotation replaced
 * while its grace runs, with the replaced secret.
 */
export interface OvhKeyring extends LocatingKeyring<OvhKey> {
  /** Whether some key has this application key (to tell OVH's INVALID_KEY from INVALID_CREDENTIAL). */
  applicationKnown(applicationKey: string): Promise<boolean>;
}

const OVH_RING: KeyringKind<store.OvhKeyRow, OvhKey> = {
  store: store.OVH_KEYS,
  cache: (ctx) => ctx.ovhKeys,
  lookup: (consumerKey) => {
    const hash = consumerKeyHash(consumerKey);
    return { cacheKey: hash.toString('hex'), authValue: hash };
  },
  what: 'OVH key',
  label: (row) => row.applicationKey,
  secretWhat: 'application secret',
  context: (row) => ovhSecretContext(row.applicationKey),
  // Only the secret it was found with: the current one, or the replaced one for a replaced consumer key.
  keyOf: (row, open) => ({
    id: row.id,
    applicationKey: row.applicationKey,
    applicationSecret: open(row.sealed).toString('utf8'),
    tenant: row.tenant,
    expiresAt: row.expiresAt,
    createdAt: row.createdAt,
    ...(row.replaced && row.previousValidUntil ? { replacedUntil: row.previousValidUntil } : {}),
  }),
  // A consumer key a rotation replaced: accepted only while that rotation's grace runs.
  validUntil: (k) => k.replacedUntil,
};

/** The context's keyring (its cache is ctx.ovhKeys, its "last used" writes coalesced). */
export const ovhKeyring = perContext((ctx) => createOvhKeyring(ctx));

/** A keyring of its own (tests: another "last used" interval or clock). */
export function createOvhKeyring(ctx: CoreContext, opts: KeyringOptions = {}): OvhKeyring {
  return {
    ...sealedKeyring(ctx, OVH_RING, opts),
    async applicationKnown(applicationKey) {
      return (await store.OVH_KEYS.get(ctx.pool, applicationKey)) !== undefined;
    },
  };
}
