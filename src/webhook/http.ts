/**
 * The webhook's HTTP edge, before and after the protocol: which requests are served at all (path,
 * method, media type versions), the body read and parsed, and the reply a route returns. The statuses
 * are explained in handler.ts's header.
 */
import type http from 'node:http';
import { readBodyWithin } from '../api/front/body.js';
import type { Slicer } from '../core/slices.js';
import { JsonSyntaxError, parseJsonSteps, type JsonValue } from './json.js';
import type { WebhookRoute } from './metrics.js';
import { MEDIA_TYPE } from './protocol.js';

/** A status the handler itself decides (not the backend's). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** What a route answers; the handler writes it and logs one line for it. */
export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Fields for the request's log line. */
  log?: Record<string, unknown>;
}

export const TEXT_TYPE = 'text/plain; charset=utf-8';

export function mediaReply(body: string | Buffer, extra: Record<string, string> = {}): Reply {
  return { status: 200, headers: { 'content-type': MEDIA_TYPE, ...extra }, body };
}

const WEBHOOK_TYPE = 'application/external.dns.webhook+json';

/**
 * Whether a header asks only for other versions of the webhook media type. Anything else (absent,
 * `*`/`*`, application/json) is served: old external-dns versions send no Content-Type on POST.
 */
function otherVersionOnly(header: string | undefined): boolean {
  if (!header) return false;
  const items = header.split(',').map((s) => s.trim().toLowerCase());
  if (items.some((i) => i.startsWith('*/*'))) return false;
  const ours = items.filter((i) => i.startsWith(WEBHOOK_TYPE));
  return ours.length > 0 && !ours.some((i) => /;\s*version\s*=\s*"?1"?\s*(;|$)/.test(i));
}

/**
 * Whether a POST body announced with this Content-Type may be read as JSON: none (old external-dns
 * versions send none), application/json, the webhook media type of version 1 (or without a version),
 * or another `+json` type. Anything else (text/plain, a form) is 415: external-dns never sends it.
 */
function jsonContentType(header: string | undefined): boolean {
  if (header === undefined || header.trim() === '') return true;
  const type = header.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || type.endsWith('+json');
}

/** The metrics route of a request (webhook/metrics.ts). */
export function webhookRouteOf(method: string, path: string): WebhookRoute {
  if (path === '/') return 'negotiate';
  if (path === '/records') return method === 'POST' ? 'apply' : 'records';
  if (path === '/adjustendpoints') return 'adjust';
  return 'other';
}

const ALLOWED: Record<string, string[]> = { '/': ['GET'], '/records': ['GET', 'POST'], '/adjustendpoints': ['POST'] };

/** 404, 405, 406 or 415 for a request the protocol does not have; nothing for one it has. */
export function refuseUnserved(req: http.IncomingMessage, method: string, path: string): void {
  const allowed = ALLOWED[path];
  if (!allowed) throw new HttpError(404, `no such path: ${path} (the webhook serves /, /records, /adjustendpoints, /healthz)`);
  if (!allowed.includes(method)) throw new HttpError(405, `${method} ${path} is not served`, { allow: allowed.join(', ') });
  if (otherVersionOnly(req.headers.accept)) throw new HttpError(406, `this server speaks ${MEDIA_TYPE}`);
  if (method === 'POST' && (otherVersionOnly(req.headers['content-type']) || !jsonContentType(req.headers['content-type']))) {
    throw new HttpError(415, `this server reads ${MEDIA_TYPE} (a JSON body), not ${req.headers['content-type']}`);
  }
}

/** The body as text; past `max`, 413 with the connection closing, the rest drained (api/front/body.ts). */
export async function readWebhookBody(req: http.IncomingMessage, max: number): Promise<string> {
  const tooLarge = () => new HttpError(413, `the body is over ${max} bytes`, { connection: 'close' });
  if (Number(req.headers['content-length'] ?? '0') > max) throw tooLarge();
  return (await readBodyWithin(req, max, tooLarge)).toString('utf8');
}

/** The body's JSON, read in slices (a body may be 16 MB: no request holds the event loop for it). */
export async function parseBody(text: string, slicer: Slicer): Promise<JsonValue> {
  try {
    return await slicer.run(parseJsonSteps(text));
  } catch (e) {
    if (e instanceof JsonSyntaxError) throw new HttpError(400, `the body is not JSON: ${e.message}`);
    throw e;
  }
}
