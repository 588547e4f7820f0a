/**
 * Writes a DNS message into a buffer of bounded size, compressing names (RFC 1035 §4.1.4): a name
 * whose suffix was written before points to it. Writing past the bound throws MessageTooLargeError, so
 * a caller can cut an answer (AXFR) into messages that fit, or truncate a UDP answer.
 */
import { nameLabels, suffixKey } from './names.js';

export class MessageTooLargeError extends Error {
  override readonly name = 'MessageTooLargeError';
}

export class Writer {
  private buf: Buffer;
  pos = 0;
  private readonly seen = new Map<string, number>();

  /** `limit`: the most bytes the message may take (65,535 for TCP, the UDP payload size for UDP). */
  constructor(readonly limit = 0xffff) {
    this.buf = Buffer.allocUnsafe(Math.min(limit, 512));
  }

  private room(n: number): void {
    const need = this.pos + n;
    if (need > this.limit) throw new MessageTooLargeError(`the message would exceed ${this.limit} bytes`);
    if (need > this.buf.length) {
      const grown = Buffer.allocUnsafe(Math.min(this.limit, Math.max(need, this.buf.length * 2)));
      this.buf.copy(grown, 0, 0, this.pos);
      this.buf = grown;
    }
  }

  u8(v: number): void {
    this.room(1);
    this.buf[this.pos++] = v & 0xff;
  }

  u16(v: number): void {
    this.room(2);
    this.buf.writeUInt16BE(v & 0xffff, this.pos);
    this.pos += 2;
  }

  u32(v: number): void {
    this.room(4);
    this.buf.writeUInt32BE(v >>> 0, this.pos);
    this.pos += 4;
  }

  /** A 48-bit unsigned integer (TSIG's time signed). */
  u48(v: number): void {
    this.room(6);
    this.buf.writeUInt16BE(Math.floor(v / 2 ** 32) & 0xffff, this.pos);
    this.buf.writeUInt32BE(v % 2 ** 32, this.pos + 2);
    this.pos += 6;
  }

  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  /** Overwrites a 16-bit value written earlier (a length or a count). */
  patch16(at: number, v: number): void {
    this.buf.writeUInt16BE(v & 0xffff, at);
  }

  /** A name, pointing to a suffix written before when `compress`; every name written may be pointed to. */
  name(name: string, compress = true): void {
    const labels = nameLabels(name);
    for (let i = 0; i < labels.length; i++) {
      const key = suffixKey(labels, i);
      const at = compress ? this.seen.get(key) : undefined;
      if (at !== undefined) {
        this.u16(0xc000 | at);
        return;
      }
      const here = this.pos;
      const l = labels[i]!;
      this.room(1 + l.length);
      this.buf[this.pos++] = l.length;
      l.copy(this.buf, this.pos);
      this.pos += l.length;
      if (here <= 0x3fff && !this.seen.has(key)) this.seen.set(key, here);
    }
    this.u8(0);
  }

  /** Goes back to `pos` (what was written after it is dropped, and names written there are forgotten). */
  rewind(pos: number): void {
    this.pos = pos;
    for (const [k, at] of this.seen) if (at >= pos) this.seen.delete(k);
  }

  /** A copy of what was written. */
  done(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.pos));
  }
}
