/**
 * Answering an RPC before Connect handles it: a ConnectError written as Connect writes it, in the
 * protocol the request speaks.
 * - gRPC and gRPC-Web (Content-Type application/grpc…): trailers-only, HTTP 200 with grpc-status and
 *   grpc-message (percent-encoded) in the headers and no body;
 * - anything else, Connect: the HTTP status codeToHttpStatus gives the code, and the Connect JSON
 *   error body (errorToJsonBytes).
 * The one place outside Connect that knows this: api/gate.ts (login limiter and token, before the
 * body is read) and api/records-json.ts (Records in JSON from the cache) both answer through it.
 *
 * bodyUnread: the body was not read and never will be. HTTP/1.1 then answers with `connection:
 * close`, so that Node does not read (and discard) the body to reuse the connection; over h2 a small
 * body is read and discarded, so that the stream ends cleanly on both sides (a gRPC client still
 * sending its request takes a reset of the stream, even RST_STREAM NO_ERROR, as a failure and reports
 * "internal" instead of the status it was sent), and past DISCARD_LIMIT the upload of a body nobody
 * will read is stopped with RST_STREAM NO_ERROR.
 */
import type http from 'node:http';
import type http2 from 'node:http2';
import type { ConnectError } from '@connectrpc/connect';
import { codeToHttpStatus, errorToJsonBytes } from '@connectrpc/connect/protocol-connect';

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

export interface EarlyAnswerOptions {
  /** Extra response headers (retry-after, say). */
  headers?: Record<string, string>;
  /** The request's body was not read, and will not be (see above). */
  bodyUnread?: boolean;
}

/** Answers the request with error, as Connect would, in the request's protocol. */
export function answerError(req: Req, res: Res, error: ConnectError, opts: EarlyAnswerOptions = {}): void {
  const type = String(req.headers['content-type'] ?? '');
  const h1 = (req as http.IncomingMessage).httpVersionMajor === 1;
  const close: Record<string, string> = opts.bodyUnread && h1 ? { connection: 'close' } : {};
  const w = res as http.ServerResponse;
  if (type.startsWith('application/grpc')) {
    // Trailers-only: the status in the headers, no body (valid for gRPC and gRPC-Web alike).
    w.writeHead(200, {
      'content-type': type.split(';')[0]!,
      'grpc-status': String(error.code),
      'grpc-message': encodeURIComponent(error.rawMessage),
      ...opts.headers,
      ...close,
    });
    w.end();
  } else {
    const body = errorToJsonBytes(error, {});
    w.writeHead(codeToHttpStatus(error.code), { 'content-type': 'application/json', 'content-length': String(body.byteLength), ...opts.headers, ...close });
    w.end(body);
  }
  if (opts.bodyUnread) discardBody(req);
}

/** h2: a refused request's body is discarded up to this much, then its stream is reset. */
const DISCARD_LIMIT = 64 * 1024;

function discardBody(req: Req): void {
  const stream = (req as http2.Http2ServerRequest).stream;
  if (!stream || stream.destroyed) return;
  let seen = 0;
  const body = req as http2.Http2ServerRequest;
  body.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > DISCARD_LIMIT && !stream.destroyed) stream.close();
  });
  body.resume();
}
