/**
 * An OVH account's credentials as an operator hands them over (`--credentials-file FILE` or `-`,
 * AdminService's `credentials` field: never argv): the three lines `OVH_APPLICATION_KEY=…`,
 * `OVH_APPLICATION_SECRET=…`, `OVH_CONSUMER_KEY=…`, the names the OVH_* variables have. Sealed as one
 * secret (the secret and the consumer key; the application key stays an identifier in clear) under
 * the context `ovh-account:<name>`, so that sealed credentials moved to another account do not open.
 * No message here ever holds a secret's value.
 */
import { InvalidInputError } from '../../dns/errors.js';
import type { OvhCredentials } from '../../ovh/client/signed-request.js';
import type * as store from '../../store/index.js';
import type { SecretBox } from '../keys/secrets.js';

/** The field every message about the file names. */
export const CREDENTIALS_FIELD = 'credentials';

const NAMES = { OVH_APPLICATION_KEY: 'applicationKey', OVH_APPLICATION_SECRET: 'applicationSecret', OVH_CONSUMER_KEY: 'consumerKey' } as const;
type Name = keyof typeof NAMES;

/** A value OVH could have issued: letters and digits (OVH's are 16 or 32 of them), a sane length. */
const VALUE = /^[A-Za-z0-9]{8,128}$/;

/** The three credentials from the file's text; InvalidInputError naming the line or the missing variable, never a value. */
export function parseCredentialsFile(text: string, field = CREDENTIALS_FIELD): OvhCredentials {
  const found: Partial<Record<Name, string>> = {};
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const eq = line.indexOf('=');
    const key = (eq < 0 ? line : line.slice(0, eq)).trim().replace(/^export\s+/, '');
    if (!(key in NAMES)) {
      throw new InvalidInputError(
        field,
        `line ${i + 1}: must be OVH_APPLICATION_KEY=…, OVH_APPLICATION_SECRET=… or OVH_CONSUMER_KEY=…, got a line starting "${key.slice(0, 24)}"`,
      );
    }
    const name = key as Name;
    if (found[name] !== undefined) throw new InvalidInputError(`${field}: ${name}`, `is given twice (lines of the file must name each variable once)`);
    const value =
      eq < 0
        ? ''
        : line
            .slice(eq + 1)
            .trim()
            .replace(/^(["'])(.*)\1$/, '$2');
    if (!VALUE.test(value))
      throw new InvalidInputError(`${field}: ${name}`, `must be 8 to 128 letters and digits as OVH issues them (line ${i + 1}; its value is not shown)`);
    found[name] = value;
  });
  const missing = (Object.keys(NAMES) as Name[]).filter((n) => found[n] === undefined);
  if (missing.length > 0) {
    throw new InvalidInputError(
      `${field}: ${missing.join(', ')}`,
      `missing: the file holds the three lines OVH_APPLICATION_KEY=…, OVH_APPLICATION_SECRET=…, OVH_CONSUMER_KEY=… (it holds ${3 - missing.length} of them)`,
    );
  }
  return { applicationKey: found.OVH_APPLICATION_KEY!, applicationSecret: found.OVH_APPLICATION_SECRET!, consumerKey: found.OVH_CONSUMER_KEY! };
}

/** What an account's sealed secret is bound to (reseal opens it with the same). */
export function accountSecretContext(name: string): string {
  return `ovh-account:${name}`;
}

export function sealCredentials(box: SecretBox, name: string, c: OvhCredentials): store.SealedSecret {
  const plain = Buffer.from(JSON.stringify({ s: c.applicationSecret, c: c.consumerKey }), 'utf8');
  try {
    return box.seal(plain, accountSecretContext(name));
  } finally {
    plain.fill(0);
  }
}

export function openCredentials(box: SecretBox, name: string, applicationKey: string, sealed: store.SealedSecret): OvhCredentials {
  const plain = box.open(sealed, accountSecretContext(name));
  try {
    const v = JSON.parse(plain.toString('utf8')) as { s: string; c: string };
    return { applicationKey, applicationSecret: v.s, consumerKey: v.c };
  } finally {
    plain.fill(0);
  }
}
