/**
 * TSIG keys (RFC 8945) as people and tools write them: their algorithm ("HMAC-SHA256", "hmac-sha256.")
 * and their name (a DNS name, unique across tenants, since a message names only its key). The
 * algorithms themselves, with their MAC lengths, are the wire format's (dns/wire/tsig.ts TSIG_WIRE).
 * Pure.
 */
import { InvalidInputError } from './errors.js';
import { isNormalizedName } from './names.js';
import { TSIG_WIRE, type TsigAlgorithm } from './wire/tsig.js';

/** Every algorithm dnsplane accepts, in the order RFC 8945 lists them. */
export const TSIG_ALGORITHMS = Object.keys(TSIG_WIRE) as readonly TsigAlgorithm[];
export const DEFAULT_TSIG_ALGORITHM: TsigAlgorithm = 'hmac-sha256';

export function isTsigAlgorithm(value: string): value is TsigAlgorithm {
  return Object.hasOwn(TSIG_WIRE, value);
}

/** A new secret is as long as the HMAC's output (what BIND's tsig-keygen makes). */
export function tsigSecretBytes(algorithm: TsigAlgorithm): number {
  return TSIG_WIRE[algorithm].macLength;
}

/** An algorithm as a person or a tool writes it ("HMAC-SHA256", "hmac-sha256."); '' gives the default. */
export function parseTsigAlgorithm(raw: string, field: string): TsigAlgorithm {
  const value = raw.trim().toLowerCase().replace(/\.$/, '');
  if (value === '') return DEFAULT_TSIG_ALGORITHM;
  if (!isTsigAlgorithm(value))
    throw new InvalidInputError(field, `must be one of ${TSIG_ALGORITHMS.join(', ')} (default ${DEFAULT_TSIG_ALGORITHM}), got ${JSON.stringify(raw)}`);
  return value;
}

/** A key name as stored: lowercase, without the trailing dot; undefined when it is not a valid one (a DNS name, `_` allowed). */
export function canonicalKeyName(raw: string): string | undefined {
  const name = raw.toLowerCase().replace(/\.$/, '');
  return isNormalizedName(name, { allowUnderscore: true }) ? name : undefined;
}

/** canonicalKeyName, or InvalidInputError naming the field and the rule. */
export function normalizeTsigKeyName(raw: string, field: string): string {
  const name = canonicalKeyName(raw.trim());
  if (name === undefined) {
    throw new InvalidInputError(
      field,
      `must be a DNS name of at most 253 characters (e.g. "cluster1.dnsplane."): labels of 1-63 characters of a-z, 0-9, "-" and "_", not starting or ending with "-"; got ${JSON.stringify(raw)}`,
    );
  }
  return name;
}
