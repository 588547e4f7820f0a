/**
 * In front of Connect, for every RPC: the failed-login limiter (per client address), then the token,
 * both before Connect reads the body. A flood of bad tokens then costs a hash and one indexed lookup
 * per request (or nothing, once its address is limited), never an 8 MiB body read, and a refused
 * request is answered in its own protocol (Connect, gRPC, gRPC-Web) without reading the body.
 *
 * The tenant found here rides to authInterceptor through the context values (preAuthenticated).
 */
import type http from 'node:http';
import type http2 from 'node:http2';
import { Code, ConnectError, createContextValues, type ContextValues } from '@connectrpc/connect';
import { codeToHttpStatus, errorToJsonBytes } from '@connectrpc/connect/protocol-connect';
import type { Logger } from 'pino';
import type { CoreContext } from '../core/context.js';
import { UnauthenticatedError } from '../core/errors.js';
import type { LoginLimiter } from '../core/login-limiter.js';
import { authenticate, type Tenant } from '../core/tenants.js';
import { bearerToken, kTenant } from './auth.js';

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

const authenticated = new WeakMap<object, Tenant>();

/** connectNodeAdapter's contextValues: the tenant the gate found for this request, if any. */
export function preAuthenticated(req: object): ContextValues {
  const values = createContextValues();
  const t = authenticated.get(req);
  if (t) values.set(kTenant, t);
  return values;
}

/** Answers an RPC with an error in the protocol the client speaks, without reading its body. */
export function rejectRpc(req: Req, res: Res, error: ConnectError, headers: Record<string, string> = {}): void {
  const type = String(req.headers['content-type'] ?? '');
  const h1 = (req as http.IncomingMessage).httpVersionMajor === 1;
  // HTTP/1.1: close, so that Node does not read (and discard) the body to reuse the connection.
  const close: Record<string, string> = h1 ? { connection: 'close' } : {};
  const w = res as http.ServerResponse;
  if (type.startsWith('application/grpc')) {
    // Trailers-only: the status in the headers, no body (valid for gRPC and gRPC-Web alike).
    w.writeHead(200, {
      'content-type': type.split(';')[0]!,
      'grpc-status': String(error.code),
      'grpc-message': encodeURIComponent(error.rawMessage),
      ...headers,
      ...close,
    });
  } else {
    w.writeHead(codeToHttpStatus(error.code), { 'content-type': 'application/json', ...headers, ...close });
    w.end(Buffer.from(errorToJsonBytes(error, {})));
    afterReject(req);
    return;
  }
  w.end();
  afterReject(req);
}

/** h2: a refused request's body is discarded up to this much, then its stream is reset. */
const DISCARD_LIMIT = 64 * 1024;

function afterReject(req: Req): void {
  // h2: a small body is read and discarded, so that the stream ends cleanly on both sides (a gRPC
  // client still sending its request takes a reset of the stream, even RST_STREAM NO_ERROR, as a
  // failure and reports "internal" instead of the status it was sent). Past DISCARD_LIMIT the upload
  // of a body nobody will read is stopped with RST_STREAM NO_ERROR.
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

export function rpcGate(ctx: CoreContext, limiter: LoginLimiter, log: Logger): (req: Req, res: Res, next: () => void) => void {
  return (req, res, next) => {
    const address = req.socket?.remoteAddress ?? 'unknown';
    const header = req.headers['authorization'];
    const token = bearerToken(typeof header === 'string' ? header : null);
    const wait = limiter.check(address, token);
    if (wait !== undefined) {
      rejectRpc(req, res, new ConnectError(`too many failed logins from ${address}; try again in ${wait} s`, Code.ResourceExhausted), { 'retry-after': String(wait) });
      return;
    }
    authenticate(ctx.pool, token, ctx.tokens).then(
      (tenant) => {
        if (token) limiter.succeeded(address, token);
        authenticated.set(req, tenant);
        next();
      },
      (e: unknown) => {
        if (e instanceof UnauthenticatedError) {
          limiter.failed(address);
          rejectRpc(req, res, new ConnectError(e.message, Code.Unauthenticated));
          return;
        }
        // The database, say: Connect's interceptor answers it as it would any failure.
        log.debug({ err: e instanceof Error ? e.message : String(e) }, 'authentication before the body failed; left to the interceptor');
        next();
      },
    );
  };
}
