/**
 * One call to the served OVH API on the wire: its query id, its body read under the limit, and what
 * is sent back — JSON, an empty answer, or one of OVH's error bodies (ovhwire/errors.ts) — every answer
 * with an `X-Ovh-Queryid` header, as OVH's.
 */
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import type http2 from 'node:http2';
import { type OvhApiError, payloadTooLarge } from '../ovhwire/errors.js';

export type Req = http.IncomingMessage | http2.Http2ServerRequest;
export type Res = http.ServerResponse | http2.Http2ServerResponse;

let seq = 0;

/** A query id in OVH's shape: where, when (hex seconds), a sequence number, random hex. */
export function newQueryId(now = Date.now()): string {
  return `EU.dnsplane.${Math.floor(now / 1000).toString(16)}.${++seq}.${randomBytes(4).toString('hex')}`;
}

/** A header's value (the first when repeated). */
export function header(req: Req, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The body as sent ('' when none), or OVH's 413 once it is over `maxBytes` (the rest is not read). */
export async function readOvhBody(req: Req, maxBytes: number): Promise<string> {
  const declared = Number(header(req, 'content-length') ?? '0');
  if (declared > maxBytes) throw payloadTooLarge();
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > maxBytes) throw payloadTooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** What a route answers: JSON (status 200 unless said), or no body (a refresh's 204, a PUT's empty 200). */
export type Answer = { json: unknown; headers?: Record<string, string> } | { empty: 200 | 204 };

export function send(res: Res, queryId: string, answer: Answer): number {
  const headers: Record<string, string | number> = { 'X-Ovh-Queryid': queryId };
  if ('empty' in answer) {
    if (answer.empty !== 204) headers['Content-Length'] = 0;
    (res as http.ServerResponse).writeHead(answer.empty, headers);
    res.end();
    return answer.empty;
  }
  const text = JSON.stringify(answer.json);
  Object.assign(headers, answer.headers, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  (res as http.ServerResponse).writeHead(200, headers);
  res.end(text);
  return 200;
}

/**
 * An error answer as OVH sends it; over HTTP/1.1 a 413 closes the connection (the rest of the body
 * is not read; HTTP/2 has no such header: the stream ends).
 */
export function sendError(req: Req, res: Res, queryId: string, e: OvhApiError): number {
  const text = JSON.stringify(e.body);
  const headers: Record<string, string | number> = {
    ...e.headers,
    'X-Ovh-Queryid': queryId,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  };
  if (e.status === 413 && req.httpVersionMajor < 2) headers['Connection'] = 'close';
  (res as http.ServerResponse).writeHead(e.status, headers);
  res.end(text);
  return e.status;
}
