/**
 * Record data of the types dnsplane manages (A, AAAA, NS, CNAME, PTR, MX, SRV, TXT, CAA, NAPTR, TLSA,
 * SSHFP, LOC, DNAME; OVH's SPF, DKIM and DMARC are TXT on the wire), the SOA it serves and the TSIG
 * record it signs with: read from a message (names decompressed) and written (names compressed where
 * RFC 3597 §4 allows: NS, CNAME, PTR, SOA, MX; never SRV's target, NAPTR's replacement, DNAME's
 * target nor TSIG's algorithm). Any other type is kept as its raw bytes and written back as it came.
 * Every length is checked: record data must be exactly as long as its RDLENGTH says.
 */
import type { LocValue } from '../loc.js';
import { parseIpv6 } from '../targets.js';
import { WireFormatError } from './errors.js';
import { TYPE } from './codes.js';
import { readName } from './names.js';
import type { Writer } from './writer.js';

export type RecordData =
  | { kind: 'A'; address: string }
  | { kind: 'AAAA'; address: string }
  | { kind: 'NS' | 'CNAME' | 'PTR'; host: string }
  | { kind: 'MX'; preference: number; exchange: string }
  | { kind: 'SRV'; priority: number; weight: number; port: number; target: string }
  /** Character-strings as they are on the wire (bytes, at most 255 each). */
  | { kind: 'TXT'; strings: Buffer[] }
  | { kind: 'CAA'; flags: number; tag: string; value: Buffer }
  | { kind: 'DNAME'; host: string }
  /** flags, services and regexp: the character strings as UTF-8 text. */
  | { kind: 'NAPTR'; order: number; preference: number; flags: string; services: string; regexp: string; replacement: string }
  | { kind: 'TLSA'; usage: number; selector: number; matchingType: number; data: Buffer }
  | { kind: 'SSHFP'; algorithm: number; fingerprintType: number; fingerprint: Buffer }
  | ({ kind: 'LOC' } & LocValue)
  | { kind: 'SOA'; mname: string; rname: string; serial: number; refresh: number; retry: number; expire: number; minimum: number }
  | TsigData;

/** A TSIG record's data (RFC 8945 §4.2). */
export interface TsigData {
  kind: 'TSIG';
  algorithm: string;
  /** Seconds since the epoch (48 bits). */
  timeSigned: number;
  fudge: number;
  mac: Buffer;
  originalId: number;
  error: number;
  otherData: Buffer;
}

const KIND_OF_TYPE = new Map<number, RecordData['kind']>([
  [TYPE.A, 'A'],
  [TYPE.AAAA, 'AAAA'],
  [TYPE.NS, 'NS'],
  [TYPE.CNAME, 'CNAME'],
  [TYPE.PTR, 'PTR'],
  [TYPE.MX, 'MX'],
  [TYPE.SRV, 'SRV'],
  [TYPE.TXT, 'TXT'],
  [TYPE.CAA, 'CAA'],
  [TYPE.DNAME, 'DNAME'],
  [TYPE.NAPTR, 'NAPTR'],
  [TYPE.TLSA, 'TLSA'],
  [TYPE.SSHFP, 'SSHFP'],
  [TYPE.LOC, 'LOC'],
  [TYPE.SOA, 'SOA'],
  [TYPE.TSIG, 'TSIG'],
]);

/** Whether the codec reads this type's data (others are kept raw). */
export function knownType(type: number): boolean {
  return KIND_OF_TYPE.has(type);
}

/** Reads `length` bytes of record data of `type` at `offset`; undefined for a type kept raw. */
export function readRecordData(message: Uint8Array, offset: number, length: number, type: number): RecordData | undefined {
  const kind = KIND_OF_TYPE.get(type);
  if (kind === undefined) return undefined;
  const end = offset + length;
  const r = new Cursor(message, offset, end, kind);
  let data: RecordData;
  switch (kind) {
    case 'A':
      data = { kind, address: Array.from(r.take(4)).join('.') };
      break;
    case 'AAAA': {
      const b = r.take(16);
      const groups: string[] = [];
      for (let i = 0; i < 16; i += 2) groups.push(((b[i]! << 8) | b[i + 1]!).toString(16));
      data = { kind, address: groups.join(':') };
      break;
    }
    case 'NS':
    case 'CNAME':
    case 'PTR':
      data = { kind, host: r.name() };
      break;
    case 'MX':
      data = { kind, preference: r.u16(), exchange: r.name() };
      break;
    case 'SRV':
      data = { kind, priority: r.u16(), weight: r.u16(), port: r.u16(), target: r.name() };
      break;
    case 'TXT': {
      const strings: Buffer[] = [];
      while (r.pos < end) strings.push(Buffer.from(r.take(r.u8())));
      if (strings.length === 0) throw new WireFormatError('TXT record data holds no character-string');
      data = { kind, strings };
      break;
    }
    case 'CAA': {
      const flags = r.u8();
      const tagLength = r.u8();
      if (tagLength === 0) throw new WireFormatError('CAA record data: empty tag');
      const tag = Buffer.from(r.take(tagLength)).toString('latin1');
      data = { kind, flags, tag, value: Buffer.from(r.take(end - r.pos)) };
      break;
    }
    case 'DNAME':
      data = { kind, host: r.name() };
      break;
    case 'NAPTR':
      data = { kind, order: r.u16(), preference: r.u16(), flags: r.text(), services: r.text(), regexp: r.text(), replacement: r.name() };
      break;
    case 'TLSA':
      data = { kind, usage: r.u8(), selector: r.u8(), matchingType: r.u8(), data: Buffer.from(r.take(end - r.pos)) };
      break;
    case 'SSHFP':
      data = { kind, algorithm: r.u8(), fingerprintType: r.u8(), fingerprint: Buffer.from(r.take(end - r.pos)) };
      break;
    case 'LOC': {
      if (r.u8() !== 0) throw new WireFormatError('LOC record data: only version 0 is known');
      data = { kind, size: r.u8(), horizontal: r.u8(), vertical: r.u8(), latitude: r.u32(), longitude: r.u32(), altitude: r.u32() };
      break;
    }
    case 'SOA':
      data = { kind, mname: r.name(), rname: r.name(), serial: r.u32(), refresh: r.u32(), retry: r.u32(), expire: r.u32(), minimum: r.u32() };
      break;
    case 'TSIG': {
      const algorithm = r.name();
      const timeSigned = r.u16() * 2 ** 32 + r.u32();
      const fudge = r.u16();
      const mac = Buffer.from(r.take(r.u16()));
      const originalId = r.u16();
      const error = r.u16();
      const otherData = Buffer.from(r.take(r.u16()));
      data = { kind, algorithm, timeSigned, fudge, mac, originalId, error, otherData };
      break;
    }
  }
  if (r.pos !== end) throw new WireFormatError(`${kind} record data: ${end - r.pos} byte(s) left over`);
  return data;
}

/** A bounded reader over one record's data. */
class Cursor {
  constructor(
    private readonly message: Uint8Array,
    public pos: number,
    private readonly end: number,
    private readonly kind: string,
  ) {}

  take(n: number): Uint8Array {
    if (this.pos + n > this.end) throw new WireFormatError(`${this.kind} record data is too short`);
    const out = this.message.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  u8(): number {
    return this.take(1)[0]!;
  }

  u16(): number {
    const b = this.take(2);
    return (b[0]! << 8) | b[1]!;
  }

  u32(): number {
    const b = this.take(4);
    return ((b[0]! << 24) >>> 0) + ((b[1]! << 16) | (b[2]! << 8) | b[3]!);
  }

  /** One character string (a length byte, then the bytes), as UTF-8 text. */
  text(): string {
    return Buffer.from(this.take(this.u8())).toString('utf8');
  }

  name(): string {
    if (this.pos >= this.end) throw new WireFormatError(`${this.kind} record data is too short`);
    const { name, next } = readName(this.message, this.pos);
    if (next > this.end) throw new WireFormatError(`${this.kind} record data: a name runs past its end`);
    this.pos = next;
    return name;
  }
}

/** Writes record data (without its length); names compressed where the type allows. */
export function writeRecordData(w: Writer, data: RecordData): void {
  switch (data.kind) {
    case 'A': {
      const parts = data.address.split('.').map(Number);
      if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255))
        throw new WireFormatError(`A: ${JSON.stringify(data.address)} is not an IPv4 address`);
      w.bytes(Uint8Array.from(parts));
      return;
    }
    case 'AAAA': {
      const groups = parseIpv6(data.address);
      if (!groups) throw new WireFormatError(`AAAA: ${JSON.stringify(data.address)} is not an IPv6 address`);
      for (const g of groups) w.u16(g);
      return;
    }
    case 'NS':
    case 'CNAME':
    case 'PTR':
      w.name(data.host);
      return;
    case 'MX':
      w.u16(data.preference);
      w.name(data.exchange);
      return;
    case 'SRV':
      w.u16(data.priority);
      w.u16(data.weight);
      w.u16(data.port);
      w.name(data.target, false);
      return;
    case 'TXT':
      for (const s of data.strings) {
        if (s.length > 255) throw new WireFormatError('TXT: a character-string is longer than 255 bytes');
        w.u8(s.length);
        w.bytes(s);
      }
      return;
    case 'CAA': {
      const tag = Buffer.from(data.tag, 'latin1');
      if (tag.length === 0 || tag.length > 255) throw new WireFormatError('CAA: the tag must be 1-255 bytes');
      w.u8(data.flags);
      w.u8(tag.length);
      w.bytes(tag);
      w.bytes(data.value);
      return;
    }
    case 'DNAME':
      w.name(data.host, false);
      return;
    case 'NAPTR':
      w.u16(data.order);
      w.u16(data.preference);
      for (const text of [data.flags, data.services, data.regexp]) {
        const b = Buffer.from(text, 'utf8');
        if (b.length > 255) throw new WireFormatError('NAPTR: a character-string is longer than 255 bytes');
        w.u8(b.length);
        w.bytes(b);
      }
      w.name(data.replacement, false);
      return;
    case 'TLSA':
      w.u8(data.usage);
      w.u8(data.selector);
      w.u8(data.matchingType);
      w.bytes(data.data);
      return;
    case 'SSHFP':
      w.u8(data.algorithm);
      w.u8(data.fingerprintType);
      w.bytes(data.fingerprint);
      return;
    case 'LOC':
      w.u8(0);
      w.u8(data.size);
      w.u8(data.horizontal);
      w.u8(data.vertical);
      w.u32(data.latitude);
      w.u32(data.longitude);
      w.u32(data.altitude);
      return;
    case 'SOA':
      w.name(data.mname);
      w.name(data.rname);
      for (const v of [data.serial, data.refresh, data.retry, data.expire, data.minimum]) w.u32(v);
      return;
    case 'TSIG':
      w.name(data.algorithm, false);
      w.u48(data.timeSigned);
      w.u16(data.fudge);
      w.u16(data.mac.length);
      w.bytes(data.mac);
      w.u16(data.originalId);
      w.u16(data.error);
      w.u16(data.otherData.length);
      w.bytes(data.otherData);
      return;
  }
}

/** The wire type number of record data. */
export function typeOfData(data: RecordData): number {
  return TYPE[data.kind];
}
