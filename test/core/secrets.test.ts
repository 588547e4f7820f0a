/**
 * Secrets at rest (core/keys/secrets.ts): AES-256-GCM round trip, a random IV per secret, every altered byte
 * refused, a secret moved to another row refused, another encryption key told as such; the key's
 * setting validated in config/config.ts without ever showing its value; demo mode's key file.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig, parseSecretsKey } from '../../src/config/config.js';
import { SecretUnreadableError, SecretsKeyError } from '../../src/core/errors.js';
import { SecretBox, keyIdOf } from '../../src/core/keys/secrets.js';
import { demoSecretsKey, SECRETS_KEY_FILE } from '../../src/demo/demo.js';

const key = randomBytes(32);
const box = new SecretBox(key);
const secret = randomBytes(32);

describe('SecretBox', () => {
  it("opens what it sealed; each sealing has its own IV; the key id is the first 8 bytes of the key's sha-256", () => {
    const a = box.seal(secret, 'tsig-key:a.dnsplane');
    const b = box.seal(secret, 'tsig-key:a.dnsplane');
    expect(box.open(a, 'tsig-key:a.dnsplane').equals(secret)).toBe(true);
    expect(a.iv).toHaveLength(12);
    expect(a.tag).toHaveLength(16);
    expect(a.ciphertext).toHaveLength(secret.length);
    expect(a.iv.equals(b.iv)).toBe(false);
    expect(a.ciphertext.equals(b.ciphertext)).toBe(false);
    expect(a.ciphertext.equals(secret)).toBe(false);
    expect(a.keyId.toString('hex')).toBe(keyIdOf(key).toString('hex'));
    expect(a.keyId).toHaveLength(8);
  });

  it('refuses a flipped byte anywhere (ciphertext, IV, tag) and a secret moved to another context', () => {
    const sealed = box.seal(secret, 'tsig-key:a.dnsplane');
    const flip = (b: Buffer, i: number) => {
      const c = Buffer.from(b);
      c[i] = c[i]! ^ 0x01;
      return c;
    };
    for (let i = 0; i < sealed.ciphertext.length; i++) {
      expect(() => box.open({ ...sealed, ciphertext: flip(sealed.ciphertext, i) }, 'tsig-key:a.dnsplane')).toThrow(SecretUnreadableError);
    }
    for (let i = 0; i < 12; i++) expect(() => box.open({ ...sealed, iv: flip(sealed.iv, i) }, 'tsig-key:a.dnsplane')).toThrow(SecretUnreadableError);
    for (let i = 0; i < 16; i++) expect(() => box.open({ ...sealed, tag: flip(sealed.tag, i) }, 'tsig-key:a.dnsplane')).toThrow(SecretUnreadableError);
    expect(() => box.open(sealed, 'tsig-key:b.dnsplane')).toThrow('tsig-key:b.dnsplane: the sealed secret does not authenticate under DNSPLANE_SECRETS_KEY');
    expect(() => box.open({ ...sealed, tag: sealed.tag.subarray(0, 8) }, 'tsig-key:a.dnsplane')).toThrow('malformed');
  });

  it('tells a secret sealed under another key as such, naming both key ids and never a key', () => {
    const other = new SecretBox(randomBytes(32));
    const sealed = other.seal(secret, 'tsig-key:a.dnsplane');
    let err: unknown;
    try {
      box.open(sealed, 'tsig-key:a.dnsplane');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SecretsKeyError);
    const message = (err as Error).message;
    expect(message).toBe(
      `tsig-key:a.dnsplane: sealed with encryption key ${other.keyIdHex}, but DNSPLANE_SECRETS_KEY holds key ${box.keyIdHex}: start dnsplane with the key it was sealed with (DNSPLANE_SECRETS_KEYS may list several)`,
    );
    expect(message).not.toContain(key.toString('base64'));
  });

  it('refuses a key that is not 32 bytes', () => {
    expect(() => new SecretBox(randomBytes(16))).toThrow('DNSPLANE_SECRETS_KEY: must be 32 random bytes in base64');
  });
});

describe('DNSPLANE_SECRETS_KEY in config/config.ts', () => {
  it('reads 32 bytes of base64, and refuses anything else naming the setting and the rule, never the value', () => {
    const text = key.toString('base64');
    expect(loadConfig({ DNSPLANE_SECRETS_KEY: text }).secretsKeys?.map((k) => k.toString('base64'))).toEqual([text]);
    expect(loadConfig({}).secretsKeys).toBeUndefined();
    const short = randomBytes(16).toString('base64');
    expect(() => loadConfig({ DNSPLANE_SECRETS_KEY: short })).toThrow(
      'DNSPLANE_SECRETS_KEY: must be 32 random bytes in base64 (e.g. the output of `openssl rand -base64 32`); the value set decodes to 16 bytes',
    );
    const notBase64 = `${text.slice(0, 40)}!!!=`;
    let err: unknown;
    try {
      loadConfig({ DNSPLANE_SECRETS_KEY: notBase64 });
    } catch (e) {
      err = e;
    }
    expect((err as Error).message).toBe(
      'DNSPLANE_SECRETS_KEY: must be 32 random bytes in base64 (e.g. the output of `openssl rand -base64 32`); the value set is not base64 (44 characters)',
    );
    expect((err as Error).message).not.toContain(notBase64);
    expect(() => parseSecretsKey(randomBytes(33).toString('base64'))).toThrow('decodes to 33 bytes');
  });
});

describe('several keys (DNSPLANE_SECRETS_KEYS, while rotating)', () => {
  const fresh = randomBytes(32);
  const rotating = new SecretBox([fresh, key]);

  it('seals with the first key and opens what any of them sealed', () => {
    const old = box.seal(secret, 'tsig-key:a.dnsplane');
    expect(rotating.open(old, 'tsig-key:a.dnsplane').equals(secret)).toBe(true);
    const sealed = rotating.seal(secret, 'tsig-key:a.dnsplane');
    expect(sealed.keyId.equals(keyIdOf(fresh))).toBe(true);
    expect(new SecretBox([key, fresh]).open(sealed, 'tsig-key:a.dnsplane').equals(secret)).toBe(true);
    expect(() => box.open(sealed, 'tsig-key:a.dnsplane')).toThrow(SecretsKeyError);
    expect(rotating.keyIdsHex).toEqual([keyIdOf(fresh).toString('hex'), box.keyIdHex]);
    expect(rotating.describeKeys()).toBe(`keys ${keyIdOf(fresh).toString('hex')} (seals), ${box.keyIdHex}`);
    // An altered secret under the old key is still refused as altered, not opened with the new one.
    const altered = { ...old, tag: Buffer.from(old.tag.map((b, i) => (i === 0 ? b ^ 1 : b))) };
    expect(() => rotating.open(altered, 'tsig-key:a.dnsplane')).toThrow(SecretUnreadableError);
  });

  it('config/config.ts reads the list, new first, and refuses both settings at once, an empty entry, a bad or repeated key, naming the entry and never a value', () => {
    const a = fresh.toString('base64');
    const b = key.toString('base64');
    expect(loadConfig({ DNSPLANE_SECRETS_KEYS: `${a}, ${b}` }).secretsKeys?.map((k) => k.toString('base64'))).toEqual([a, b]);
    const refusal = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (e) {
        const m = (e as Error).message;
        expect(m).not.toContain(a);
        expect(m).not.toContain(b);
        return m;
      }
      throw new Error('accepted');
    };
    expect(refusal({ DNSPLANE_SECRETS_KEY: b, DNSPLANE_SECRETS_KEYS: `${a},${b}` })).toBe(
      'DNSPLANE_SECRETS_KEYS: set either DNSPLANE_SECRETS_KEY (one key) or DNSPLANE_SECRETS_KEYS (a list, while rotating), not both',
    );
    expect(refusal({ DNSPLANE_SECRETS_KEYS: `${a},,${b}` })).toMatch(/^DNSPLANE_SECRETS_KEYS: must be a comma list of keys with no empty entry/);
    expect(refusal({ DNSPLANE_SECRETS_KEYS: `${a},${randomBytes(16).toString('base64')}` })).toMatch(
      /^DNSPLANE_SECRETS_KEYS\[1\]: must be 32 random bytes in base64 .*decodes to 16 bytes$/,
    );
    expect(refusal({ DNSPLANE_SECRETS_KEYS: `${a},${b},${a}` })).toBe(
      'DNSPLANE_SECRETS_KEYS[2]: is the same key as DNSPLANE_SECRETS_KEYS[0]; list each key once',
    );
  });
});

describe("demo mode's key file", () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-secrets-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is made once (0600) and read back the same; made by several at once, all get one key', async () => {
    const made = await Promise.all([demoSecretsKey(dir), demoSecretsKey(dir), demoSecretsKey(dir)]);
    expect(made[0]).toHaveLength(32);
    expect(made.every((k) => k.equals(made[0]!))).toBe(true);
    const file = path.join(dir, SECRETS_KEY_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect((await demoSecretsKey(dir)).equals(made[0]!)).toBe(true);
  });

  it('is never replaced when unreadable: that would orphan every secret sealed with it', async () => {
    const bad = mkdtempSync(path.join(tmpdir(), 'dnsplane-secrets-bad-'));
    writeFileSync(path.join(bad, SECRETS_KEY_FILE), 'not a key\n', { mode: 0o600 });
    await expect(demoSecretsKey(bad, pino({ level: 'silent' }))).rejects.toThrow(`${path.join(bad, SECRETS_KEY_FILE)}: must be 32 random bytes in base64`);
    rmSync(bad, { recursive: true, force: true });
  });
});
