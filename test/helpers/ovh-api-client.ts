/**
 * Raw calls to the OVH API dnsplane serves, signed as go-ovh signs them (the configured endpoint URL +
 * the path, `http://127.0.0.1:PORT/ovh/1.0/…`), to see what a client library hides: the status, the
 * headers (X-Ovh-Queryid, paging) and the exact body. Every part of the signature can be made wrong.
 */
import { signRequest } from '../../src/ovhwire/signature.js';

export interface OvhKeyValues {
  applicationKey: string;
  applicationSecret: string;
  consumerKey: string;
}

export interface OvhCallOptions {
  /** A JSON value (sent as go-ovh sends it), or the exact text to send. */
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
  /** Unsigned, as GET /auth/time. */
  unsigned?: boolean;
  /** Sign these instead of the true values. */
  sign?: { secret?: string; url?: string; timestamp?: number; body?: string; method?: string };
  /** Send this timestamp (default: now). */
  timestamp?: number;
}

export interface OvhCallAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** The body as JSON, when it is. */
  json: unknown;
}

/** `base`: http://127.0.0.1:PORT/ovh/1.0; `path`: relative to it, with its query. */
export async function ovhCall(base: string, key: OvhKeyValues | undefined, method: string, path: string, opts: OvhCallOptions = {}): Promise<OvhCallAnswer> {
  const url = `${base}${path}`;
  const body = opts.rawBody ?? (opts.body === undefined ? '' : JSON.stringify(opts.body));
  const headers: Record<string, string> = { Accept: 'application/json', ...(body !== '' ? { 'Content-Type': 'application/json;charset=utf-8' } : {}) };
  if (key) {
    headers['X-Ovh-Application'] = key.applicationKey;
    if (!opts.unsigned) {
      const timestamp = opts.timestamp ?? Math.floor(Date.now() / 1000);
      const s = opts.sign ?? {};
      headers['X-Ovh-Consumer'] = key.consumerKey;
      headers['X-Ovh-Timestamp'] = String(timestamp);
      headers['X-Ovh-Signature'] = signRequest(
        s.secret ?? key.applicationSecret,
        key.consumerKey,
        s.method ?? method,
        s.url ?? url,
        s.body ?? body,
        s.timestamp ?? timestamp,
      );
    }
  }
  Object.assign(headers, opts.headers);
  const res = await fetch(url, { method, headers, ...(body !== '' ? { body } : {}) });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : (JSON.parse(text) as unknown);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}
