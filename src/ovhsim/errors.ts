/**
 * OVH's error answers. Two shapes exist on the real API:
 * - the API's own errors: `{"class":"Client::NotFound","message":"…"}`;
 * - the authentication layer's: `{"errorCode":"INVALID_SIGNATURE","httpCode":"400 Bad Request","message":"…"}`.
 */

export type OvhErrorBody =
  | { class: string; message: string }
  | { errorCode: string; httpCode: string; message: string };

/** An error answer; thrown by validation and routing, turned into the HTTP answer by the server. */
export class SimApiError extends Error {
  override readonly name = 'SimApiError';
  constructor(
    readonly status: number,
    readonly body: OvhErrorBody,
    readonly headers: Record<string, string> = {},
  ) {
    super(`${status} ${body.message}`);
  }
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Payload Too Large',
  429: 'Too Many Requests',
  460: 'Client Error',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

export function reasonPhrase(status: number): string {
  return REASONS[status] ?? (status >= 500 ? 'Server Error' : 'Client Error');
}

// --- the API's errors ---

export function badRequest(message: string): SimApiError {
  return new SimApiError(400, { class: 'Client::BadRequest', message });
}

export function serviceNotFound(): SimApiError {
  return new SimApiError(404, { class: 'Client::NotFound', message: 'This service does not exist' });
}

export function objectNotFound(id: string): SimApiError {
  return new SimApiError(404, { class: 'Client::NotFound', message: `The requested object (id = ${id}) does not exist` });
}

/** Unknown path (OVH: "Got an invalid (or empty) URL"). */
export function routeNotFound(): SimApiError {
  return new SimApiError(404, { class: 'Client::NotFound', message: 'Got an invalid (or empty) URL' });
}

/** Known path, method not offered. Assumed shape. */
export function methodNotAllowed(allowed: readonly string[]): SimApiError {
  return new SimApiError(
    405,
    { class: 'Client::MethodNotAllowed', message: 'Method not allowed' },
    { Allow: allowed.join(', ') },
  );
}

// --- the authentication layer's errors ---

function authError(status: number, errorCode: string, message: string): SimApiError {
  return new SimApiError(status, { errorCode, httpCode: `${status} ${reasonPhrase(status)}`, message });
}

/** No X-Ovh-Application / X-Ovh-Consumer / X-Ovh-Signature. Message and status assumed. */
export function notCredential(): SimApiError {
  return authError(403, 'NOT_CREDENTIAL', 'You must login first');
}

export function invalidKey(): SimApiError {
  return authError(403, 'INVALID_KEY', 'This application key is invalid');
}

export function invalidCredential(): SimApiError {
  return authError(403, 'INVALID_CREDENTIAL', 'This credential is not valid');
}

export function invalidSignature(): SimApiError {
  return authError(400, 'INVALID_SIGNATURE', 'Invalid signature');
}

/** Timestamp too far from the server's time. Message assumed. */
export function queryTimeOut(): SimApiError {
  return authError(400, 'QUERY_TIME_OUT', 'Query out of time');
}

// --- default bodies for injected faults ---

const DEFAULT_FAULT_BODIES: Record<number, { class: string; message: string }> = {
  400: { class: 'Client::BadRequest', message: 'Bad request' },
  401: { class: 'Client::Unauthorized', message: 'You must login first' },
  403: { class: 'Client::Forbidden', message: 'This call has not been granted' },
  409: { class: 'Client::Conflict', message: 'Conflict' },
  429: { class: 'Client::TooManyRequests', message: 'Too many requests' },
  500: { class: 'Server::InternalServerError', message: 'Internal server error' },
  502: { class: 'Server::BadGateway', message: 'Bad gateway' },
  503: { class: 'Server::ServiceUnavailable', message: 'Service is temporarily unavailable' },
  504: { class: 'Server::GatewayTimeout', message: 'Gateway timeout' },
};

/**
 * The body an injected `{status}` fault sends when it gives none. A 404 names what the path points at:
 * a record (`The requested object (id = …) does not exist`), a zone, or nothing known.
 */
export function defaultFaultBody(status: number, path: string): OvhErrorBody {
  if (status === 404) {
    const record = /^\/domain\/zone\/[^/]+\/record\/([^/]+)$/.exec(path);
    if (record?.[1] !== undefined) return objectNotFound(record[1]).body;
    if (/^\/domain\/zone\/[^/]+/.test(path)) return serviceNotFound().body;
    return routeNotFound().body;
  }
  const known = DEFAULT_FAULT_BODIES[status];
  if (known) return { ...known };
  const family = status >= 500 ? 'Server' : 'Client';
  const reason = reasonPhrase(status);
  return { class: `${family}::${reason.replace(/\s+/g, '')}`, message: reason };
}
