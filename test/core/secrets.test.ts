/**
 * Secrets at rest (core/secrets.ts): AES-256-GCM round trip, a random IV per secret, every altered byte
 * refused, a secret moved to another row refused, another encryption key told as such; the key's
 * setting validated in config.ts without ever showing its value; demo mode's key file.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig, parseSecretsKey } from '../../src/config.js';
import { SecretBox, SecretUnreadableError, SecretsKeyError, keyIdOf } from '../../src/core/secrets.js';
import { demoSecretsKey, SECRETS_KEY_FILE } from '../../src/demo.js';

const key = randomBytes(32);
const box = new SecretBox(key);
const secret = randomBytes(32);

describe('SecretBox', () => {
  it('opens what it sealed; each sealing has its own IV; the key id is the first 8 bytes of the key\'s sha-256', () => {
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
    expect(() => box.open(sealed, 'tsig-key:b.dnsplane')).toThrow(
      'tsig-key:b.dnsplane: the sealed secret does not authenticate under DNSPLANE_SECRETS_KEY',
    );
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
      `tsig-key:a.dnsplane: sealed with encryption key ${other.keyIdHex}, but DNSPLANE_SECRETS_KEY is key ${box.keyIdHex}: start dnsplane with the key it was sealed with`,
    );
    expect(message).not.toContain(key.toString('base64'));
  });

  it('refuses a key that is not 32 bytes', () => {
    expect(() => new SecretBox(randomBytes(16))).toThrow('DNSPLANE_SECRETS_KEY: must be 32 random bytes in base64');
  });
});

describe('DNSPLANE_SECRETS_KEY in config.ts', () => {
  it('reads 32 bytes of base64, and refuses anything else naming the setting and the rule, never the value', () => {
    const text = key.toString('base64');
    expect(loadConfig({ DNSPLANE_SECRETS_KEY: text }).secretsKey?.equals(key)).toBe(true);
    expect(loadConfig({}).secretsKey).toBeUndefined();
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
