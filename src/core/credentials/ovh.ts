/**
 * OVH-style keys (an application key, its application secret and a consumer key, as OVH issues them)
 * as the OVH API dnsplane serves (ovhapi/) uses them: `ovhKeyring(ctx).find(consumerKey)` on every
 * signed call, `noteUsed(key)` once its signature verified. A key acts as its tenant. Keys are made,
 * rotated and deleted by core/credentials/ovh-admin.ts; the application secret is sealed at rest
 * (core/credentials/secrets.ts) and opened here, once per key and process while it stays cached.
 *
 * A call names its consumer key in clear (X-Ovh-Consumer), so a key is found by the sha-256 of it —
 * what the table keeps instead of the consumer key — and kept in memory by that hash
 * (core/credentials/cache.ts), exact across replicas the way tokens and TSIG keys are (NOTIFY
 * dnsplane_tenant on every change of a key or its tenant). Reads of one key in flight at once are
 * shared. "Last used" is written at most once a minute per key and process (core/credentials/last-used.ts).
 */
import { randomInt } from 'node:crypto';
import * as store from '../../store/index.js';
import { nowMs, type CoreContext } from '../context.js';
import type { OvhKey } from './cache.js';
import { perContext, sealedKeyring, type KeyringKind, type KeyringOptions } from './keyring.js';
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

export interface OvhKeyring {
  /**
   * The key with this consumer key, disabled tenant or expired included (the caller answers those
   * as OVH answers a credential that is not valid), or undefined when no key has it (a consumer key a
   * rotation replaced: while its grace runs, with the replaced secret). Rejects
   * (SecretsKeyError, SecretUnreadableError) when the secret cannot be opened: an operator's fault.
   */
  find(consumerKey: string): Promise<OvhKey | undefined>;
  /** Whether some key has this application key (to tell OVH's INVALID_KEY from INVALID_CREDENTIAL). */
  applicationKnown(applicationKey: string): Promise<boolean>;
  /** A call authenticated with this key: recorded as its "last used", coalesced. */
  noteUsed(key: OvhKey): void;
}

const OVH_RING: KeyringKind<store.OvhKeyRow, OvhKey> = {
  store: store.OVH_KEYS,
  cache: (ctx) => ctx.ovhKeys,
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
  validUntil: (k) => k.replacedUntil,
};

/** The context's keyring (its cache is ctx.ovhKeys, its "last used" writes coalesced). */
export const ovhKeyring = perContext((ctx) => createOvhKeyring(ctx));

/** A keyring of its own (tests: another "last used" interval or clock). */
export function createOvhKeyring(ctx: CoreContext, opts: KeyringOptions = {}): OvhKeyring {
  const ring = sealedKeyring(ctx, OVH_RING, opts);
  return {
    async find(consumerKey) {
      const hash = consumerKeyHash(consumerKey);
      const key = await ring.find(hash.toString('hex'), hash);
      // A consumer key a rotation replaced: accepted only while that rotation's grace runs.
      if (key?.replacedUntil && nowMs(ctx) >= key.replacedUntil.getTime()) return undefined;
      return key;
    },
    async applicationKnown(applicationKey) {
      return (await store.OVH_KEYS.get(ctx.pool, applicationKey)) !== undefined;
    },
    noteUsed: ring.noteUsed,
  };
}
