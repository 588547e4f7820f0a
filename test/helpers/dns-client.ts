/**
 * A raw DNS client for tests of the DNS door, on our codec: sends bytes over UDP or TCP (one message,
 * or the messages of a transfer until its closing SOA) and hands back the answers as bytes and parsed.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import { randomInt } from 'node:crypto';
import { tcpFrame } from '../../src/dnsclient/index.js';
import {
  CLASS,
  OPCODE,
  TYPE,
  encodeMessage,
  parseMessage,
  signMessage,
  type Message,
  type Parsed,
  type ResourceRecord,
  type TsigSigner,
} from '../../src/dns/wire/index.js';

export interface Answer {
  bytes: Buffer;
  parsed: Parsed;
}

/** One UDP exchange; undefined when no answer came within `timeoutMs` (a dropped message). */
export function udpExchange(port: number, bytes: Buffer, timeoutMs = 5_000): Promise<Answer | undefined> {
  return new Promise((resolve, reject) => {
    const s = dgram.createSocket('udp4');
    const timer = setTimeout(() => {
      s.close();
      resolve(undefined);
    }, timeoutMs);
    s.on('message', (msg) => {
      clearTimeout(timer);
      s.close();
      try {
        resolve({ bytes: msg, parsed: parseMessage(msg) });
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
      }
    });
    s.send(bytes, port, '127.0.0.1');
  });
}

/**
 * One TCP exchange: the framed message out, answers in until `done` says the last came (default: one
 * answer, or for a transfer the message holding its second SOA), or the connection closes.
 */
export function tcpExchange(port: number, bytes: Buffer, opts: { transfer?: boolean; timeoutMs?: number } = {}): Promise<Answer[]> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const answers: Answer[] = [];
    let pending: Buffer = Buffer.alloc(0);
    let soas = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(answers);
    }, opts.timeoutMs ?? 30_000);
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answers);
    };
    socket.on('connect', () => socket.write(tcpFrame(bytes)));
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
        const msg = pending.subarray(2, 2 + pending.readUInt16BE(0));
        pending = pending.subarray(2 + msg.length);
        let parsed: Parsed;
        try {
          parsed = parseMessage(msg);
        } catch (e) {
          clearTimeout(timer);
          socket.destroy();
          reject(e instanceof Error ? e : new Error(String(e)));
          return;
        }
        answers.push({ bytes: Buffer.from(msg), parsed });
        soas += parsed.message.answers.filter((r) => r.type === TYPE.SOA).length;
        const last =
          !opts.transfer ||
          parsed.message.header.rcode !== 0 ||
          soas >= 2 ||
          (soas === 1 && parsed.message.answers.length === 1 && answers.length === 1 && parsed.message.questions[0]?.type === TYPE.IXFR);
        if (last) return finish();
      }
    });
    socket.on('close', finish);
    socket.on('error', () => finish());
  });
}

/** A query message (no RD), unsigned or signed with `key` at `timeSigned`. */
export function query(name: string, type: number, opts: { key?: TsigSigner; timeSigned?: number; authorities?: ResourceRecord[]; id?: number } = {}): Buffer {
  const m: Message = {
    header: { id: opts.id ?? randomInt(0, 0xffff), qr: false, opcode: OPCODE.QUERY, aa: false, tc: false, rd: false, ra: false, z: 0, rcode: 0 },
    questions: [{ name, type, class: CLASS.IN }],
    answers: [],
    authorities: opts.authorities ?? [],
    additionals: [],
  };
  const bytes = encodeMessage(m);
  return opts.key ? signMessage(bytes, opts.key, undefined, opts.timeSigned === undefined ? {} : { timeSigned: opts.timeSigned }).bytes : bytes;
}
