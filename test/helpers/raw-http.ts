/**
 * Clients that behave as hostile or careless clients do, written byte by byte on a TCP socket: one
 * that sends part of a request and waits for the server to close (how long it took, what it was
 * told), one that uploads a large body whatever the server answers, and the HTTP/2 frames such
 * clients send by hand (RFC 9113 §3.4, §6).
 */
import http2 from 'node:http2';
import net from 'node:net';

export interface Closed {
  /** What the server sent before closing (latin1). */
  got: string;
  /** From the connection's start to the server's close, in ms. */
  ms: number;
  /** The socket error seen, if any (ECONNRESET: the server reset the connection). */
  error?: string;
}

/** Resolves when the server closes the connection; `drive` writes to it meanwhile. */
export function closedByServer(port: number, drive: (s: net.Socket) => void = () => undefined): Promise<Closed> {
  return new Promise((resolve) => {
    const started = performance.now();
    let error: string | undefined;
    const s = net.connect(port, '127.0.0.1', () => drive(s));
    let got = '';
    s.on('data', (d) => (got += d.toString('latin1')));
    s.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    s.on('close', () => resolve({ got, ms: performance.now() - started, ...(error ? { error } : {}) }));
  });
}

/** Writes `lines` one at a time, one every `everyMs`, until the connection closes. */
export function trickle(s: net.Socket, first: string, line: string, everyMs = 1000): void {
  s.write(first);
  const timer = setInterval(() => s.writable && s.write(line), everyMs);
  s.once('close', () => clearInterval(timer));
}

export interface Upload {
  /** The request line and headers, without the blank line that ends them. */
  head: string;
  bytes: number;
  /** Content-Length announced, or the body sent chunked. */
  framing: 'content-length' | 'chunked';
  /** Send `Expect: 100-continue` and the body only once told to continue. */
  expectContinue: boolean;
}

export interface Uploaded extends Closed {
  /** The body bytes written before the server answered or closed. */
  sent: number;
  /** Whether the server said `100 Continue`. */
  continued: boolean;
}

/**
 * A client that uploads a large body as fast as the socket takes it, whatever the server answers
 * meanwhile (the careless case: the server must still be read), then waits for the server to close.
 */
export function upload(port: number, u: Upload): Promise<Uploaded> {
  return new Promise((resolve) => {
    const started = performance.now();
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    let sent = 0;
    let error: string | undefined;
    let sending = false;
    let continued = false;
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const pump = () => {
      while (sending && sent < u.bytes && s.writable) {
        const n = Math.min(chunk.length, u.bytes - sent);
        const piece = chunk.subarray(0, n);
        sent += n;
        const ok = s.write(u.framing === 'chunked' ? Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece);
        if (!ok) return void s.once('drain', pump);
      }
      if (sending && sent >= u.bytes && s.writable) {
        sending = false;
        if (u.framing === 'chunked') s.write('0\r\n\r\n');
      }
    };
    s.on('connect', () => {
      const framing = u.framing === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${u.bytes}`;
      s.write(`${u.head}\r\n${framing}\r\n${u.expectContinue ? 'Expect: 100-continue\r\n' : ''}\r\n`);
      if (!u.expectContinue) {
        sending = true;
        pump();
      }
    });
    s.on('data', (d) => {
      got += d.toString('latin1');
      if (u.expectContinue && !continued && got.startsWith('HTTP/1.1 100 Continue\r\n\r\n')) {
        got = got.slice('HTTP/1.1 100 Continue\r\n\r\n'.length);
        continued = true;
        sending = true;
        pump();
      }
    });
    s.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    s.on('close', () => resolve({ got, ms: performance.now() - started, sent, continued, ...(error ? { error } : {}) }));
  });
}

/** HTTP/2 on the wire: the client's connection preface, and frames (RFC 9113 §4.1). */
export const H2_PREFACE = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';

export function h2Frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head.writeUInt8(type, 3);
  head.writeUInt8(flags, 4);
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

export const H2_SETTINGS = () => h2Frame(0x4, 0, 0);
export const H2_PING = () => h2Frame(0x6, 0, 0, Buffer.alloc(8));
/** A HEADERS frame on stream 1 without END_HEADERS (`:method: POST`, HPACK index 3): the rest never comes. */
export const H2_HALF_HEADERS = () => h2Frame(0x1, 0, 1, Buffer.from([0x83]));

export interface H2Uploaded {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: string;
  sent: number;
  /** The stream's RST_STREAM code when the server reset it (NO_ERROR, 0: "stop sending", after an answer). */
  rstCode: number | undefined;
  error?: string;
}

/**
 * An h2c client that uploads `bytes` (announcing them in content-length, or not; `first` first, then
 * spaces) as fast as flow control lets it, whatever the server answers meanwhile, and collects the answer.
 */
export function h2Upload(
  url: string,
  headers: http2.OutgoingHttpHeaders,
  bytes: number,
  announce: boolean,
  first: Buffer = Buffer.alloc(0),
): Promise<H2Uploaded> {
  return new Promise((resolve) => {
    const session = http2.connect(url);
    session.on('error', () => undefined);
    const stream = session.request({ ':method': 'POST', ...headers, ...(announce ? { 'content-length': String(bytes) } : {}) });
    const out: H2Uploaded = { headers: {}, trailers: {}, body: '', sent: 0, rstCode: undefined };
    stream.on('response', (h) => (out.headers = h));
    stream.on('trailers', (t) => (out.trailers = t));
    stream.on('data', (d: Buffer) => (out.body += d.toString('utf8')));
    stream.on('error', (e: NodeJS.ErrnoException) => (out.error = e.code ?? e.message));
    stream.on('close', () => {
      out.rstCode = stream.rstCode;
      session.close();
      resolve(out);
    });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    stream.write(first);
    out.sent = first.length;
    const pump = () => {
      while (out.sent < bytes && !stream.destroyed && stream.writable) {
        const n = Math.min(chunk.length, bytes - out.sent);
        out.sent += n;
        if (!stream.write(chunk.subarray(0, n))) return void stream.once('drain', pump);
      }
      if (out.sent >= bytes && stream.writable) stream.end();
    };
    pump();
  });
}
