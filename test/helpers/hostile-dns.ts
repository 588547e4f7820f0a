/**
 * A broken or hostile DNS server for the prober's tests: UDP and TCP on one port (0: ephemeral), each
 * question passed to a real server (the simulator's) and its answer spoilt as `mode` says — bytes that
 * do not parse, another id, QR unset, another question, a negative answer for another zone, REFUSED, or every
 * UDP answer truncated (TCP then answers as `tcp` says: the real answer, or garbage). Records how many
 * questions came over each transport.
 */
import dgram from 'node:dgram';
import { randomBytes } from 'node:crypto';
import type net from 'node:net';
import { tcpFrame } from '../../src/dnsclient/index.js';
import { RCODE, TYPE, encodeMessage, parseMessage } from '../../src/dns/wire/index.js';
import { bindUdpAndTcp } from '../../src/lib/udp-tcp-port.js';

export type HostileMode = 'garbage' | 'wrong-id' | 'not-response' | 'other-question' | 'other-zone' | 'refused' | 'truncated';

export interface HostileServer {
  port: number;
  questions: { udp: number; tcp: number };
  stop(): Promise<void>;
}

/** The real server's answer to `query` (UDP, one try). */
function forward(realPort: number, query: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = dgram.createSocket('udp4');
    const timer = setTimeout(() => {
      s.close();
      reject(new Error('the real server did not answer'));
    }, 5_000);
    s.on('message', (msg) => {
      clearTimeout(timer);
      s.close();
      resolve(msg);
    });
    s.send(query, realPort, '127.0.0.1');
  });
}

function spoil(mode: HostileMode, query: Buffer, real: Buffer): Buffer {
  const copy = Buffer.from(real);
  switch (mode) {
    case 'garbage':
      return randomBytes(48);
    case 'wrong-id':
      copy.writeUInt16BE((copy.readUInt16BE(0) + 1) & 0xffff, 0);
      return copy;
    case 'not-response':
      copy[2] = copy[2]! & 0x7f;
      return copy;
    case 'other-question': {
      const m = parseMessage(real).message;
      return encodeMessage({ ...m, questions: m.questions.map((q) => ({ ...q, name: `other.${q.name}` })) });
    }
    case 'other-zone': {
      const q = parseMessage(query).message;
      const soa = {
        name: 'elsewhere.test',
        type: TYPE.SOA,
        class: 1,
        ttl: 300,
        data: { kind: 'SOA' as const, mname: 'ns.elsewhere.test', rname: 'hostmaster.elsewhere.test', serial: 1, refresh: 1, retry: 1, expire: 1, minimum: 1 },
      };
      return encodeMessage({
        header: { ...q.header, qr: true, aa: true, rcode: RCODE.NXDOMAIN },
        questions: q.questions,
        answers: [],
        authorities: [soa],
        additionals: [],
      });
    }
    case 'refused': {
      const q = parseMessage(query).message;
      return encodeMessage({ header: { ...q.header, qr: true, rcode: RCODE.REFUSED }, questions: q.questions, answers: [], authorities: [], additionals: [] });
    }
    case 'truncated': {
      const m = parseMessage(real).message;
      return encodeMessage({ header: { ...m.header, tc: true }, questions: m.questions, answers: [], authorities: [], additionals: [] });
    }
  }
}

export async function hostileDns(realPort: number, mode: HostileMode, opts: { tcp?: 'real' | 'garbage' } = {}): Promise<HostileServer> {
  const { udp, tcp, port } = await bindUdpAndTcp('127.0.0.1', 0);
  const questions = { udp: 0, tcp: 0 };
  const sockets = new Set<net.Socket>();
  udp.on('message', (msg, from) => {
    questions.udp++;
    forward(realPort, msg).then(
      (real) => udp.send(spoil(mode, msg, real), from.port, from.address),
      () => undefined,
    );
  });
  tcp.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      if (pending.length < 2 || pending.length < 2 + pending.readUInt16BE(0)) return;
      const msg = pending.subarray(2, 2 + pending.readUInt16BE(0));
      questions.tcp++;
      forward(realPort, msg).then(
        (real) => {
          const reply = mode === 'truncated' ? (opts.tcp === 'garbage' ? randomBytes(48) : real) : spoil(mode, msg, real);
          socket.write(tcpFrame(reply));
        },
        () => socket.destroy(),
      );
    });
  });
  return {
    port,
    questions,
    async stop() {
      for (const s of sockets) s.destroy();
      await Promise.all([new Promise<void>((r) => udp.close(() => r())), new Promise<void>((r) => tcp.close(() => r()))]);
    },
  };
}
