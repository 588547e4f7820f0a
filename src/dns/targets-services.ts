/**
 * The canonical forms of NAPTR (RFC 3403), TLSA (RFC 6698) and SSHFP (RFC 4255) targets: the fields of
 * their presentation form checked one by one, each refusal naming the field and the rule. Pure.
 *
 * | type  | canonical form                                                                            |
 * |-------|-------------------------------------------------------------------------------------------|
 * | NAPTR | `<order> <preference> "<FLAGS>" "<services>" "<regexp>" <replacement>`; flags upper case  |
 * | TLSA  | `<usage> <selector> <matching type> <hex>`, hex lower case                                |
 * | SSHFP | `<algorithm> <fingerprint type> <hex>`, hex lower case                                    |
 */
import { InvalidInputError } from './errors.js';
import { CONTROL, canonicalHex, canonicalHost, fieldsOf, parseUint, quoteString, tokens, type TargetContext } from './target-parts.js';

const NAPTR_SHAPE =
  'a NAPTR target is \'<order> <preference> "<flags>" "<services>" "<regexp>" <replacement>\' (e.g. \'100 10 "S" "SIP+D2U" "" _sip._udp.example.com\')';

/** RFC 3402 §3.2: delim ere delim substitution delim [i]; the delimiter is neither a digit, a backslash nor `i`. */
function checkRegexp(regexp: string, field: string): void {
  if (regexp === '') return;
  const d = regexp[0] as string;
  if (/[0-9\\i]/.test(d)) throw new InvalidInputError(field, `the NAPTR regexp's delimiter must not be a digit, a backslash or "i" (got ${JSON.stringify(d)})`);
  const body = regexp.endsWith(`${d}i`) ? regexp.slice(1, -2) : regexp.endsWith(d) ? regexp.slice(1, -1) : undefined;
  // Two parts: the pattern and the substitution, split by an unescaped delimiter.
  const parts = body === undefined ? [] : body.split(new RegExp(`(?<!\\\\)${d.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`));
  if (parts.length !== 2 || parts[0] === '') {
    throw new InvalidInputError(
      field,
      `the NAPTR regexp is "<delim><pattern><delim><substitution><delim>" with flag i allowed last (RFC 3402 §3.2), e.g. "!^.*$!sip:info@example.com!" (got ${JSON.stringify(regexp)})`,
    );
  }
}

export function canonicalNaptr(value: string, field: string, ctx: TargetContext): string {
  const parsed = fieldsOf(value.trim());
  if (parsed?.fields.length !== 6) throw new InvalidInputError(field, NAPTR_SHAPE);
  const [order, preference, flags, services, regexp, replacement] = parsed.fields as [string, string, string, string, string, string];
  if (parsed.quoted[0] || parsed.quoted[1] || parsed.quoted[5]) throw new InvalidInputError(field, NAPTR_SHAPE);
  const o = parseUint(order, 65535, 'the NAPTR order', field);
  const p = parseUint(preference, 65535, 'the NAPTR preference', field);
  if (!/^[A-Za-z0-9]*$/.test(flags))
    throw new InvalidInputError(field, `the NAPTR flags are letters and digits, each one flag (e.g. "S", "U", "A", "P"; got ${JSON.stringify(flags)})`);
  if (services.length > 255 || !/^[A-Za-z0-9+:._-]*$/.test(services)) {
    throw new InvalidInputError(
      field,
      `the NAPTR services are at most 255 letters, digits and "+:._-" (e.g. "SIP+D2U", "E2U+sip"; got ${JSON.stringify(services)})`,
    );
  }
  if (regexp.length > 255 || CONTROL.test(regexp)) throw new InvalidInputError(field, 'the NAPTR regexp is at most 255 characters, without control characters');
  checkRegexp(regexp, field);
  const host = canonicalHost(replacement, field, ctx, true, 'NAPTR');
  if (regexp !== '' && host !== '.') {
    throw new InvalidInputError(field, 'a NAPTR record has a regexp or a replacement, not both: with a regexp the replacement is "." (RFC 3403 §4.1)');
  }
  return `${o} ${p} ${quoteString(flags.toUpperCase())} ${quoteString(services)} ${quoteString(regexp)} ${host}`;
}

/** The hex length of each TLSA matching type and SSHFP fingerprint type that fixes one. */
const TLSA_DIGEST_HEX: Readonly<Record<number, number>> = { 1: 64, 2: 128 };
const SSHFP_DIGEST_HEX: Readonly<Record<number, number>> = { 1: 40, 2: 64 };

export function canonicalTlsa(value: string, field: string): string {
  const parts = tokens(value);
  if (parts.length < 4) {
    throw new InvalidInputError(field, 'a TLSA target is "<usage> <selector> <matching type> <hex>" (e.g. "3 1 1 0123…ef", 64 hex digits for SHA-256)');
  }
  const usage = parseUint(parts[0] as string, 3, 'the TLSA certificate usage (0 PKIX-TA, 1 PKIX-EE, 2 DANE-TA, 3 DANE-EE)', field);
  const selector = parseUint(parts[1] as string, 1, 'the TLSA selector (0 full certificate, 1 public key)', field);
  const mtype = parseUint(parts[2] as string, 2, 'the TLSA matching type (0 exact, 1 SHA-256, 2 SHA-512)', field);
  const hex = canonicalHex(parts.slice(3), 'the TLSA certificate association data', field);
  const want = TLSA_DIGEST_HEX[mtype];
  if (want !== undefined && hex.length !== want) {
    throw new InvalidInputError(
      field,
      `with matching type ${mtype} (${mtype === 1 ? 'SHA-256' : 'SHA-512'}) the TLSA data is ${want} hex digits (got ${hex.length})`,
    );
  }
  return `${usage} ${selector} ${mtype} ${hex}`;
}

export function canonicalSshfp(value: string, field: string): string {
  const parts = tokens(value);
  if (parts.length < 3) {
    throw new InvalidInputError(field, 'an SSHFP target is "<algorithm> <fingerprint type> <hex>" (e.g. "4 2 0123…ef", 64 hex digits for SHA-256)');
  }
  const algorithm = parseUint(parts[0] as string, 255, 'the SSHFP algorithm', field);
  if (![1, 2, 3, 4, 6].includes(algorithm)) {
    throw new InvalidInputError(field, `the SSHFP algorithm is 1 (RSA), 2 (DSA), 3 (ECDSA), 4 (Ed25519) or 6 (Ed448) (got ${algorithm})`);
  }
  const fptype = parseUint(parts[1] as string, 255, 'the SSHFP fingerprint type', field);
  const want = SSHFP_DIGEST_HEX[fptype];
  if (want === undefined) throw new InvalidInputError(field, `the SSHFP fingerprint type is 1 (SHA-1) or 2 (SHA-256) (got ${fptype})`);
  const hex = canonicalHex(parts.slice(2), 'the SSHFP fingerprint', field);
  if (hex.length !== want) {
    throw new InvalidInputError(
      field,
      `with fingerprint type ${fptype} (${fptype === 1 ? 'SHA-1' : 'SHA-256'}) the SSHFP fingerprint is ${want} hex digits (got ${hex.length})`,
    );
  }
  return `${algorithm} ${fptype} ${hex}`;
}
