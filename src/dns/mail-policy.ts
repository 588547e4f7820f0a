/**
 * OVH's mail-policy field types — SPF, DKIM and DMARC: records of their own in OVH's API, TXT records
 * on the wire (dns/types.ts TXT_FAMILY). Their canonical form is the text resolvers read, as for TXT
 * (quotes around it removed, dns/txt.ts), checked against what OVH's record of that type holds:
 *
 * - SPF: the text begins with the version `v=spf1` (RFC 7208 §4.5); OVH answers it quoted, as TXT.
 * - DKIM: a tag list (RFC 6376 §3.6.1) of the tags OVH's DKIM record has — v (DKIM1, first), g, h, k,
 *   n, p (the public key: required, empty when revoked), s, t —, each once; stored raw by OVH.
 * - DMARC: a tag list (RFC 7489 §6.3) of the tags OVH's DMARC record has — v (DMARC1, first,
 *   required), p (none, quarantine, reject: required), pct (0-100), rua (mailto: URIs), sp, aspf
 *   (r, s) —, each once; stored raw by OVH, and only at a name whose first label is `_dmarc` (OVH
 *   refuses it elsewhere). A policy with other tags (adkim, ruf, fo, rf, ri) is a TXT record.
 * Pure.
 */
import { InvalidInputError } from './errors.js';

interface TagRule {
  tags: readonly string[];
  version: string;
  versionRequired: boolean;
  check(tag: string, value: string): string | undefined;
}

const POLICIES = ['none', 'quarantine', 'reject'];

const DKIM: TagRule = {
  tags: ['v', 'g', 'h', 'k', 'n', 'p', 's', 't'],
  version: 'DKIM1',
  versionRequired: false,
  check(tag, value) {
    if (tag === 'p' && !/^[A-Za-z0-9+/=\s]*$/.test(value)) return 'p= (the public key) is base64';
    if (tag === 'k' && !/^[a-z0-9]+$/i.test(value)) return 'k= (the key type) is a word such as rsa or ed25519';
    return undefined;
  },
};

const DMARC: TagRule = {
  tags: ['v', 'p', 'pct', 'rua', 'sp', 'aspf'],
  version: 'DMARC1',
  versionRequired: true,
  check(tag, value) {
    if ((tag === 'p' || tag === 'sp') && !POLICIES.includes(value)) return `${tag}= is one of ${POLICIES.join(', ')}`;
    if (tag === 'pct' && !(/^\d{1,3}$/.test(value) && Number(value) <= 100)) return 'pct= is an integer from 0 to 100';
    if (tag === 'aspf' && value !== 'r' && value !== 's') return 'aspf= is r (relaxed) or s (strict)';
    if (tag === 'rua' && !value.split(',').every((u) => /^[a-z][a-z0-9+.-]*:\S+$/i.test(u.trim())))
      return 'rua= is a comma-separated list of URIs (e.g. mailto:reports@example.com)';
    return undefined;
  },
};

/** Checks a tag list against a rule; the refusal names the type, the tag and the rule. */
function checkTagList(type: 'DKIM' | 'DMARC', rule: TagRule, text: string, field: string): void {
  const fail = (why: string): never => {
    throw new InvalidInputError(field, `a ${type} target is a tag list "tag=value; …" (${why})`);
  };
  const seen = new Set<string>();
  const pieces = text.split(';').map((p) => p.trim());
  if (pieces[pieces.length - 1] === '') pieces.pop(); // a trailing ";" is allowed
  pieces.forEach((piece, i) => {
    const eq = piece.indexOf('=');
    if (eq <= 0) fail(`${JSON.stringify(piece)} is not tag=value`);
    const tag = piece.slice(0, eq).trim();
    const value = piece.slice(eq + 1).trim();
    if (!rule.tags.includes(tag)) {
      fail(
        `OVH's ${type} record takes the tags ${rule.tags.join(', ')}; ${JSON.stringify(tag)} is not one of them${type === 'DMARC' ? ' (write a TXT record for the others)' : ''}`,
      );
    }
    if (seen.has(tag)) fail(`the tag ${tag} appears twice`);
    seen.add(tag);
    if (tag === 'v' && (i !== 0 || value !== rule.version)) fail(`v=${rule.version} comes first`);
    const why = rule.check(tag, value);
    if (why) fail(why);
  });
  if (rule.versionRequired && !seen.has('v')) fail(`v=${rule.version} comes first`);
  if (!seen.has('p')) fail(type === 'DKIM' ? 'p= (the public key) is required; empty when the key is revoked' : 'p= (the policy) is required');
}

/** The canonical SPF, DKIM or DMARC target of a text already read as TXT (dns/targets.ts canonicalTxt). */
export function checkMailPolicy(type: 'SPF' | 'DKIM' | 'DMARC', text: string, field: string): string {
  if (type === 'SPF') {
    if (!/^v=spf1(\s|$)/i.test(text))
      throw new InvalidInputError(field, `an SPF target begins with the version "v=spf1" (RFC 7208 §4.5; got ${JSON.stringify(text.slice(0, 20))})`);
    return text;
  }
  checkTagList(type, type === 'DKIM' ? DKIM : DMARC, text, field);
  return text;
}

/** OVH keeps a DMARC record only at a name whose first label is `_dmarc`. */
export function checkDmarcName(dnsName: string, field: string): void {
  if (dnsName.split('.')[0] !== '_dmarc') {
    throw new InvalidInputError(field, `a DMARC record's name begins with the label _dmarc (e.g. _dmarc.example.com; got ${JSON.stringify(dnsName)})`);
  }
}
