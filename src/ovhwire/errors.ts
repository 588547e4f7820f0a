/**
 * OVH's error answers, as its API sends them. Two shapes exist on the real API:
 * - the API's own errors: `{"class":"Client::NotFound","message":"…"}`;
 * - the authentication layer's: `{"errorCode":"INVALID_SIGNATURE","httpCode":"400 Bad Request","message":"…"}`.
 * The simulator (ovhsim/) answers with them as OVH, and so does the OVH API dnsplane serves (ovhapi/).
 * Messages marked "assumed" were not confirmed by a public source (REFERENCE.md §1).
 */

export type OvhErrorBody = { class: string; message: string } | { errorCode: string; httpCode: string; message: string };

/** An error answer: its status, its body, the headers it carries beyond X-Ovh-Queryid. */
export class OvhApiError extends Error {
  override readonly name = 'OvhApiError';
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

/** The class and message OVH's API answers for a status when nothing more precise is known. */
const STATUS_BODIES: Record<number, { class: string; message: string }> = {
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

/** The API's body for a status: the known one, else `{Client|Server}::<Reason>` with the reason as message. */
export function statusBody(status: number): { class: string; message: string } {
  const known = STATUS_BODIES[status];
  if (known) return { ...known };
  const family = status >= 500 ? 'Server' : 'Client';
  const reason = reasonPhrase(status);
  return { class: `${family}::${reason.replace(/\s+/g, '')}`, message: reason };
}

// --- the API's errors ---

export function badRequest(message: string): OvhApiError {
  return new OvhApiError(400, { class: 'Client::BadRequest', message });
}

export function serviceNotFound(): OvhApiError {
  return new OvhApiError(404, { class: 'Client::NotFound', message: 'This service does not exist' });
}

export function objectNotFound(id: string): OvhApiError {
  return new OvhApiError(404, { class: 'Client::NotFound', message: `The requested object (id = ${id}) does not exist` });
}

/** Unknown path (OVH: "Got an invalid (or empty) URL"). */
export function routeNotFound(): OvhApiError {
  return new OvhApiError(404, { class: 'Client::NotFound', message: 'Got an invalid (or empty) URL' });
}

/** Known path, method not offered. Assumed shape. */
export function methodNotAllowed(allowed: readonly string[]): OvhApiError {
  return new OvhApiError(405, { class: 'Client::MethodNotAllowed', message: 'Method not allowed' }, { Allow: allowed.join(', ') });
}

/** A body over the limit. Assumed shape (OVH's limit is not known). */
export function payloadTooLarge(): OvhApiError {
  return new OvhApiError(413, { class: 'Client::PayloadTooLarge', message: 'Request body too large' });
}

/** Rate limited, with the seconds to wait. 429 on /1.0 is assumed (REFERENCE.md §1). */
export function tooManyRequests(retryAfterSeconds: number, message = 'Too many requests'): OvhApiError {
  return new OvhApiError(429, { ...statusBody(429), message }, { 'Retry-After': String(retryAfterSeconds) });
}

/** The API's answer for a failure on its side (500, 503, …), with its usual body or this message. */
export function serverError(status: number, message?: string): OvhApiError {
  const body = statusBody(status);
  return new OvhApiError(status, message === undefined ? body : { ...body, message });
}

// --- the authentication layer's errors ---

function authError(status: number, errorCode: string, message: string): OvhApiError {
  return new OvhApiError(status, { errorCode, httpCode: `${status} ${reasonPhrase(status)}`, message });
}

/** No X-Ovh-Application / X-Ovh-Consumer / X-Ovh-Signature. Message and status assumed. */
export function notCredential(): OvhApiError {
  return authError(403, 'NOT_CREDENTIAL', 'You must login first');
}

export function invalidKey(): OvhApiError {
  return authError(403, 'INVALID_KEY', 'This application key is invalid');
}

/** A consumer key that is not valid (expired, its user disabled); `message` for one that does not exist. */
export function invalidCredential(message = 'This credential is not valid'): OvhApiError {
  return authError(403, 'INVALID_CREDENTIAL', message);
}

export function invalidSignature(): OvhApiError {
  return authError(400, 'INVALID_SIGNATURE', 'Invalid signature');
}

/** Timestamp too far from the server's time. Message assumed. */
export function queryTimeOut(): OvhApiError {
  return authError(400, 'QUERY_TIME_OUT', 'Query out of time');
}

/** A call the consumer key's access rules do not grant; `detail` is appended to OVH's message. */
export function notGrantedCall(detail?: string): OvhApiError {
  return authError(403, 'NOT_GRANTED_CALL', `This call has not been granted${detail ? ` (${detail})` : ''}`);
}
