/**
 * One DNS question to one server (the prober's: core/probe/), on our pure codec (dns/wire/): over UDP,
 * and again over TCP when the answer is truncated. What comes back is trusted only as the answer to
 * exactly what was asked: a response (QR), a standard query's, with the id sent and the very question
 * (name, type, class). Over UDP anything else — bytes that do not parse, another id, another question,
 * a query, a packet from another address — is ignored as a resolver would (counted, named in the
 * error if no good answer comes within the timeout); over TCP it is an error. No retries here: the
 * prober decides when to ask again.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import { randomInt } from 'node:crypto';
import { CLASS, OPCODE, encodeMessage, optRecord, parseMessage, sameName, type Message, type Question } from '../dns/wire/index.js';
import { messageOf } from '../lib/error-message.js';

export interface DnsServerAddress {
  host: string;
  port: number;
}

/** What a server answered (its header's flags and the sections that matter). */
export type DnsAnswer = Pick<Message, 'answers' | 'authorities'> & { rcode: number; aa: boolean; transport: 'udp' | 'tcp' };

/** A question that got no answer it could trust: a timeout, a refusal of the connection, broken answers. */
export class DnsQueryError extends Error {
  override readonly name = 'DnsQueryError';
}

/** The payload size we advertise over UDP (EDNS): larger answers come truncated, then over TCP. */
const UDP_PAYLOAD = 1232;

export async function query(
  server: DnsServerAddress,
  question: Omit<Question, 'class'>,
  opts: { timeoutMs: number; signal?: AbortSignal },
): Promise<DnsAnswer> {
  const q: Question = { ...question, class: CLASS.IN };
  const udp = await exchangeUdp(server, q, opts);
  if (!udp.tc) return { ...udp, transport: 'udp' };
  return { ...(await exchangeTcp(server, q, opts)), transport: 'tcp' };
}

interface Reply {
  rcode: number;
  aa: boolean;
  tc: boolean;
  answers: Message['answers'];
  authorities: Message['authorities'];
}

function request(q: Question): { id: number; bytes: Buffer } {
  const id = randomInt(0, 0x10000);
  const bytes = encodeMessage({
    header: { id, qr: false, opcode: OPCODE.QUERY, aa: false, tc: false, rd: false, ra: false, z: 0, rcode: 0 },
    questions: [q],
    answers: [],
    authorities: [],
    additionals: [optRecord(UDP_PAYLOAD)],
  });
  return { id, bytes };
}

/** The reply if `bytes` answer exactly `q` with `id`; otherwise why not. */
function check(bytes: Buffer, id: number, q: Question): Reply | string {
  let m: Message;
  try {
    m = parseMessage(bytes).message;
  } catch (e) {
    return `a malformed answer (${messageOf(e)})`;
  }
  const h = m.header;
  if (h.id !== id) return `an answer with another id (${h.id}, asked ${id})`;
  if (!h.qr) return 'a message that is not a response (QR unset)';
  if (h.opcode !== OPCODE.QUERY) return `an answer with opcode ${h.opcode}`;
  const asked = m.questions[0];
  if (m.questions.length !== 1 || !asked || !sameName(asked.name, q.name) || asked.type !== q.type || asked.class !== q.class) {
    return 'an answer to another question';
  }
  return { rcode: h.rcode, aa: h.aa, tc: h.tc, answers: m.answers, authorities: m.authorities };
}

function exchangeUdp(server: DnsServerAddress, q: Question, opts: { timeoutMs: number; signal?: AbortSignal }): Promise<Reply> {
  const { id, bytes } = request(q);
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket(net.isIPv6(server.host) ? 'udp6' : 'udp4');
    const ignored: string[] = [];
    const finish = (fn: () => void) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', aborted);
      socket.close();
      fn();
    };
    const timer = setTimeout(
      () =>
        finish(() =>
          reject(
            new DnsQueryError(
              `no answer within ${opts.timeoutMs} ms${ignored.length ? `; ignored ${ignored.length}: ${[...new Set(ignored)].join('; ')}` : ''}`,
            ),
          ),
        ),
      opts.timeoutMs,
    );
    const aborted = () => finish(() => reject(new DnsQueryError('stopped')));
    opts.signal?.addEventListener('abort', aborted, { once: true });
    socket.on('message', (msg, from) => {
      if (from.port !== server.port || (net.isIP(server.host) !== 0 && from.address !== server.host)) return void ignored.push('a packet from another address');
      const reply = check(msg, id, q);
      if (typeof reply === 'string') return void ignored.push(reply);
      finish(() => resolve(reply));
    });
    socket.on('error', (e) => finish(() => reject(new DnsQueryError(e.message))));
    socket.send(bytes, server.port, server.host, (e) => {
      if (e) finish(() => reject(new DnsQueryError(e.message)));
    });
  });
}

function exchangeTcp(server: DnsServerAddress, q: Question, opts: { timeoutMs: number; signal?: AbortSignal }): Promise<Reply> {
  const { id, bytes } = request(q);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: server.host, port: server.port });
    let pending = Buffer.alloc(0);
    const finish = (fn: () => void) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', aborted);
      socket.destroy();
      fn();
    };
    const fail = (why: string) => finish(() => reject(new DnsQueryError(`over TCP: ${why}`)));
    const timer = setTimeout(() => fail(`no answer within ${opts.timeoutMs} ms`), opts.timeoutMs);
    const aborted = () => fail('stopped');
    opts.signal?.addEventListener('abort', aborted, { once: true });
    socket.on('error', (e) => fail(e.message));
    socket.on('close', () => fail('the server closed the connection without an answer'));
    socket.on('connect', () => socket.write(tcpFrame(bytes)));
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      if (pending.length < 2) return;
      const len = pending.readUInt16BE(0);
      if (pending.length < 2 + len) return;
      const reply = check(pending.subarray(2, 2 + len), id, q);
      if (typeof reply === 'string') return fail(reply);
      if (reply.tc) return fail('a truncated answer');
      finish(() => resolve(reply));
    });
  });
}

/** A message as DNS over TCP sends it: its length in two bytes, then the message. */
export function tcpFrame(message: Buffer): Buffer {
  const frame = Buffer.alloc(2 + message.length);
  frame.writeUInt16BE(message.length, 0);
  message.copy(frame, 2);
  return frame;
}
