/**
 * What the routes that answer a Connect unary JSON request themselves (api/records-json.ts,
 * api/plan-json.ts; api/import-txt-route.ts binary requests too) share: which requests they may take, and reading the body under Connect's limit.
 * Their errors are answered by api/early-answer.ts.
 */
import type http from 'node:http';
import { fromJson, fromJsonString, type DescMessage, type JsonValue, type MessageShape } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import type { Logger } from 'pino';
import { clientAddress } from '../net/client-address.js';
import { answerError } from './early-answer.js';
import { readBodyThen, readBodyWithin } from './front/body.js';
import { loggedConnectError } from './errors.js';
import { checkJson } from './strict.js';

/**
 * A request such a route fully understands: POST to `path`, Content-Type application/json (utf-8),
 * no request compression, no Connect timeout header, no Origin (browsers get Connect's CORS
 * handling). Every other request goes to Connect.
 */
export function isUnaryJson(req: http.IncomingMessage, path: string): boolean {
  return isUnaryConnect(req, path) === 'json';
}

/**
 * isUnaryJson, the binary format (Content-Type application/proto) accepted too: which of the two the
 * request speaks, or undefined when Connect answers it. `withTimeout`: a `connect-timeout-ms` header
 * accepted as well (the route then reads it as Connect does).
 */
export function isUnaryConnect(req: http.IncomingMessage, path: string, withTimeout = false): 'json' | 'proto' | undefined {
  if (req.method !== 'POST' || req.url !== path) return undefined;
  const raw = req.headers['content-type'];
  // (what every client sends, compared as is; any other spelling normalized)
  const type = raw === 'application/json' || raw === 'application/proto' ? raw : (raw ?? '').toLowerCase().replace(/\s+/g, '');
  const format = type === 'application/json' || type === 'application/json;charset=utf-8' ? 'json' : type === 'application/proto' ? 'proto' : undefined;
  if (format === undefined) return undefined;
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'identity') return undefined;
  return (withTimeout || req.headers['connect-timeout-ms'] === undefined) && req.headers.origin === undefined ? format : undefined;
}

/**
 * A request's JSON read as Connect reads it with strictJsonOptions (api/strict.ts): unknown keys and
 * enum names refused, naming the field; a body that is not JSON refused in protobuf-es's words; every
 * refusal INVALID_ARGUMENT.
 */
export function parseJsonRequest<Desc extends DescMessage>(schema: Desc, text: string): MessageShape<Desc> {
  try {
    let parsed: JsonValue;
    try {
      parsed = JSON.parse(text) as JsonValue;
    } catch {
      return fromJsonString(schema, text, { ignoreUnknownFields: false }); // not JSON: protobuf-es says so, as under Connect
    }
    checkJson(schema, parsed, '');
    return fromJson(schema, parsed, { ignoreUnknownFields: false });
  } catch (e) {
    throw ConnectError.from(e, Code.InvalidArgument);
  }
}

/** The body, refused past `maxBytes` as Connect refuses it (readMaxBytes); the rest drained (api/front/body.ts). */
export function readConnectBody(req: http.IncomingMessage, maxBytes: number): Promise<Buffer> {
  return readBodyWithin(req, maxBytes, () => tooLarge(maxBytes));
}

/** readConnectBody, answered to a callback (no promise). */
export function readConnectBodyThen(req: http.IncomingMessage, maxBytes: number, done: (err: unknown, body?: Buffer) => void): void {
  readBodyThen(req, maxBytes, () => tooLarge(maxBytes), done);
}

function tooLarge(maxBytes: number): ConnectError {
  return new ConnectError(`message size is larger than configured readMaxBytes ${maxBytes}`, Code.ResourceExhausted);
}

/** A JSON answer (uncompressed: identity is always allowed). */
export function replyJson(res: http.ServerResponse, body: string): void {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/**
 * A JSON answer already encoded (its length is known: no scan, no encoding per request), in one piece
 * or in pieces written as they are (kept encodings of several zones: joined into one new buffer per
 * answer, megabytes that outlive a few scavenges while a client reads them, they made V8 run a full
 * collection of the whole heap every ~64 MB of answers — bench/estate's steady state).
 */
export function replyJsonBytes(res: http.ServerResponse, body: Buffer | readonly Buffer[]): void {
  const parts: readonly Buffer[] = Buffer.isBuffer(body) ? [body] : (body as readonly Buffer[]);
  let length = 0;
  for (const p of parts) length += p.length;
  res.writeHead(200, ['content-type', 'application/json', 'content-length', String(length)]);
  if (parts.length === 1) {
    res.end(parts[0]);
    return;
  }
  res.cork();
  for (const p of parts) res.write(p);
  res.end();
  res.uncork();
}

/**
 * Runs a route's answer, `work`, for one request: an error it throws is mapped as Connect maps it
 * (api/errors.ts), logged as Connect's interceptors log it, and answered as Connect answers it
 * (api/early-answer.ts); once the answer has started, the request is cut instead.
 */
export function answerWith(req: http.IncomingMessage, res: http.ServerResponse, log: Logger, rpc: string, work: () => Promise<void>): void {
  work().catch((e: unknown) => {
    const ce = loggedConnectError(e, log, rpc, clientAddress(req));
    // A body not all read (refused past the limit) is not read to its end: the connection closes.
    if (!res.headersSent) answerError(req, res, ce, { bodyUnread: !req.complete });
    else res.destroy();
  });
}
