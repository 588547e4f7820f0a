/**
 * Secrets at rest that the server must read back (a TSIG secret: the server computes the MAC with it;
 * an OVH-style application secret, later), sealed with AES-256-GCM (node:crypto) under one encryption
 * key, DNSPLANE_SECRETS_KEY (32 random bytes; config/config.ts reads it, demo mode keeps one in its data dir).
 *
 * Each secret gets a random 12-byte IV; the 16-byte authentication tag is stored with it, so that a
 * changed byte (ciphertext, IV, tag) is refused, never opened into a wrong secret. The `context` of a
 * secret (e.g. "tsig-key:<name>") is authenticated with it as additional data: a sealed secret moved to
 * another row does not open there. Beside each ciphertext sits the encryption key's id (the first 8
 * bytes of its SHA-256), so a server started with another key says so instead of failing on every
 * request. Nothing here logs, and no error carries a secret or the encryption key.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import * as store from '../../store/index.js';
import { SecretUnreadableError, SecretsKeyError } from '../errors.js';

type SealedSecret = store.SealedSecret;

/** The setting that holds the encryption key (read by config/config.ts; named in every message). */
export const SECRETS_KEY_SETTING = 'DNSPLANE_SECRETS_KEY';
/** What the setting must hold, for messages. */
export const SECRETS_KEY_RULE = 'must be 32 random bytes in base64 (e.g. the output of `openssl rand -base64 32`)';

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID_BYTES = 8;

/** The id stored beside every secret the key seals: the first 8 bytes of its SHA-256. */
export function keyIdOf(key: Buffer): Buffer {
  return createHash('sha256').update(key).digest().subarray(0, KEY_ID_BYTES);
}

/** A new encryption key (demo mode's). */
export function newSecretsKey(): Buffer {
  return randomBytes(KEY_BYTES);
}

/**
 * Seals under one encryption key and opens under any of a list: the first key seals, every key opens
 * what it sealed (DNSPLANE_SECRETS_KEYS while a key is rotated: new first, old after).
 */
export class SecretBox {
  /** The id of the key that seals. */
  readonly keyId: Buffer;
  /** The ids (hex) of every key, the sealing one first. */
  readonly keyIdsHex: readonly string[];
  readonly #key: Buffer;
  readonly #byId: ReadonlyMap<string, Buffer>;

  constructor(keys: Buffer | readonly Buffer[]) {
    const list = Buffer.isBuffer(keys) ? [keys] : [...keys];
    if (list.length === 0) throw new SecretsKeyError(`${SECRETS_KEY_SETTING}: no key given`);
    for (const key of list) if (key.length !== KEY_BYTES) throw new SecretsKeyError(`${SECRETS_KEY_SETTING}: ${SECRETS_KEY_RULE}, got ${key.length} bytes`);
    this.#key = Buffer.from(list[0]!);
    this.keyId = keyIdOf(this.#key);
    this.#byId = new Map(list.map((k) => [keyIdOf(k).toString('hex'), Buffer.from(k)]));
    this.keyIdsHex = [...this.#byId.keys()];
  }

  /** The sealing key's id in hex, for messages. */
  get keyIdHex(): string {
    return this.keyId.toString('hex');
  }

  /** Whether one of this box's keys has the id (hex): a secret sealed with it opens here. */
  opens(keyIdHex: string): boolean {
    return this.#byId.has(keyIdHex);
  }

  /** The keys this box holds, for messages: "key K" or "keys K1 (seals), K2". */
  describeKeys(): string {
    return this.keyIdsHex.length === 1 ? `key ${this.keyIdHex}` : `keys ${this.keyIdsHex.map((k, i) => (i === 0 ? `${k} (seals)` : k)).join(', ')}`;
  }

  seal(plaintext: Buffer, context: string): SealedSecret {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return { keyId: Buffer.from(this.keyId), iv, tag: cipher.getAuthTag(), ciphertext };
  }

  /**
   * The secret, or SecretsKeyError when it was sealed under another encryption key, or
   * SecretUnreadableError when it does not authenticate (altered, or not sealed for this context).
   */
  open(sealed: SealedSecret, context: string): Buffer {
    const key = this.#byId.get(sealed.keyId.toString('hex'));
    if (!key) {
      throw new SecretsKeyError(
        `${context}: sealed with encryption key ${sealed.keyId.toString('hex')}, but ${SECRETS_KEY_SETTING} holds ${this.describeKeys()}: start dnsplane with the key it was sealed with (DNSPLANE_SECRETS_KEYS may list several)`,
      );
    }
    if (sealed.iv.length !== IV_BYTES || sealed.tag.length !== TAG_BYTES) {
      throw new SecretUnreadableError(`${context}: the sealed secret is malformed (IV ${sealed.iv.length} bytes, tag ${sealed.tag.length} bytes)`);
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(sealed.tag);
      return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]);
    } catch {
      throw new SecretUnreadableError(
        `${context}: the sealed secret does not authenticate under ${SECRETS_KEY_SETTING} (key ${sealed.keyId.toString('hex')}): it was altered in the database`,
      );
    }
  }
}

/**
 * The check at start, before anything is served, and before a secret is sealed: every stored secret
 * must be sealed with one of `box`'s keys. Throws SecretsKeyError naming the setting, how many secrets
 * of which tenants no configured key opens, their key ids, and what to do.
 */
export async function checkSealedSecrets(q: store.Queryable, box: SecretBox | undefined): Promise<void> {
  const uses = await store.sealedKeyIds(q);
  if (uses.length === 0) return;
  const unopened = box ? uses.filter((u) => !box.opens(u.keyId)) : uses;
  if (unopened.length === 0) return;
  const count = unopened.reduce((n, u) => n + u.count, 0);
  const held = unopened
    .map(
      (u) => `${u.count} ${u.what}${u.count === 1 ? '' : 's'} of tenant${u.tenants.length === 1 ? '' : 's'} ${u.tenants.join(', ')} sealed with key ${u.keyId}`,
    )
    .join('; ');
  const what = `${count} stored secret${count === 1 ? '' : 's'} (${held})`;
  if (!box)
    throw new SecretsKeyError(
      `${SECRETS_KEY_SETTING} is not set, but the database holds ${what}: set it to the key they were sealed with; dnsplane serves nothing without it`,
    );
  throw new SecretsKeyError(
    `${SECRETS_KEY_SETTING} holds ${box.describeKeys()}, and none opens ${what}: add the key they were sealed with (DNSPLANE_SECRETS_KEYS lists several: the new key first, the old after); dnsplane serves nothing without it`,
  );
}

declare module '../context.js' {
  interface CoreContext {
    /**
     * Seals and opens secrets kept at rest (this file): DNSPLANE_SECRETS_KEYS, or demo mode's own.
     * Absent: no TSIG key, OVH key or account can be created or used.
     */
    secrets?: SecretBox;
  }
}
