/**
 * The API as a Node request handler: Connect, gRPC and gRPC-Web for every service server/server.ts
 * registers (behind its interceptors: authentication), plus what clients and tools around it expect:
 *
 * - grpc.health.v1 and gRPC server reflection (v1, v1alpha), without authentication: probes, meshes
 *   and grpcurl carry no token, and neither answer reveals anything but the public schema and
 *   whether the server is ready;
 * - CORS for the origins configured (DNSPLANE_CORS_ORIGINS; none by default): preflights answered,
 *   the Connect and gRPC-Web response headers exposed to the page;
 * - application/grpc-web-text (the default mode of Google's grpc-web client): the base64 body is
 *   decoded into gRPC-Web and the answer encoded back;
 * - 404, 405, 415 and 505 answers with a text body that says what is expected, instead of an empty
 *   one.
 */
import type http from 'node:http';
import type http2 from 'node:http2';
import type { DescService } from '@bufbuild/protobuf';
import { Code, ConnectError, cors, createConnectRouter, type ConnectRouter, type ConnectRouterOptions, type ContextValues } from '@connectrpc/connect';
import type { UniversalHandler, UniversalServerRequest, UniversalServerResponse } from '@connectrpc/connect/protocol';
import { compressionBrotli, compressionGzip, universalRequestFromNodeRequest, universalResponseToNodeResponse } from '@connectrpc/connect-node';
import type { Logger } from 'pino';
import { registerHealth, type HealthOptions } from './health.js';
import { registerReflection } from './reflection.js';
import { messageOf } from '../lib/error-message.js';

type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;

export interface ApiHandlerOptions extends ConnectRouterOptions {
  /** The API's services; they run behind `interceptors`. */
  routes: (router: ConnectRouter) => void;
  /** DNSPLANE_CORS_ORIGINS: origins allowed to call from a browser ("*": any); empty: none. */
  corsOrigins: string[];
  /** What grpc.health.v1 reports (the same as /readyz). */
  health: Omit<HealthOptions, 'services'>;
  log: Logger;
  /** Context values for a request (api/gate.ts hands over the tenant it authenticated). */
  contextValues?: (req: NodeRequest) => ContextValues;
}

/** The Connect-protocol headers a browser may send, plus our bearer token. */
export const CORS_ALLOWED_HEADERS = [...cors.allowedHeaders, 'Authorization'];
/** The response headers a page may read: gRPC-Web's status and message, Connect's encodings. */
export const CORS_EXPOSED_HEADERS = [...cors.exposedHeaders];

const SUPPORTED_CONTENT_TYPES = [
  'application/json or application/proto (Connect unary)',
  'application/connect+json or application/connect+proto (Connect streaming)',
  'application/grpc, application/grpc+proto or application/grpc+json (gRPC, over HTTP/2)',
  'application/grpc-web, application/grpc-web+proto, application/grpc-web+json or application/grpc-web-text (gRPC-Web)',
];

export function apiHandler(opts: ApiHandlerOptions): (req: NodeRequest, res: NodeResponse) => void {
  const { routes, corsOrigins, health, log, contextValues, ...routerOptions } = opts;
  routerOptions.acceptCompression ??= [compressionGzip, compressionBrotli];
  const api = createConnectRouter(routerOptions);
  routes(api);
  // Health and reflection: the same options without the interceptors (no authentication).
  const tooling = createConnectRouter({ ...routerOptions, interceptors: [] });
  const handlers = (): UniversalHandler[] => [...api.handlers, ...tooling.handlers];
  const services = (): DescService[] => [...new Map(handlers().map((h) => [h.service.typeName, h.service])).values()];
  registerHealth(tooling, { ...health, services: () => services().map((s) => s.typeName) });
  registerReflection(tooling, services);

  const paths = new Map(handlers().map((h) => [h.requestPath, h]));
  const getMethods = handlers()
    .filter((h) => h.allowedMethods.includes('GET'))
    .map((h) => h.requestPath.slice(1));
  const allowOrigin = corsPolicy(corsOrigins);

  return (req, res) => {
    const origin = header(req, 'origin');
    const allowed = origin !== undefined && allowOrigin(origin);
    if (req.method === 'OPTIONS') return options(req, res, origin, allowed);
    setCorsHeaders(res, origin, allowed);

    const path = (req.url ?? '').split('?', 1)[0] ?? '';
    const handler = paths.get(path);
    if (!handler) return text(res, 404, notFound(path, services()));
    let uReq: UniversalServerRequest;
    try {
      uReq = universalRequestFromNodeRequest(req, res as http.ServerResponse, undefined, contextValues?.(req));
    } catch (e) {
      return text(res, 400, `${messageOf(e)}\n`);
    }
    const webText = isGrpcWebText(uReq.header.get('content-type'));
    if (webText) uReq = fromGrpcWebText(uReq);
    handler(uReq)
      .then((uRes) => explain(handler, uReq, webText ? toGrpcWebText(uRes) : uRes, getMethods))
      .then((uRes) => universalResponseToNodeResponse(uRes, res as http.ServerResponse))
      .catch((reason: unknown) => {
        if (ConnectError.from(reason).code === Code.Aborted) return;
        log.error({ err: messageOf(reason), rpc: path }, 'writing the answer failed');
      });
  };
}

/**
 * The CORS headers of an answer (not a preflight) to an allowed origin. Also set by server/server.ts before
 * the token gate (api/gate.ts), so that a browser on a listed origin can read an early refusal.
 */
export function corsHeaders(origins: string[]): (req: NodeRequest, res: NodeResponse) => void {
  const allowOrigin = corsPolicy(origins);
  return (req, res) => {
    const origin = header(req, 'origin');
    setCorsHeaders(res, origin, origin !== undefined && allowOrigin(origin));
  };
}

function setCorsHeaders(res: NodeResponse, origin: string | undefined, allowed: boolean): void {
  if (allowed && origin !== undefined) {
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Expose-Headers', CORS_EXPOSED_HEADERS.join(', '));
  }
  if (origin !== undefined) res.setHeader('Vary', 'Origin');
}

/** Origins as configured: exact match ("https://app.example.com"), or "*" for any. */
function corsPolicy(origins: string[]): (origin: string) => boolean {
  const set = new Set(origins);
  return (origin) => set.has('*') || set.has(origin);
}

function options(req: NodeRequest, res: NodeResponse, origin: string | undefined, allowed: boolean): void {
  const requestedMethod = header(req, 'access-control-request-method');
  if (origin === undefined || requestedMethod === undefined) {
    res.setHeader('Allow', 'POST, GET, OPTIONS');
    text(res, 204, '');
    return;
  }
  res.setHeader('Vary', 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers');
  if (!allowed) {
    text(
      res,
      403,
      `CORS: origin ${origin} is not allowed to call this API; list it in DNSPLANE_CORS_ORIGINS (comma-separated origins such as https://console.example.com)\n`,
    );
    return;
  }
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Access-Control-Allow-Methods', cors.allowedMethods.join(', '));
  res.setHeader('Access-Control-Allow-Headers', CORS_ALLOWED_HEADERS.join(', '));
  res.setHeader('Access-Control-Max-Age', '7200');
  text(res, 204, '');
}

function header(req: NodeRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function text(res: NodeResponse, status: number, body: string): void {
  const r = res as http.ServerResponse;
  if (status === 204) {
    r.writeHead(204);
    r.end();
    return;
  }
  r.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  r.end(body);
}

function notFound(path: string, services: DescService[]): string {
  const m = /^\/([^/]+)\/([^/]+)$/.exec(path);
  const service = m ? services.find((s) => s.typeName === m[1]) : undefined;
  if (service) {
    return `${service.typeName} has no method "${m![2]}"; its methods: ${service.methods.map((x) => x.name).join(', ')}\n`;
  }
  return (
    `no route for ${JSON.stringify(path)}. This port serves RPCs at /<service>/<method> ` +
    `(Connect, gRPC and gRPC-Web; POST, or GET for read-only RPCs) for ${services.map((s) => s.typeName).join(', ')}; ` +
    'and /healthz, /readyz and /metrics.\n'
  );
}

/** The empty protocol-level refusals of connect's negotiation, given a body that says what is expected. */
function explain(handler: UniversalHandler, req: UniversalServerRequest, res: UniversalServerResponse, getMethods: string[]): UniversalServerResponse {
  if (res.body !== undefined) return res;
  const rpc = handler.requestPath.slice(1);
  let message: string | undefined;
  const header = new Headers(res.header);
  if (res.status === 415) {
    const got = req.header.get('content-type');
    message = `unsupported content-type ${got ? JSON.stringify(got) : '(none)'} for ${rpc}; send one of:\n${SUPPORTED_CONTENT_TYPES.map((t) => `  ${t}\n`).join('')}`;
    header.set(
      'Accept-Post',
      'application/json, application/proto, application/connect+json, application/connect+proto, application/grpc, application/grpc-web, application/grpc-web-text',
    );
  } else if (res.status === 405) {
    const get = handler.allowedMethods.includes('GET');
    message = get
      ? `method ${req.method} not allowed for ${rpc}: use POST, or GET with the Connect query form (?connect=v1&encoding=json&message=...)\n`
      : `method ${req.method} not allowed for ${rpc}: use POST. Connect GET works only for read-only RPCs: ${getMethods.join(', ')}\n`;
    header.set('Allow', handler.allowedMethods.join(', '));
  } else if (res.status === 505) {
    message = `${rpc} is a bidirectional stream: call it over HTTP/2 (h2c on this port), not HTTP/${req.httpVersion}\n`;
  }
  if (message === undefined) return res;
  header.set('content-type', 'text/plain; charset=utf-8');
  const bytes = new TextEncoder().encode(message);
  return { ...res, header, body: once(bytes) };
}

async function* once(chunk: Uint8Array): AsyncIterable<Uint8Array> {
  yield chunk;
}

// --- application/grpc-web-text ------------------------------------------------------------------

const GRPC_WEB_TEXT = /^application\/grpc-web-text(\+proto)?\s*(;.*)?$/i;

export function isGrpcWebText(contentType: string | null): boolean {
  return contentType !== null && GRPC_WEB_TEXT.test(contentType);
}

/** The request as binary gRPC-Web: the base64 body decoded as it arrives. */
function fromGrpcWebText(req: UniversalServerRequest): UniversalServerRequest {
  const header = new Headers(req.header);
  header.set('content-type', 'application/grpc-web+proto');
  const body = req.body;
  if (!isByteStream(body)) return { ...req, header };
  return { ...req, header, body: decodeBase64Stream(body) };
}

/** The answer as grpc-web-text: each chunk (each framed message, the trailers) base64 encoded with its padding. */
function toGrpcWebText(res: UniversalServerResponse): UniversalServerResponse {
  const header = new Headers(res.header);
  const type = header.get('content-type');
  if (type?.startsWith('application/grpc-web')) header.set('content-type', type.replace(/^application\/grpc-web(\+proto)?/, 'application/grpc-web-text+proto'));
  if (!res.body) return { ...res, header };
  const body = res.body;
  return {
    ...res,
    header,
    body: (async function* () {
      for await (const chunk of body) yield new TextEncoder().encode(Buffer.from(chunk).toString('base64'));
    })(),
  };
}

function isByteStream(body: unknown): body is AsyncIterable<Uint8Array> {
  return typeof body === 'object' && body !== null && Symbol.asyncIterator in body;
}

/**
 * Decodes base64 that arrives in pieces. Clients may pad each message on its own, so the text is
 * decoded in segments that end at padding (a plain decoder stops at the first "=").
 */
export async function* decodeBase64Stream(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  let rest = '';
  for await (const chunk of body) {
    rest += Buffer.from(chunk).toString('latin1').replace(/\s+/g, '');
    const whole = rest.length - (rest.length % 4);
    if (whole === 0) continue;
    yield decodeBase64Groups(rest.slice(0, whole));
    rest = rest.slice(whole);
  }
  if (rest.length > 0) {
    throw new ConnectError('application/grpc-web-text: the body is not base64 (its length is not a multiple of 4)', Code.InvalidArgument);
  }
}

function decodeBase64Groups(text: string): Uint8Array {
  const parts: Buffer[] = [];
  for (const segment of text.match(/[^=]*=*/g) ?? []) {
    if (segment === '') continue;
    if (segment.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(segment)) {
      throw new ConnectError('application/grpc-web-text: the body is not base64', Code.InvalidArgument);
    }
    parts.push(Buffer.from(segment, 'base64'));
  }
  return Buffer.concat(parts);
}
