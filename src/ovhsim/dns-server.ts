/**
 * The simulator's authoritative DNS server over UDP and TCP on one port (TCP with 2-byte length
 * framing); what it answers is dns-resolver.ts's.
 */
import type dgram from 'node:dgram';
import type net from 'node:net';
import type { DnsResolver } from './dns-resolver.js';
import { bindUdpAndTcp } from '../lib/udp-tcp-port.js';

export interface DnsQueryLog {
  transport: 'udp' | 'tcp';
  name?: string;
  type?: string;
  rcode: string;
}

/** UDP and TCP listeners on one port. */
export class DnsServer {
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly udp: dgram.Socket,
    private readonly tcp: net.Server,
    readonly port: number,
  ) {}

  /** Binds UDP and TCP on `port`; with port 0, on an ephemeral port free for both. */
  static async start(host: string, port: number, resolver: DnsResolver, onQuery?: (q: DnsQueryLog) => void): Promise<DnsServer> {
    const { udp, tcp, port: bound } = await bindUdpAndTcp(host, port);
    const server = new DnsServer(udp, tcp, bound);
    server.serve(resolver, onQuery);
    return server;
  }

  private serve(resolver: DnsResolver, onQuery?: (q: DnsQueryLog) => void): void {
    const report = (transport: 'udp' | 'tcp', out: ReturnType<DnsResolver['answer']>): void => {
      if (!out || !onQuery) return;
      onQuery({ transport, ...(out.question ? { name: out.question.name, type: out.question.type } : {}), rcode: out.rcode });
    };
    this.udp.on('message', (msg, rinfo) => {
      const out = resolver.answer(msg, 'udp');
      report('udp', out);
      if (out) this.udp.send(out.reply, rinfo.port, rinfo.address);
    });
    this.udp.on('error', () => {
      /* a send to a closed port; nothing to do */
    });
    this.tcp.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => socket.destroy());
      socket.setTimeout(30_000, () => socket.destroy());
      let pending = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk]);
        while (pending.length >= 2) {
          const len = pending.readUInt16BE(0);
          if (pending.length < 2 + len) break;
          const msg = pending.subarray(2, 2 + len);
          pending = pending.subarray(2 + len);
          const out = resolver.answer(msg, 'tcp');
          report('tcp', out);
          if (!out) {
            socket.destroy();
            return;
          }
          const frame = Buffer.alloc(2 + out.reply.length);
          frame.writeUInt16BE(out.reply.length, 0);
          out.reply.copy(frame, 2);
          socket.write(frame);
        }
      });
    });
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await Promise.all([new Promise<void>((resolve) => this.udp.close(() => resolve())), new Promise<void>((resolve) => this.tcp.close(() => resolve()))]);
  }
}
