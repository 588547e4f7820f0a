/**
 * What went wrong talking to OVH. `status` is the HTTP status, 0 when no answer came (connection
 * refused, reset, timeout). `kind` is what core needs to decide: retry, undo, or report.
 */
export type OvhErrorKind =
  | 'not_found' // 404
  | 'bad_request' // 400 other than a signature problem
  | 'auth' // 400 INVALID_SIGNATURE, 403 credentials / not granted
  | 'rate_limited' // 429
  | 'unavailable' // 5xx, 408
  | 'network' // no answer
  | 'unknown';

export class OvhError extends Error {
  override readonly name = 'OvhError';
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly kind: OvhErrorKind,
    readonly ovhMessage: string,
    readonly queryId?: string,
    readonly retryAfterMs?: number,
  ) {
    super(
      `OVH ${method} ${path} failed: ${status === 0 ? 'no answer' : `HTTP ${status}`}` +
        (ovhMessage ? ` (${ovhMessage})` : '') +
        (queryId ? ` [query id ${queryId}]` : ''),
    );
  }

  /** Whether sending the same request again may succeed (OVH down, rate limited, no answer). */
  get transient(): boolean {
    return this.kind === 'rate_limited' || this.kind === 'unavailable' || this.kind === 'network';
  }
}

export function kindOfStatus(status: number, message: string): OvhErrorKind {
  if (status === 0) return 'network';
  if (status === 404) return 'not_found';
  if (status === 429) return 'rate_limited';
  if (status === 408 || status >= 500) return 'unavailable';
  if (status === 403 || (status === 400 && /signature|credential|application key/i.test(message))) return 'auth';
  if (status === 400) return 'bad_request';
  return 'unknown';
}
