/**
 * An OVH account's credentials file (core/accounts/credentials.ts): the three OVH_* lines read, every
 * mistake named by its field and line, never by its value; sealed bound to the account's name.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { accountCommand } from '../../../src/cli/account.js';
import { openCredentials, parseCredentialsFile, sealCredentials } from '../../../src/core/accounts/credentials.js';
import { SecretBox } from '../../../src/core/keys/secrets.js';
import { InvalidInputError } from '../../../src/dns/errors.js';
import { capturedIo } from '../../helpers/cli-io.js';

const AK = 'abcdEFGH12345678';
const AS = 'S'.repeat(32);
const CK = 'C'.repeat(32);

function refusal(text: string): InvalidInputError {
  try {
    parseCredentialsFile(text);
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidInputError);
    return e as InvalidInputError;
  }
  throw new Error('accepted');
}

describe('credentials file', () => {
  it('reads the three lines, with comments, blank lines, export and quotes', () => {
    expect(parseCredentialsFile(`# staging\nexport OVH_APPLICATION_KEY=${AK}\n\nOVH_APPLICATION_SECRET="${AS}"\r\nOVH_CONSUMER_KEY='${CK}'\n`)).toEqual({
      applicationKey: AK,
      applicationSecret: AS,
      consumerKey: CK,
    });
  });

  it('refuses half a file, a variable twice, an unknown line or a malformed value, naming the field and never the value', () => {
    expect(refusal(`OVH_APPLICATION_KEY=${AK}\nOVH_APPLICATION_SECRET=${AS}\n`).message).toBe(
      'credentials: OVH_CONSUMER_KEY: missing: the file holds the three lines OVH_APPLICATION_KEY=…, OVH_APPLICATION_SECRET=…, OVH_CONSUMER_KEY=… (it holds 2 of them)',
    );
    expect(refusal('').field).toBe('credentials: OVH_APPLICATION_KEY, OVH_APPLICATION_SECRET, OVH_CONSUMER_KEY');
    expect(refusal(`OVH_APPLICATION_KEY=${AK}\nOVH_APPLICATION_KEY=${AK}\n`).field).toBe('credentials: OVH_APPLICATION_KEY');
    const unknown = refusal(`OVH_ENDPOINT=ovh-eu\nOVH_APPLICATION_KEY=${AK}`);
    expect(unknown.message).toMatch(/^credentials: line 1: must be OVH_APPLICATION_KEY=…/);
    const bad = refusal(`OVH_APPLICATION_KEY=${AK}\nOVH_APPLICATION_SECRET=${AS}!\nOVH_CONSUMER_KEY=${CK}`);
    expect(bad.message).toMatch(/^credentials: OVH_APPLICATION_SECRET: must be 8 to 128 letters and digits .*line 2/);
    expect(bad.message).not.toContain(AS);
  });

  it('seals the secret and consumer key bound to the account: they do not open as another account', () => {
    const box = new SecretBox(randomBytes(32));
    const sealed = sealCredentials(box, 'staging', { applicationKey: AK, applicationSecret: AS, consumerKey: CK });
    expect(sealed.ciphertext.toString('latin1')).not.toContain(CK);
    expect(openCredentials(box, 'staging', AK, sealed)).toEqual({ applicationKey: AK, applicationSecret: AS, consumerKey: CK });
    expect(() => openCredentials(box, 'prod', AK, sealed)).toThrow(/ovh-account:prod: the sealed secret does not authenticate/);
  });
});

describe('dnsplane account', () => {
  const io = () => capturedIo({ DNSPLANE_TOKEN: 'dnsp_x', DNSPLANE_SERVER: 'http://127.0.0.1:9' });
  const refused = (args: string[]) =>
    accountCommand.run(args, io()).then(
      () => '',
      (e: Error) => e.message,
    );

  it('refuses arguments before calling anyone, naming the flag', async () => {
    expect(await refused([])).toMatch(/^subcommand: must be one of add, list, rotate, disable, enable, remove, got none/);
    expect(await refused(['add'])).toBe("NAME: the account's name is required: dnsplane account add NAME");
    expect(await refused(['add', 'x', '--credentials-file', '/nonexistent'])).toMatch(/^--endpoint: is required/);
    expect(await refused(['add', 'x', '--endpoint', 'ovh-eu'])).toMatch(/^--credentials-file: is required/);
    expect(await refused(['add', 'x', '--endpoint', 'ovh-eu', '--rate', 'fast', '--credentials-file', '-'])).toMatch(/^--rate: must be a whole number/);
    expect(await refused(['disable', 'x', '--rate', '3'])).toMatch(/^--rate: belongs to "dnsplane account add", not "dnsplane account disable"/);
    expect(await refused(['list', 'x'])).toBe('arguments: unexpected "x"');
  });
});
