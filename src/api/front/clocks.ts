/**
 * The clocks of every connection of one HTTP port, kept by us rather than left to Node: the HTTP/1.1
 * server is fed its connections by hand (after the h1/h2c sniff) and Node's own headersTimeout and
 * requestTimeout do not reach such connections (Node 20.20: a connection that has sent half a header
 * was held forever). One sweep every `tick` reads each connection's state and closes the late ones:
 *
 *   phase    clock starts                                    closed after   how
 *   headers  accept; on keep-alive, the next request's       headersMs      HTTP/1.1: 408 then the
 *            first byte (socket.bytesRead moving while idle)                lingering close; h2: GOAWAY
 *   body     the request's start (its headers complete,      requestMs      HTTP/1.1: as headers; h2:
 *            its body not)                                                   that stream is cancelled
 *   busy     a request is being answered                     never          (a long apply is not idle)
 *   idle     its last answer                                 idleMs         closed (h2: GOAWAY)
 *   linger   an answer sent with the request's body still    LINGER_*       destroyed
 *            arriving: the rest is read and dropped
 *
 * h2: the first stream's headers must complete within headersMs of the accept (pings and settings do
 * not count); once a session has no stream open it is idle.
 *
 * The lingering close (what nginx calls lingering_close): when Node ends an HTTP/1.1 connection whose
 * request body has not all arrived (an oversized body refused, a request answered before its body),
 * closing the socket at once would make the kernel answer the bytes still coming with a reset, and the
 * reset destroys the answer before the client reads it. Instead the connection is half-closed (our
 * FIN after the answer) and what still arrives is read and dropped, until the client closes, is quiet
 * for LINGER_QUIET_MS, or LINGER_MAX_MS have passed.
 */
import type http from 'node:http';
import http2 from 'node:http2';
import type net from 'node:net';
import type { CloseReason } from './metrics.js';

export interface Timeouts {
  /** Request headers complete within this (DNSPLANE_HEADERS_TIMEOUT). */
  headersMs: number;
  /** The whole request (headers and body) within this (DNSPLANE_REQUEST_TIMEOUT). */
  requestMs: number;
  /** No request for this long (DNSPLANE_IDLE_TIMEOUT): closed. */
  idleMs: number;
}

/** A lingering close drains for at most this long in all (nginx's lingering_time)… */
export const LINGER_MAX_MS = 30_000;
/** …and stops once the client has sent nothing for this long (nginx's lingering_timeout). */
export const LINGER_QUIET_MS = 5_000;
/** A client told 408 is given this long to read it while what it still sends is dropped. */
const AFTER_408_MS = 1_000;
/** An h2 session told to go away (GOAWAY) is cut this long after if the peer lingers. */
const GOAWAY_GRACE_MS = 1_000;

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;
type Phase = 'headers' | 'body' | 'busy' | 'idle' | 'linger';

/** One request and its answer, until both are done. */
interface Exchange {
  req: Req;
  res: Res;
  startedAt: number;
  answered: boolean;
}

export class Connection {
  phase: Phase = 'headers';
  /** When the phase's clock started (performance.now()). */
  since: number;
  /** socket.bytesRead when last looked at, in the idle and linger phases. */
  bytesAt = 0;
  lastProgress = 0;
  /**
   * Requests under way, oldest first. An array, not a Set: a Set emptied and filled again at every
   * request (a keep-alive connection's polls) allocates a new hash table at each turn.
   */
  readonly exchanges: Exchange[] = [];
  /** h2: the session, and the streams it has open. */
  session: http2.ServerHttp2Session | undefined;
  streams = 0;
  /** Lingering to drain a request body the answer did not wait for: closed once it has all arrived. */
  drainingBody = false;
  /** The latest a lingering close ends. */
  lingerEnd = 0;
  /**
   * Set when the connection's client is a trusted proxy whose forwarded headers are believed (front/index.ts):
   * its address, which a request whose header names nobody else is from.
   */
  client: string | undefined;

  constructor(
    readonly socket: net.Socket,
    now: number,
  ) {
    this.since = now;
  }

  /** Requests under way (for a graceful close). */
  get busy(): boolean {
    return this.exchanges.length > 0;
  }
}

export class Clocks {
  readonly all = new Set<Connection>();
  private readonly sessions = new WeakMap<http2.ServerHttp2Session, Connection>();
  private readonly bySocket = new WeakMap<net.Socket, Connection>();
  private readonly timer: NodeJS.Timeout;
  /** Called when no request is under way any more on any connection. */
  onQuiet: (() => void) | undefined;

  constructor(
    private readonly timeouts: Timeouts,
    private readonly onClosed: (reason: CloseReason) => void,
    /** Told of every answer sent whole, with the seconds since its request's headers were read (the port's metrics). */
    private readonly onAnswered?: (req: Req, res: Res, seconds: number) => void,
  ) {
    // Late by at most a tick; a tick of a quarter of the shortest timeout, at most a second.
    const tick = Math.max(50, Math.min(1000, Math.min(timeouts.headersMs, timeouts.requestMs, timeouts.idleMs) / 4));
    this.timer = setInterval(() => this.sweep(performance.now()), tick);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** A connection just accepted: its headers are due within headersMs from now. */
  add(socket: net.Socket): Connection {
    const conn = new Connection(socket, performance.now());
    this.all.add(conn);
    this.bySocket.set(socket, conn);
    socket.once('close', () => {
      this.all.delete(conn);
      if (conn.busy) {
        conn.exchanges.length = 0;
        this.quietCheck();
      }
    });
    return conn;
  }

  /** The HTTP/1.1 connection of `socket`: Node ending it with a body still arriving lingers instead. */
  h1(conn: Connection): void {
    const socket = conn.socket as net.Socket & { destroySoon(): void };
    const destroySoon = socket.destroySoon.bind(socket);
    socket.destroySoon = () => {
      if (conn.exchanges.some((x) => !x.req.complete)) {
        conn.drainingBody = true;
        this.linger(conn);
      } else destroySoon();
    };
  }

  /** The h2 session of a connection: streams tracked, the first one due within headersMs. */
  h2(conn: Connection, session: http2.ServerHttp2Session): void {
    conn.session = session;
    this.sessions.set(session, conn);
    session.on('stream', (stream) => {
      conn.streams++;
      conn.phase = 'busy';
      stream.once('close', () => {
        if (--conn.streams === 0 && conn.phase === 'busy') this.enter(conn, 'idle', performance.now());
      });
    });
  }

  /** The connection a request came on (undefined if it is gone). */
  of(req: Req): Connection | undefined {
    if ('stream' in req) return this.sessions.get(req.stream.session as http2.ServerHttp2Session);
    return this.bySocket.get(req.socket);
  }

  /**
   * A request whose headers are complete: tracked until its body has arrived and its answer is sent.
   * HTTP/1.1 pays one listener per request (its answer's close): whether the body has all come is read
   * from the request (req.complete) at the answer and at each sweep, not listened for, since a poll's
   * body has always come by then — listeners per request were most of what a not-modified poll cost
   * beyond a bare node:http server (bench/README.md, bench/api).
   */
  request(conn: Connection, req: Req, res: Res): void {
    const now = performance.now();
    const exchange: Exchange = { req, res, startedAt: conn.phase === 'headers' ? conn.since : now, answered: false };
    conn.exchanges.push(exchange);
    // (on, not once: a response closes once, and once's wrapper is two more objects per request)
    res.on('close', () => this.answered(conn, exchange, now));
    if ('stream' in req) {
      // h2: an answer sent before its request's body has all come (a refusal): the rest is read and
      // dropped, so that flow control does not stall the client before it reads the answer, for at
      // most LINGER_MAX_MS; then the client is told to stop sending (RST_STREAM NO_ERROR, RFC 9113 §8.1).
      // (The stream's writable side, not the compatibility response: Connect ends the stream itself.)
      req.stream.once('finish', () => !req.complete && drainStream(req));
      req.once('end', () => this.settle(conn, performance.now()));
    }
    this.settle(conn, now);
  }

  /**
   * The answer of `exchange` is done (sent, or cut). HTTP/1.1: an answer sent before its request's body
   * has all come is followed by the lingering close (the rest read and dropped; see the header), and
   * the exchange ends once that body has come.
   */
  private answered(conn: Connection, exchange: Exchange, servedAt: number): void {
    const { req, res } = exchange;
    const now = performance.now();
    exchange.answered = true;
    if (res.writableFinished) this.onAnswered?.(req, res, (now - servedAt) / 1000);
    if (!('stream' in req) && !req.complete) {
      if (res.writableFinished) {
        dropRest(req);
        conn.drainingBody = true;
        this.linger(conn);
      }
      req.once('end', () => this.settle(conn, performance.now()));
    }
    this.settle(conn, now);
  }

  /** Half-closes now and drops what still arrives, for at most maxMs (see the header). */
  linger(conn: Connection, maxMs = LINGER_MAX_MS): void {
    if (conn.phase === 'linger' || conn.socket.destroyed) return;
    const now = performance.now();
    conn.socket.end();
    this.enter(conn, 'linger', now);
    conn.lingerEnd = now + maxMs;
  }

  /** Whether requests are under way on any connection. */
  get busy(): boolean {
    for (const c of this.all) if (c.busy) return true;
    return false;
  }

  private enter(conn: Connection, phase: Phase, now: number): void {
    conn.phase = phase;
    conn.since = now;
    conn.lastProgress = now;
    conn.bytesAt = conn.socket.bytesRead;
  }

  /** The phase a connection is in, from its requests (HTTP/1.1) or streams (h2). */
  private settle(conn: Connection, now: number): void {
    // HTTP/1.1: done once answered and its body is all read; h2: once its stream is closed.
    const xs = conn.exchanges;
    let kept = 0;
    for (const x of xs) if (!(x.answered && (conn.session || x.req.complete))) xs[kept++] = x;
    xs.length = kept;
    if (!conn.busy) this.quietCheck();
    // A lingering connection that was draining a body is done when that body has all arrived.
    if (conn.phase === 'linger' && conn.drainingBody && !conn.busy) conn.socket.destroy();
    if (conn.phase === 'linger' || conn.session) return;
    if (conn.busy) {
      let waiting: Exchange | undefined;
      for (const x of conn.exchanges) if (!x.req.complete) waiting ??= x;
      conn.phase = waiting ? 'body' : 'busy';
      if (waiting) conn.since = waiting.startedAt;
    } else if (conn.phase === 'body' || conn.phase === 'busy') {
      this.enter(conn, 'idle', now);
    }
  }

  private quietCheck(): void {
    if (this.onQuiet && !this.busy) this.onQuiet();
  }

  private deadline(conn: Connection): number | undefined {
    const t = this.timeouts;
    switch (conn.phase) {
      case 'headers':
        return conn.since + t.headersMs;
      case 'body':
        return conn.since + t.requestMs;
      case 'idle':
        return conn.since + t.idleMs;
      case 'linger':
        return Math.min(conn.lingerEnd, conn.lastProgress + LINGER_QUIET_MS);
      case 'busy':
        return undefined;
    }
  }

  private sweep(now: number): void {
    for (const conn of this.all) {
      if (conn.socket.destroyed) continue;
      // Bytes since the last look: a keep-alive connection's next request has begun; a lingering one is
      // still sending.
      if (conn.socket.bytesRead > conn.bytesAt) {
        conn.bytesAt = conn.socket.bytesRead;
        if (conn.phase === 'linger') conn.lastProgress = now;
        if (conn.phase === 'idle' && !conn.session) {
          conn.phase = 'headers';
          conn.since = now;
        }
      }
      if (conn.session) this.sweepStreams(conn, now);
      // HTTP/1.1: a body that has all come since the last look moves its connection from body to busy.
      else if (conn.phase === 'body') this.settle(conn, now);
      const deadline = this.deadline(conn);
      if (deadline !== undefined && now >= deadline) this.expire(conn);
    }
  }

  /** h2: a stream whose body has not all arrived within requestMs of its start is cancelled. */
  private sweepStreams(conn: Connection, now: number): void {
    for (const x of conn.exchanges) {
      const stream = (x.req as http2.Http2ServerRequest).stream;
      if (!x.req.complete && now >= x.startedAt + this.timeouts.requestMs && !stream.destroyed) {
        this.onClosed('request');
        stream.close(http2.constants.NGHTTP2_CANCEL);
      }
    }
  }

  private expire(conn: Connection): void {
    const reason: CloseReason = conn.phase === 'body' ? 'request' : conn.phase === 'busy' ? 'idle' : conn.phase;
    // (the end of the short linger after a 408 was counted as the 408's reason)
    if (reason !== 'linger' || conn.drainingBody) this.onClosed(reason);
    const { socket, session } = conn;
    if (session) {
      this.all.delete(conn); // going away: not swept again
      if (!session.destroyed) session.close();
      setTimeout(() => session.destroy(), GOAWAY_GRACE_MS).unref();
      return;
    }
    if (reason === 'idle' || reason === 'linger' || socket.bytesRead === 0) {
      socket.destroy();
      return;
    }
    // Headers or body late: say so if nothing was answered yet, then drain what still comes.
    if (!conn.exchanges.some((x) => x.res.headersSent) && socket.writable) {
      socket.write('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    }
    this.linger(conn, AFTER_408_MS);
  }
}

/**
 * Reads what is left of a request's body and drops it. By read() rather than resume(): a reader that
 * stopped mid-way (Connect's async iterator, abandoned after its refusal) keeps a 'readable' listener,
 * and with one attached resume() does nothing.
 */
function dropRest(req: Req): void {
  const drop = () => {
    while (req.read() !== null);
  };
  req.on('readable', drop);
  drop();
}

function drainStream(req: http2.Http2ServerRequest): void {
  // From the stream itself: the compatibility layer's listener pushes into the request and pauses the
  // stream when the request takes no more (as when its reader gave up and destroyed it).
  const { stream } = req;
  stream.removeAllListeners('data');
  stream.on('data', () => undefined);
  stream.resume();
  const timer = setTimeout(() => {
    if (!stream.readableEnded && !stream.destroyed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
  }, LINGER_MAX_MS);
  timer.unref();
  stream.once('close', () => clearTimeout(timer));
}
