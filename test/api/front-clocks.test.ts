/**
 * The HTTP front's clocks (src/api/front/clocks.ts) on their own, on a port started with startFront:
 * on HTTP/1.1 a request's body phase is read from the request (req.complete) at the answer and at
 * each sweep rather than listened for, so these prove what that must keep: a request whose body has
 * all come is never cut for its body's time however long its answer takes, while one whose body
 * stalls still is (408, then the lingering close); every answer sent whole is reported to onAnswered
 * once, with its time; an answer sent before its body has all come is followed by the lingering close.
 */
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFront, type Front, type FrontRequest } from '../../src/api/front/index.js';
import { captureLogger } from '../helpers/log-capture.js';
import { closedByServer } from '../helpers/raw-http.js';

const REQUEST_MS = 600;
/** A busy 2-core machine: a close may come this much after its timeout. */
const MARGIN_MS = 5000;

let front: Front;
const answered: Array<{ url: string; seconds: number }> = [];
/** Answers the /slow request once this is called (the test decides when). */
let releaseSlow: (() => void) | undefined;
let slowBodyDone: (() => void) | undefined;
const slowBodyRead = new Promise<void>((resolve) => (slowBodyDone = resolve));

beforeAll(async () => {
  front = await startFront({
    name: 'test',
    listen: { host: '127.0.0.1', port: 0 },
    timeouts: { headersMs: REQUEST_MS, requestMs: REQUEST_MS, idleMs: 30_000 },
    limits: { perAddress: 50, total: 100 },
    log: captureLogger('warn').log,
    shutdownTimeoutMs: 1000,
    onAnswered: (req: FrontRequest, _res, seconds) => answered.push({ url: req.url ?? '', seconds }),
    handler: (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.url === '/early') {
        // Answered before its body has come (a refusal, say).
        res.writeHead(413, { 'content-length': '2' }).end('no');
        return;
      }
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        if (req.url === '/slow') {
          slowBodyDone?.();
          releaseSlow = () => res.writeHead(200, { 'content-length': String(body.length) }).end(body);
          return;
        }
        res.writeHead(200, { 'content-length': String(body.length) }).end(body);
      });
    },
  });
});

afterAll(async () => {
  await front?.close(0);
});

/** A raw connection that sent `request`: what came back so far, whether the server closed it, and a wait for an answer. */
function open(request: string): { socket: net.Socket; readonly text: string; readonly closed: boolean; until(done: (text: string) => boolean): Promise<void> } {
  const socket = net.connect(front.port, '127.0.0.1', () => socket.write(request));
  let text = '';
  let closed = false;
  const waiters: Array<() => void> = [];
  const wake = () => {
    for (const w of waiters.splice(0)) w();
  };
  socket.on('data', (c) => {
    text += c.toString();
    wake();
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    closed = true;
    wake();
  });
  return {
    socket,
    get text() {
      return text;
    },
    get closed() {
      return closed;
    },
    async until(done) {
      while (!done(text)) {
        if (closed) throw new Error(`closed before the answer; got ${JSON.stringify(text)}`);
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    },
  };
}

describe('the front, HTTP/1.1', () => {
  it('a request whose body has all come is not cut for its body time while its answer takes far longer; it is timed once answered', async () => {
    const body = 'x'.repeat(10);
    const conn = open(`POST /slow HTTP/1.1\r\nHost: t\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await slowBodyRead;
    // Time passing is what is tested: several sweeps (a tick is a quarter of the timeout) past the
    // request timeout, the connection is still open and nothing was answered …
    await new Promise((resolve) => setTimeout(resolve, REQUEST_MS * 4));
    expect(conn.closed).toBe(false);
    expect(conn.text).toBe('');
    releaseSlow!();
    // … and the answer then arrives whole on it.
    await conn.until((t) => t.endsWith(`\r\n\r\n${body}`));
    expect(conn.text).toMatch(/^HTTP\/1\.1 200 /);
    conn.socket.destroy();
    const timed = answered.filter((a) => a.url === '/slow');
    expect(timed).toHaveLength(1);
    expect(timed[0]!.seconds).toBeGreaterThanOrEqual((REQUEST_MS * 4) / 1000 - 0.05);
  });

  it('a body that stalls is still cut: 408 within its timeout, then the connection closed', async () => {
    const closed = await closedByServer(front.port, (s) => s.write('POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nhalf'));
    expect(closed.got).toMatch(/^HTTP\/1\.1 408 /);
    expect(closed.ms).toBeGreaterThanOrEqual(REQUEST_MS - 250);
    expect(closed.ms).toBeLessThanOrEqual(REQUEST_MS + MARGIN_MS + 2000);
    expect(answered.some((a) => a.url === '/echo')).toBe(false);
  });

  it('an answer sent before its body has all come is read by the client, and the connection then closes (lingering close); it is timed', async () => {
    const closed = await closedByServer(front.port, (s) => s.write('POST /early HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\nsome of it'));
    expect(closed.got).toMatch(/^HTTP\/1\.1 413 /);
    expect(closed.got.endsWith('\r\n\r\nno')).toBe(true);
    // The lingering close: our FIN after the answer, never a reset (which would destroy the answer unread).
    expect(closed.error).toBeUndefined();
    expect(answered.filter((a) => a.url === '/early')).toHaveLength(1);
  });

  it('a kept-alive connection serves request after request, each timed once', async () => {
    const before = answered.filter((a) => a.url === '/echo').length;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; i < 5; i++) {
      const text = await new Promise<string>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: front.port, path: '/echo', method: 'POST', agent }, (res) => {
          let t = '';
          res.on('data', (c) => (t += c));
          res.on('end', () => resolve(t));
        });
        req.on('error', reject);
        req.end(`hello ${i}`);
      });
      expect(text).toBe(`hello ${i}`);
    }
    agent.destroy();
    expect(answered.filter((a) => a.url === '/echo').length - before).toBe(5);
  });
});
