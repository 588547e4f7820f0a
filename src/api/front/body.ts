/**
 * A request body read under a limit, for the handlers behind the HTTP front. Past the limit it is
 * refused (the promise rejects with `refusal()`) and what still arrives is read and dropped, never
 * left unread and never cut: the handler answers the refusal with the connection closing, and the
 * front's lingering close (clocks.ts) drains the rest so that the client reads the answer. (Stopping
 * to read, or destroying the request, would make the kernel answer the bytes still coming with a
 * reset, which destroys the answer.)
 */
import type http from 'node:http';

export function readBodyWithin(req: http.IncomingMessage, maxBytes: number, refusal: () => Error): Promise<Buffer> {
  return new Promise((resolve, reject) => readBodyThen(req, maxBytes, refusal, (err, body) => (err ? reject(err) : resolve(body!))));
}

/** readBodyWithin, answered to a callback: no promise (a poll's hot path, api/records-json.ts). Called once. */
export function readBodyThen(req: http.IncomingMessage, maxBytes: number, refusal: () => Error, done: (err: unknown, body?: Buffer) => void): void {
  let chunks: Buffer[] = [];
  let size = 0;
  // done is called once: with the refusal, the body, or the first error. (No named closure for it:
  // tsx's keepNames would define a name property on it per request, on the poll path.)
  let called = false;
  req.on('data', (c: Buffer) => {
    size += c.length;
    if (size <= maxBytes) chunks.push(c);
    else if (size - c.length <= maxBytes && !called) {
      chunks = [];
      called = true;
      done(refusal());
    }
  });
  req.on('end', () => {
    if (size > maxBytes || called) return;
    called = true;
    done(undefined, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
  });
  req.on('error', (e) => {
    if (called) return;
    called = true;
    done(e);
  });
}
