/**
 * TSIG (RFC 8945): signing and verifying DNS messages with a shared secret, node:crypto's HMAC.
 *
 * What a MAC covers (§4.3):
 * - a request: the message as sent without its TSIG record (the header's id replaced by the TSIG's
 *   Original ID, ARCOUNT one less), then the TSIG variables: key name and algorithm name in canonical
 *   wire form (uncompressed, lowercase), class ANY, TTL 0, time signed (48 bits), fudge, error,
 *   other length and other data;
 * - a response: the request's MAC (2-byte length first), then the same as a request;
 * - the second and later messages of a multi-message answer (AXFR, §5.3.1): the previous message's
 *   MAC (length first), this message without its TSIG, then only the timers (time signed, fudge).
 *
 * The MAC is checked before the time (§5.2): an unknown key or algorithm is BADKEY, a wrong MAC
 * BADSIG (both answered unsigned, with an empty MAC), a time outside the fudge BADTIME (answered
 * signed, with the request's time signed and the server's time in other data, §5.2.3). A MAC shorter
 * than the algorithm's is refused: FORMERR below the floor of §5.2.2.1, BADTRUNC above it (dnsplane
 * signs and requires full-length MACs).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { CLASS, TSIG_ERROR, TYPE } from './codes.js';
import { foldCase, nameWire } from './names.js';
import type { Parsed, ResourceRecord } from './message.js';
import type { TsigData } from './rdata.js';
import { writeRecordData } from './rdata.js';
import { Writer } from './writer.js';

export type TsigAlgorithm = 'hmac-md5' | 'hmac-sha1' | 'hmac-sha224' | 'hmac-sha256' | 'hmac-sha384' | 'hmac-sha512';

/** Each algorithm on the wire: its name there (RFC 8945 §6), node:crypto's hash, the MAC's length. */
export const TSIG_WIRE: Readonly<Record<TsigAlgorithm, { wireName: string; hash: string; macLength: number }>> = {
  'hmac-md5': { wireName: 'hmac-md5.sig-alg.reg.int', hash: 'md5', macLength: 16 },
  'hmac-sha1': { wireName: 'hmac-sha1', hash: 'sha1', macLength: 20 },
  'hmac-sha224': { wireName: 'hmac-sha224', hash: 'sha224', macLength: 28 },
  'hmac-sha256': { wireName: 'hmac-sha256', hash: 'sha256', macLength: 32 },
  'hmac-sha384': { wireName: 'hmac-sha384', hash: 'sha384', macLength: 48 },
  'hmac-sha512': { wireName: 'hmac-sha512', hash: 'sha512', macLength: 64 },
};

/** Everyone sends 300 s (RFC 8945 §10 recommends it). */
export const DEFAULT_FUDGE = 300;

/** The algorithm a TSIG record names (case-insensitive, final dot or not); undefined when unknown. */
export function algorithmOf(wireName: string): TsigAlgorithm | undefined {
  const n = foldCase(wireName).replace(/\.$/, '');
  for (const [alg, info] of Object.entries(TSIG_WIRE) as Array<[TsigAlgorithm, { wireName: string }]>) {
    if (info.wireName === n) return alg;
  }
  return undefined;
}

/** What signs: the key's name (as on the wire, no final dot), algorithm and secret. */
export interface TsigSigner {
  name: string;
  algorithm: TsigAlgorithm;
  secret: Buffer;
}

interface Timers {
  timeSigned: number;
  fudge: number;
}

interface Variables extends Timers {
  error: number;
  otherData: Buffer;
}

function u16(v: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(v & 0xffff);
  return b;
}

function timers(t: Timers): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt16BE(Math.floor(t.timeSigned / 2 ** 32) & 0xffff, 0);
  b.writeUInt32BE(t.timeSigned % 2 ** 32, 2);
  b.writeUInt16BE(t.fudge, 6);
  return b;
}

/** The TSIG variables of §4.3.3, names canonical. */
function variables(keyName: string, algorithmWire: string, v: Variables): Buffer {
  const classTtl = Buffer.alloc(6);
  classTtl.writeUInt16BE(CLASS.ANY, 0);
  return Buffer.concat([nameWire(keyName, true), classTtl, nameWire(algorithmWire, true), timers(v), u16(v.error), u16(v.otherData.length), v.otherData]);
}

function hmac(key: TsigSigner, parts: readonly Uint8Array[]): Buffer {
  const h = createHmac(TSIG_WIRE[key.algorithm].hash, key.secret);
  for (const p of parts) h.update(p);
  return h.digest();
}

function lengthPrefixed(mac: Buffer): Buffer[] {
  return [u16(mac.length), mac];
}

/** The message as its MAC sees it: the bytes before the TSIG record, Original ID as id, ARCOUNT - 1. */
export function withoutTsig(bytes: Uint8Array, tsigOffset: number, originalId: number): Buffer {
  const out = Buffer.from(bytes.subarray(0, tsigOffset));
  out.writeUInt16BE(originalId, 0);
  out.writeUInt16BE(out.readUInt16BE(10) - 1, 10);
  return out;
}

/** Appends a TSIG record (owner the key's name, uncompressed) to an encoded message; ARCOUNT + 1. */
function appendTsig(unsigned: Buffer, keyName: string, data: TsigData): Buffer {
  const w = new Writer(0xffff + 1024);
  w.bytes(unsigned);
  w.name(keyName, false);
  w.u16(TYPE.TSIG);
  w.u16(CLASS.ANY);
  w.u32(0);
  const lengthAt = w.pos;
  w.u16(0);
  const start = w.pos;
  writeRecordData(w, data);
  w.patch16(lengthAt, w.pos - start);
  const out = w.done();
  out.writeUInt16BE(out.readUInt16BE(10) + 1, 10);
  return out;
}

export interface SignOptions {
  /** Seconds since the epoch; the present by default. */
  timeSigned?: number;
  fudge?: number;
  error?: number;
  otherData?: Buffer;
  /** The Original ID (the header's id by default). */
  originalId?: number;
}

/**
 * Signs an encoded message: a request (no `requestMac`) or a response to a request with that MAC.
 * Returns the signed bytes and the MAC (what the next message of a stream chains).
 */
export function signMessage(unsigned: Buffer, key: TsigSigner, requestMac: Buffer | undefined, opts: SignOptions = {}): { bytes: Buffer; mac: Buffer } {
  const wireName = TSIG_WIRE[key.algorithm].wireName;
  const v: Variables = {
    timeSigned: opts.timeSigned ?? Math.floor(Date.now() / 1000),
    fudge: opts.fudge ?? DEFAULT_FUDGE,
    error: opts.error ?? 0,
    otherData: opts.otherData ?? Buffer.alloc(0),
  };
  const originalId = opts.originalId ?? unsigned.readUInt16BE(0);
  const header = Buffer.from(unsigned);
  header.writeUInt16BE(originalId, 0);
  const mac = hmac(key, [...(requestMac ? lengthPrefixed(requestMac) : []), header, variables(key.name, wireName, v)]);
  return { bytes: appendTsig(unsigned, key.name, { kind: 'TSIG', algorithm: wireName, ...v, mac, originalId }), mac };
}

/**
 * Signs the second or a later message of a multi-message answer (RFC 8945 §5.3.1): its MAC covers the
 * previous MAC, this message and the timers only.
 */
export function signContinuation(
  unsigned: Buffer,
  key: TsigSigner,
  priorMac: Buffer,
  opts: { timeSigned?: number; fudge?: number; originalId?: number } = {},
): { bytes: Buffer; mac: Buffer } {
  const t: Timers = { timeSigned: opts.timeSigned ?? Math.floor(Date.now() / 1000), fudge: opts.fudge ?? DEFAULT_FUDGE };
  const originalId = opts.originalId ?? unsigned.readUInt16BE(0);
  const mac = hmac(key, [...lengthPrefixed(priorMac), unsigned, timers(t)]);
  const wireName = TSIG_WIRE[key.algorithm].wireName;
  return { bytes: appendTsig(unsigned, key.name, { kind: 'TSIG', algorithm: wireName, ...t, mac, originalId, error: 0, otherData: Buffer.alloc(0) }), mac };
}

/**
 * An unsigned TSIG error answer (BADKEY, BADSIG: §5.3.2): the request's key name, algorithm and time,
 * the error, an empty MAC.
 */
export function appendUnsignedTsigError(unsigned: Buffer, request: TsigData & { keyName: string }, error: number): Buffer {
  return appendTsig(unsigned, request.keyName, {
    kind: 'TSIG',
    algorithm: request.algorithm,
    timeSigned: request.timeSigned,
    fudge: request.fudge,
    mac: Buffer.alloc(0),
    originalId: unsigned.readUInt16BE(0),
    error,
    otherData: Buffer.alloc(0),
  });
}

export type TsigVerdict =
  | { ok: true; mac: Buffer }
  | { ok: false; error: number /** FORMERR when the MAC's length is malformed. */; formerr?: boolean; why: string };

/**
 * Checks a signed message's TSIG with `key` (the one its record names): the algorithm, the MAC's
 * length, the MAC (over `priorMac` first for a response), then the time against `now` (seconds).
 * Never says more than the error: what the MAC should have been stays here.
 */
export function verifyTsig(bytes: Uint8Array, tsig: NonNullable<Parsed['tsig']>, key: TsigSigner, now: number, priorMac?: Buffer): TsigVerdict {
  const t = tsig.record.data;
  if (algorithmOf(t.algorithm) !== key.algorithm)
    return { ok: false, error: TSIG_ERROR.BADKEY, why: `the key is ${key.algorithm}, the message says ${t.algorithm}` };
  const full = TSIG_WIRE[key.algorithm].macLength;
  if (t.mac.length > full || t.mac.length < Math.max(10, full / 2)) {
    return { ok: false, error: TSIG_ERROR.BADSIG, formerr: true, why: `a MAC of ${t.mac.length} bytes (the algorithm's is ${full})` };
  }
  const expected = hmac(key, [
    ...(priorMac ? lengthPrefixed(priorMac) : []),
    withoutTsig(bytes, tsig.offset, t.originalId),
    variables(tsig.record.name, t.algorithm, t),
  ]);
  if (!timingSafeEqual(expected.subarray(0, t.mac.length), t.mac)) return { ok: false, error: TSIG_ERROR.BADSIG, why: 'the MAC does not match' };
  if (t.mac.length < full)
    return { ok: false, error: TSIG_ERROR.BADTRUNC, why: `a truncated MAC (${t.mac.length} of ${full} bytes); dnsplane requires full MACs` };
  if (Math.abs(now - t.timeSigned) > t.fudge)
    return { ok: false, error: TSIG_ERROR.BADTIME, why: `signed at ${t.timeSigned}, ${now - t.timeSigned} s from the server's time ${now} (fudge ${t.fudge})` };
  return { ok: true, mac: t.mac };
}

/** Checks a later message of a multi-message answer (§5.3.1): MAC over the prior MAC, the message, the timers. */
export function verifyContinuation(bytes: Uint8Array, tsig: NonNullable<Parsed['tsig']>, key: TsigSigner, priorMac: Buffer): TsigVerdict {
  const t = tsig.record.data;
  const expected = hmac(key, [...lengthPrefixed(priorMac), withoutTsig(bytes, tsig.offset, t.originalId), timers(t)]);
  if (t.mac.length !== expected.length || !timingSafeEqual(expected, t.mac)) return { ok: false, error: TSIG_ERROR.BADSIG, why: 'the MAC does not match' };
  return { ok: true, mac: t.mac };
}

/** The server's time, 48 bits, as BADTIME's other data carries it. */
export function timeOtherData(now: number): Buffer {
  const b = Buffer.alloc(6);
  b.writeUInt16BE(Math.floor(now / 2 ** 32) & 0xffff, 0);
  b.writeUInt32BE(now % 2 ** 32, 2);
  return b;
}

/** The key name a TSIG record is owned by, as the key store knows names: lowercase, no final dot. */
export function tsigKeyName(record: ResourceRecord): string {
  return foldCase(record.name).replace(/\.$/, '');
}
