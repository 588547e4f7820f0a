/**
 * The DNS door's sockets: UDP and TCP on one port (RFC 1035 §4.2, RFC 7766), every cost bounded.
 *
 * - UDP: each datagram is one message; at most MAX_UDP_IN_FLIGHT are answered at once, more are
 *   dropped (metric `busy`).
 * - TCP: 2-byte length framing; messages of a connection are answered one after the other, in order
 *   (reading pauses while one is answered), and a connection may buffer at most one message plus one
 *   read ahead. A connection must complete each message within MESSAGE_TIMEOUT_MS of its previous
 *   answer (or of its opening): a silent or dripping client is cut. An answer the client does not
 *   read within WRITE_TIMEOUT_MS (a transfer to a reader that stopped) cuts the connection too.
 *   At most MAX_CONNECTIONS connections, MAX_CONNECTIONS_PER_SOURCE from one address; more are
 *   closed at once.
 */
import type net from 'node:net';
import type { Logger } from 'pino';
import { messageOf } from '../lib/error-message.js';
import { bindUdpAndTcp } from '../lib/udp-tcp-port.js';
import type { Arrival } from './door.js';
import type { DnsMetrics } from './metrics.js';

const MAX_UDP_IN_FLIGHT = 1024;
const MAX_CONNECTIONS = 512;
const MAX_CONNECTIONS_PER_SOURCE = 64;
/** A TCP client must send each whole message within this (RFC 7766 §6.2.3 suggests seconds). */
const MESSAGE_TIMEOUT_MS = 10_000;
/** An answer must be read by the client within this. */
const WRITE_TIMEOUT_MS = 30_000;
/** One whole message (2-byte length + 65,535) plus one read of read-ahead. */
const MAX_BUFFERED = 2 + 0xffff + 0x10000;

export type Handle = (bytes: Buffer, arrival: Arrival) => Promise<void>;

export interface DnsListener {
  host: string;
  port: number;
  /** Stops accepting, waits up to `maxMs` for answers under way, then cuts every connection. */
  close(maxMs?: number): Promise<void>;
}

export async function listenDns(listen: { host: string; port: number }, handle: Handle, opts: { log: Logger; metrics?: DnsMetrics }): Promise<DnsListener> {
  const { udp, tcp, port } = await bindUdpAndTcp(listen.host, listen.port);
  const { log, metrics } = opts;
  const inFlight = new Set<Promise<void>>();
  const track = (p: Promise<void>) => {
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };
  let udpInFlight = 0;
  udp.on('message', (msg, rinfo) => {
    if (udpInFlight >= MAX_UDP_IN_FLIGHT) return void metrics?.drop('busy');
    udpInFlight++;
    const arrival: Arrival = {
      transport: 'udp',
      source: rinfo.address,
      send: (bytes) => {
        udp.send(bytes, rinfo.port, rinfo.address);
      },
    };
    track(
      handle(msg, arrival)
        .catch((e: unknown) => log.error({ err: messageOf(e) }, 'dns: a UDP message failed'))
        .finally(() => udpInFlight--),
    );
  });
  udp.on('error', (e) => log.debug({ err: e.message }, 'dns: UDP socket error'));

  const sockets = new Set<net.Socket>();
  const perSource = new Map<string, number>();
  tcp.on('connection', (socket) => {
    const source = socket.remoteAddress ?? '';
    const fromSource = perSource.get(source) ?? 0;
    if (sockets.size >= MAX_CONNECTIONS || fromSource >= MAX_CONNECTIONS_PER_SOURCE) {
      metrics?.drop('busy');
      socket.destroy();
      return;
    }
    sockets.add(socket);
    perSource.set(source, fromSource + 1);
    socket.once('close', () => {
      sockets.delete(socket);
      const n = (perSource.get(source) ?? 1) - 1;
      if (n <= 0) perSource.delete(source);
      else perSource.set(source, n);
    });
    serveConnection(socket, source, handle, log, track);
  });
  tcp.on('error', (e) => log.warn({ err: e.message }, 'dns: TCP listener error'));

  return {
    host: listen.host,
    port,
    async close(maxMs = 5_000) {
      const closed = Promise.all([new Promise<void>((resolve) => udp.close(() => resolve())), new Promise<void>((resolve) => tcp.close(() => resolve()))]);
      if (inFlight.size > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([Promise.allSettled([...inFlight]), new Promise<void>((resolve) => (timer = setTimeout(resolve, maxMs)))]);
        clearTimeout(timer);
      }
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

/** One TCP connection: framed messages answered in order, each bounded in size and time. */
function serveConnection(socket: net.Socket, source: string, handle: Handle, log: Logger, track: (p: Promise<void>) => void): void {
  socket.setNoDelay(true);
  let pending: Buffer = Buffer.alloc(0);
  let busy = false;
  let deadline: NodeJS.Timeout | undefined;
  const arm = () => {
    if (deadline) clearTimeout(deadline);
    deadline = setTimeout(() => socket.destroy(), MESSAGE_TIMEOUT_MS);
    deadline.unref();
  };
  arm();
  socket.once('close', () => deadline && clearTimeout(deadline));
  socket.on('error', () => socket.destroy());

  const send = (bytes: Buffer): Promise<void> => {
    if (socket.destroyed) return Promise.reject(new Error('the connection is closed'));
    const frame = Buffer.allocUnsafe(2 + bytes.length);
    frame.writeUInt16BE(bytes.length, 0);
    bytes.copy(frame, 2);
    if (socket.write(frame)) return Promise.resolve();
    // The client reads slowly: wait for it, within WRITE_TIMEOUT_MS.
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error('the client did not read the answer in time'));
      }, WRITE_TIMEOUT_MS);
      const done = () => {
        clearTimeout(timer);
        socket.off('close', gone);
        resolve();
      };
      const gone = () => {
        clearTimeout(timer);
        socket.off('drain', done);
        reject(new Error('the connection closed'));
      };
      socket.once('drain', done);
      socket.once('close', gone);
    });
  };

  const next = (): void => {
    if (busy || socket.destroyed) return;
    if (pending.length < 2) return;
    const length = pending.readUInt16BE(0);
    if (pending.length < 2 + length) return;
    const message = pending.subarray(2, 2 + length);
    pending = pending.subarray(2 + length);
    busy = true;
    socket.pause();
    if (deadline) clearTimeout(deadline);
    const work = handle(Buffer.from(message), { transport: 'tcp', source, send })
      .catch((e: unknown) => {
        log.debug({ err: messageOf(e), source }, 'dns: a TCP exchange ended early');
        socket.destroy();
      })
      .finally(() => {
        busy = false;
        if (socket.destroyed) return;
        arm();
        socket.resume();
        next();
      });
    track(work);
  };

  socket.on('data', (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    if (pending.length > MAX_BUFFERED) return void socket.destroy();
    next();
  });
}
