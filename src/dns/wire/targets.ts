/**
 * Between record data on the wire and dnsplane's record model (dns/types.ts RecordType, the canonical
 * targets of dns/targets.ts): what an UPDATE's record means as a target, and what a cached target is
 * on the wire. Pure.
 *
 * TXT: dnsplane keeps a TXT record as one text; on the wire it is character-strings of at most 255
 * bytes. Read, the strings are joined (UTF-8); written, the text's UTF-8 bytes are cut into 255-byte
 * strings (never inside a character). A text dnsplane cannot hold as it came (control characters,
 * bytes that are not UTF-8, a value that begins and ends with a double quote, which dnsplane's
 * TXT model reads as quoting) is refused, never changed silently.
 */
import { InvalidInputError } from '../errors.js';
import { formatLoc, parseLoc } from '../loc.js';
import { fieldsOf, quoteString } from '../target-parts.js';
import { canonicalTarget } from '../targets.js';
import { isRecordType, publishedType, type RecordType } from '../types.js';
import { TYPE, typeName } from './codes.js';
import type { RecordData } from './rdata.js';

/** The record type of a wire type, when dnsplane manages that type. */
export function recordTypeOf(type: number): RecordType | undefined {
  const name = typeName(type);
  return isRecordType(name) ? name : undefined;
}

/** The wire type of a dnsplane record type: OVH's SPF, DKIM and DMARC are TXT records on the wire. */
export function wireTypeOf(type: RecordType): number {
  return TYPE[publishedType(type) as keyof typeof TYPE];
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** `a.example` as a host target; the root as `.`. */
function host(name: string): string {
  return name === '' ? '.' : name;
}

/**
 * The canonical target of wire record data (InvalidInputError naming `field` when dnsplane cannot hold
 * it: a host name that is not one, a TXT value it would change, a CAA tag it does not know).
 */
export function targetOfData(data: RecordData, field: string): { type: RecordType; target: string } {
  switch (data.kind) {
    case 'A':
    case 'AAAA':
      return { type: data.kind, target: canonicalTarget(data.kind, data.address, field) };
    case 'NS':
    case 'CNAME':
    case 'PTR':
    case 'DNAME':
      return { type: data.kind, target: canonicalTarget(data.kind, host(data.host), field) };
    case 'NAPTR':
      return {
        type: 'NAPTR',
        target: canonicalTarget(
          'NAPTR',
          `${data.order} ${data.preference} ${quoteString(data.flags)} ${quoteString(data.services)} ${quoteString(data.regexp)} ${host(data.replacement)}`,
          field,
        ),
      };
    case 'TLSA':
      return { type: 'TLSA', target: canonicalTarget('TLSA', `${data.usage} ${data.selector} ${data.matchingType} ${data.data.toString('hex')}`, field) };
    case 'SSHFP':
      return { type: 'SSHFP', target: canonicalTarget('SSHFP', `${data.algorithm} ${data.fingerprintType} ${data.fingerprint.toString('hex')}`, field) };
    case 'LOC':
      return { type: 'LOC', target: canonicalTarget('LOC', formatLoc(data), field) };
    case 'MX':
      return { type: 'MX', target: canonicalTarget('MX', `${data.preference} ${host(data.exchange)}`, field) };
    case 'SRV':
      return { type: 'SRV', target: canonicalTarget('SRV', `${data.priority} ${data.weight} ${data.port} ${host(data.target)}`, field) };
    case 'TXT': {
      let text: string;
      try {
        text = utf8.decode(Buffer.concat(data.strings));
      } catch {
        throw new InvalidInputError(field, 'a TXT value must be UTF-8 text');
      }
      const target = canonicalTarget('TXT', text, field);
      if (target !== text) throw new InvalidInputError(field, 'a TXT value that begins and ends with a double quote cannot be stored as it is');
      return { type: 'TXT', target };
    }
    case 'CAA': {
      let value: string;
      try {
        value = utf8.decode(data.value);
      } catch {
        throw new InvalidInputError(field, 'a CAA value must be UTF-8 text');
      }
      return { type: 'CAA', target: canonicalTarget('CAA', `${data.flags} ${data.tag} "${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`, field) };
    }
    default:
      throw new InvalidInputError(field, `${data.kind} records are not managed by dnsplane`);
  }
}

/** Cuts UTF-8 text into character-strings of at most 255 bytes, never inside a character. */
export function txtStrings(text: string): Buffer[] {
  const out: Buffer[] = [];
  let current: Buffer[] = [];
  let size = 0;
  for (const ch of text) {
    const b = Buffer.from(ch, 'utf8');
    if (size + b.length > 255) {
      out.push(Buffer.concat(current));
      current = [];
      size = 0;
    }
    current.push(b);
    size += b.length;
  }
  out.push(Buffer.concat(current));
  return out;
}

/** The wire data of a canonical target (as dns/targets.ts gives it) of a type dnsplane manages; SPF, DKIM and DMARC as TXT. */
export function dataOfTarget(type: RecordType, target: string): RecordData {
  const fields = target.split(' ');
  const name = (h: string) => (h === '.' ? '' : h);
  switch (type) {
    case 'A':
    case 'AAAA':
      return { kind: type, address: target };
    case 'CNAME':
    case 'NS':
    case 'PTR':
    case 'DNAME':
      return { kind: type, host: name(target) };
    case 'NAPTR': {
      const f = fieldsOf(target)?.fields ?? [];
      return {
        kind: 'NAPTR',
        order: Number(f[0]),
        preference: Number(f[1]),
        flags: f[2] ?? '',
        services: f[3] ?? '',
        regexp: f[4] ?? '',
        replacement: name(f[5] ?? ''),
      };
    }
    case 'TLSA':
      return {
        kind: 'TLSA',
        usage: Number(fields[0]),
        selector: Number(fields[1]),
        matchingType: Number(fields[2]),
        data: Buffer.from(fields[3] ?? '', 'hex'),
      };
    case 'SSHFP':
      return { kind: 'SSHFP', algorithm: Number(fields[0]), fingerprintType: Number(fields[1]), fingerprint: Buffer.from(fields[2] ?? '', 'hex') };
    case 'LOC':
      return { kind: 'LOC', ...parseLoc(target, 'target') };
    case 'MX':
      return { kind: 'MX', preference: Number(fields[0]), exchange: name(fields[1] ?? '') };
    case 'SRV':
      return { kind: 'SRV', priority: Number(fields[0]), weight: Number(fields[1]), port: Number(fields[2]), target: name(fields[3] ?? '') };
    case 'TXT':
    case 'SPF':
    case 'DKIM':
    case 'DMARC':
      return { kind: 'TXT', strings: txtStrings(target) };
    case 'CAA': {
      const m = /^(\d+) (\S+) "((?:[^"\\]|\\.)*)"$/.exec(target);
      if (!m) throw new InvalidInputError('target', `${JSON.stringify(target)} is not a canonical CAA target`);
      return { kind: 'CAA', flags: Number(m[1]), tag: m[2]!, value: Buffer.from(m[3]!.replace(/\\(.)/g, '$1'), 'utf8') };
    }
  }
}
