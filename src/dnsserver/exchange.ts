/**
 * One request and what answering it needs: the parsed message, how it came (UDP or TCP, from where),
 * the key that signed it (when one did) and the request's MAC. Every answer to a signed request is
 * signed (RFC 8945 §5.3); several answers (a transfer) chain their MACs (§5.3.1). Over UDP an answer
 * is at most the requester's EDNS size (512 bytes without EDNS), and at most 512 bytes to an unsigned
 * request whatever it asked for, so the port is no amplifier; a larger answer goes out empty with TC
 * set (the client asks again over TCP), signed when the request was.
 */
import {
  MAX_MESSAGE_BYTES,
  MessageTooLargeError,
  TSIG_WIRE,
  encodeMessage,
  nameWire,
  optRecord,
  responseHeader,
  signContinuation,
  signMessage,
  type Message,
  type Parsed,
  type ResourceRecord,
} from '../dns/wire/index.js';
import type { TsigKey } from '../core/keys/tsig.js';

/** What dnsplane advertises in its OPT record (the DNS Flag Day 2020 value). */
export const EDNS_PAYLOAD = 1232;
/** The most an answer to an unsigned request over UDP may take. */
export const UNSIGNED_UDP_LIMIT = 512;

export interface Exchange {
  /** The request as received (what its MAC covers). */
  bytes: Buffer;
  request: Parsed;
  transport: 'udp' | 'tcp';
  /** The sender's address. */
  source: string;
  /** The key that signed the request, its signature verified. */
  key?: TsigKey;
  /** The request's MAC: answers chain it. */
  requestMac?: Buffer;
}

/** The most bytes an answer may take, before its TSIG record. */
function answerLimit(ex: Exchange): number {
  const reserve = ex.key ? tsigSize(ex.key) : 0;
  if (ex.transport === 'tcp') return MAX_MESSAGE_BYTES - reserve;
  if (!ex.key) return UNSIGNED_UDP_LIMIT;
  const asked = ex.request.opt ? Math.min(Math.max(ex.request.opt.class, 512), 4096) : 512;
  return asked - reserve;
}

/** The size of the TSIG record signing with `key` (BADTIME's 6 bytes of other data included). */
export function tsigSize(key: TsigKey): number {
  return nameWire(key.name).length + 10 + nameWire(TSIG_WIRE[key.algorithm].wireName).length + 16 + TSIG_WIRE[key.algorithm].macLength + 6;
}

/** An answer to the request: its id, opcode and question echoed, the sections given, OPT when it had one. */
export function answerTo(
  ex: Exchange,
  rcode: number,
  sections: { aa?: boolean; answers?: ResourceRecord[]; authorities?: ResourceRecord[]; additionals?: ResourceRecord[] } = {},
): Message {
  const req = ex.request.message;
  return {
    header: responseHeader(req.header, rcode, { aa: sections.aa ?? false }),
    questions: req.questions,
    answers: sections.answers ?? [],
    authorities: sections.authorities ?? [],
    additionals: [...(sections.additionals ?? []), ...(ex.request.opt ? [optRecord(EDNS_PAYLOAD)] : [])],
  };
}

/** The bytes of one answer: within the transport's limit (else empty with TC), signed when the request was. */
export function replyBytes(ex: Exchange, answer: Message, tsig: { error?: number; otherData?: Buffer; timeSigned?: number } = {}): Buffer {
  let unsigned: Buffer;
  try {
    unsigned = encodeMessage(answer, answerLimit(ex));
  } catch (e) {
    if (!(e instanceof MessageTooLargeError)) throw e;
    const opt = answer.additionals.filter((r) => r.type === 41);
    unsigned = encodeMessage({ ...answer, header: { ...answer.header, tc: true }, answers: [], authorities: [], additionals: opt });
  }
  if (!ex.key) return unsigned;
  return signMessage(unsigned, ex.key, ex.requestMac, tsig).bytes;
}

/**
 * Signs the messages of a multi-message answer in turn: the first over the request's MAC, each later
 * one over the previous message's MAC and its timers (RFC 8945 §5.3.1). Unsigned requests: as encoded.
 */
export class StreamSigner {
  private prior: Buffer | undefined;

  constructor(private readonly ex: Exchange) {}

  sign(unsigned: Buffer): Buffer {
    const key = this.ex.key;
    if (!key) return unsigned;
    const signed = this.prior === undefined ? signMessage(unsigned, key, this.ex.requestMac) : signContinuation(unsigned, key, this.prior);
    this.prior = signed.mac;
    return signed.bytes;
  }

  /** Room for the TSIG record in each message. */
  get reserve(): number {
    return this.ex.key ? tsigSize(this.ex.key) : 0;
  }
}
