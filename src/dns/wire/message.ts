/**
 * DNS messages (RFC 1035 §4.1), queries and UPDATEs alike: parse bytes into a Message and encode a
 * Message into bytes. An UPDATE (RFC 2136 §2) uses the same four sections under other names: Zone
 * (questions), Prerequisite (answers), Update (authorities), Additional; `updateSections` gives them
 * those names.
 *
 * Parsing is strict and bounded: every count and length is checked against the bytes, names are read
 * with loop-safe decompression (names.ts), at most MAX_RECORDS records, nothing may follow the last
 * record, at most one OPT (EDNS, RFC 6891 §6.1.1) and at most one TSIG, which must be the very last
 * record (RFC 8945 §5.1). Any breach is a WireFormatError (FORMERR). A record of a type kept raw is
 * kept with its bytes; a record with RDLENGTH 0 (UPDATE's deletions and prerequisites) has no data.
 */
import { CLASS, TYPE } from './codes.js';
import { WireFormatError } from './errors.js';
import { readName } from './names.js';
import { readRecordData, writeRecordData, type RecordData, type TsigData } from './rdata.js';
import { Writer } from './writer.js';

/** A DNS message is at most 65,535 bytes (the TCP length prefix). */
export const MAX_MESSAGE_BYTES = 0xffff;
/** Records (all sections) one message may carry; a 64 KiB message holds at most ~5,900 anyway. */
export const MAX_RECORDS = 4096;

export interface Header {
  id: number;
  /** A response. */
  qr: boolean;
  opcode: number;
  aa: boolean;
  tc: boolean;
  rd: boolean;
  ra: boolean;
  /** The AD and CD bits and the zero bit, as sent (3 bits). */
  z: number;
  /** The 4-bit RCODE of the header. */
  rcode: number;
}

export interface Question {
  name: string;
  type: number;
  class: number;
}

export interface ResourceRecord {
  name: string;
  type: number;
  class: number;
  ttl: number;
  /** The record's data, read; absent for RDLENGTH 0 and for types kept raw (then `raw` holds it). */
  data?: RecordData;
  /** The bytes of the data of a type kept raw (as received; written back as is). */
  raw?: Buffer;
}

export interface Message {
  header: Header;
  questions: Question[];
  answers: ResourceRecord[];
  authorities: ResourceRecord[];
  additionals: ResourceRecord[];
}

/** What parsing learned beyond the sections: where the TSIG record starts, and the EDNS record. */
export interface Parsed {
  message: Message;
  /** The TSIG record (the last of the additional section) and the byte offset where it starts. */
  tsig?: { record: ResourceRecord & { data: TsigData }; offset: number };
  /** The OPT record (EDNS), if any; its class is the requester's UDP payload size. */
  opt?: ResourceRecord;
}

/** The sections of an UPDATE message by their RFC 2136 names. */
export function updateSections(m: Message): { zone: Question[]; prerequisites: ResourceRecord[]; updates: ResourceRecord[]; additionals: ResourceRecord[] } {
  return { zone: m.questions, prerequisites: m.answers, updates: m.authorities, additionals: m.additionals };
}

/** Reads the header's id and flags, when at least 12 bytes are there. */
export function readHeader(bytes: Uint8Array): Header | undefined {
  if (bytes.length < 12) return undefined;
  const flags = (bytes[2]! << 8) | bytes[3]!;
  return {
    id: (bytes[0]! << 8) | bytes[1]!,
    qr: (flags & 0x8000) !== 0,
    opcode: (flags >> 11) & 0xf,
    aa: (flags & 0x0400) !== 0,
    tc: (flags & 0x0200) !== 0,
    rd: (flags & 0x0100) !== 0,
    ra: (flags & 0x0080) !== 0,
    z: (flags >> 4) & 0x7,
    rcode: flags & 0xf,
  };
}

/** Parses a whole message. Throws WireFormatError (FORMERR) on anything malformed. */
export function parseMessage(bytes: Uint8Array): Parsed {
  if (bytes.length > MAX_MESSAGE_BYTES) throw new WireFormatError(`the message is longer than ${MAX_MESSAGE_BYTES} bytes`);
  const header = readHeader(bytes);
  if (!header) throw new WireFormatError('the message is shorter than its 12-byte header');
  const counts = [4, 6, 8, 10].map((at) => (bytes[at]! << 8) | bytes[at + 1]!) as [number, number, number, number];
  const total = counts[0] + counts[1] + counts[2] + counts[3];
  if (total > MAX_RECORDS) throw new WireFormatError(`the message claims ${total} records and questions; at most ${MAX_RECORDS}`);
  // Each question takes at least 5 bytes, each record at least 11: counts the bytes cannot hold are lies.
  if (12 + counts[0] * 5 + (total - counts[0]) * 11 > bytes.length) throw new WireFormatError('the section counts claim more than the message holds');

  let pos = 12;
  const u16 = (): number => {
    if (pos + 2 > bytes.length) throw new WireFormatError(`the message ends inside a field at offset ${pos}`);
    const v = (bytes[pos]! << 8) | bytes[pos + 1]!;
    pos += 2;
    return v;
  };
  const name = (): string => {
    const r = readName(bytes, pos);
    pos = r.next;
    return r.name;
  };
  const questions: Question[] = [];
  for (let i = 0; i < counts[0]; i++) questions.push({ name: name(), type: u16(), class: u16() });

  const sections: ResourceRecord[][] = [[], [], []];
  let tsig: Parsed['tsig'];
  let opt: ResourceRecord | undefined;
  for (let s = 0; s < 3; s++) {
    for (let i = 0; i < counts[s + 1]!; i++) {
      if (tsig) throw new WireFormatError('a TSIG record must be the last record of the message');
      const start = pos;
      const rrName = name();
      const type = u16();
      const cls = u16();
      const ttl = u16() * 65536 + u16();
      const length = u16();
      if (pos + length > bytes.length) throw new WireFormatError(`a record's data runs past the end of the message (offset ${pos}, ${length} bytes)`);
      const rr: ResourceRecord = { name: rrName, type, class: cls, ttl };
      if (length > 0) {
        const data = readRecordData(bytes, pos, length, type);
        if (data) rr.data = data;
        else rr.raw = Buffer.from(bytes.subarray(pos, pos + length));
      }
      pos += length;
      if (type === TYPE.TSIG) {
        if (s !== 2) throw new WireFormatError('a TSIG record must be in the additional section');
        if (cls !== CLASS.ANY || ttl !== 0 || rr.data?.kind !== 'TSIG') throw new WireFormatError('a TSIG record must have class ANY, TTL 0 and TSIG data');
        tsig = { record: rr as ResourceRecord & { data: TsigData }, offset: start };
      } else if (type === TYPE.OPT) {
        if (s !== 2 || opt || rrName !== '') throw new WireFormatError('at most one OPT record, owned by the root, in the additional section');
        opt = rr;
      }
      sections[s]!.push(rr);
    }
  }
  if (pos !== bytes.length) throw new WireFormatError(`${bytes.length - pos} byte(s) follow the last record`);
  const message: Message = { header, questions, answers: sections[0]!, authorities: sections[1]!, additionals: sections[2]! };
  return { message, ...(tsig ? { tsig } : {}), ...(opt ? { opt } : {}) };
}

function flagsOf(h: Header): number {
  return (
    (h.qr ? 0x8000 : 0) |
    ((h.opcode & 0xf) << 11) |
    (h.aa ? 0x0400 : 0) |
    (h.tc ? 0x0200 : 0) |
    (h.rd ? 0x0100 : 0) |
    (h.ra ? 0x0080 : 0) |
    ((h.z & 0x7) << 4) |
    (h.rcode & 0xf)
  );
}

/** Writes the header with the given section counts. */
export function writeHeader(w: Writer, h: Header, counts: readonly [number, number, number, number]): void {
  w.u16(h.id);
  w.u16(flagsOf(h));
  for (const c of counts) w.u16(c);
}

/** Writes one record (owner name compressed, data compressed where its type allows). */
export function writeRecord(w: Writer, rr: ResourceRecord): void {
  w.name(rr.name);
  w.u16(rr.type);
  w.u16(rr.class);
  w.u32(rr.ttl);
  const lengthAt = w.pos;
  w.u16(0);
  const start = w.pos;
  if (rr.data) writeRecordData(w, rr.data);
  else if (rr.raw) w.bytes(rr.raw);
  w.patch16(lengthAt, w.pos - start);
}

/**
 * Encodes a message within `limit` bytes (MessageTooLargeError beyond). A TSIG record, if any, is
 * written as given; signing is tsig.ts's (it appends the record to an encoded message).
 */
export function encodeMessage(m: Message, limit = MAX_MESSAGE_BYTES): Buffer {
  const w = new Writer(limit);
  writeHeader(w, m.header, [m.questions.length, m.answers.length, m.authorities.length, m.additionals.length]);
  for (const q of m.questions) {
    w.name(q.name);
    w.u16(q.type);
    w.u16(q.class);
  }
  for (const rr of m.answers) writeRecord(w, rr);
  for (const rr of m.authorities) writeRecord(w, rr);
  for (const rr of m.additionals) writeRecord(w, rr);
  return w.done();
}

/** A response header to `request`: same id and opcode, QR set, RD copied, the rest as given. */
export function responseHeader(request: Header, rcode: number, opts: { aa?: boolean; tc?: boolean } = {}): Header {
  return { id: request.id, qr: true, opcode: request.opcode, aa: opts.aa ?? false, tc: opts.tc ?? false, rd: request.rd, ra: false, z: 0, rcode };
}

/** An OPT record (EDNS 0) advertising `payload` bytes over UDP. */
export function optRecord(payload: number): ResourceRecord {
  return { name: '', type: TYPE.OPT, class: payload, ttl: 0, raw: Buffer.alloc(0) };
}
