/**
 * OVH's request signing, checked as the API checks it.
 *
 * X-Ovh-Signature = "$1$" + sha1_hex(AS + "+" + CK + "+" + METHOD + "+" + URL + "+" + BODY + "+" + TIMESTAMP)
 *
 * URL is `https://` + host + path-with-query. @ovhcloud/node-ovh signs the host WITHOUT the port even on a
 * non-443 port; other clients sign their configured base URL, port included. Both are accepted: the
 * candidates are the request's Host header with and without its port.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { invalidCredential, invalidKey, invalidSignature, notCredential, queryTimeOut } from './errors.js';
import type { SimApiError } from './errors.js';
import type { SimCredentials } from './types.js';

export function signRequest(
  applicationSecret: string,
  consumerKey: string,
  method: string,
  url: string,
  body: string,
  timestamp: number | string,
): string {
  const payload = [applicationSecret, consumerKey, method, url, body, String(timestamp)].join('+');
  return `$1$${createHash('sha1').update(payload).digest('hex')}`;
}

/** `host:port` -> `host`; `[::1]:443` -> `[::1]`. */
export function stripPort(hostHeader: string): string {
  if (hostHeader.startsWith('[')) {
    const end = hostHeader.indexOf(']');
    return end >= 0 ? hostHeader.slice(0, end + 1) : hostHeader;
  }
  const colon = hostHeader.lastIndexOf(':');
  return colon >= 0 && hostHeader.indexOf(':') === colon ? hostHeader.slice(0, colon) : hostHeader;
}

/**
 * The URLs a correct signature may cover for this request: the Host header as sent, without its port,
 * and for an IPv6 literal also without brackets (the node client given `host: '::1'` signs `https://::1/…`).
 */
export function signedUrlCandidates(hostHeader: string, rawUrl: string): string[] {
  const portless = stripPort(hostHeader);
  const hosts = new Set([hostHeader, portless]);
  if (portless.startsWith('[') && portless.endsWith(']')) hosts.add(portless.slice(1, -1));
  return [...hosts].map((h) => `https://${h}${rawUrl}`);
}

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export interface SignedRequest {
  method: string;
  /** Path and query exactly as received. */
  rawUrl: string;
  hostHeader: string;
  /** The body bytes exactly as received ('' when none). */
  rawBody: string;
  header(name: string): string | undefined;
}

/**
 * Checks a call's credentials in the order OVH reports problems: application key, consumer key,
 * timestamp, signature. Returns the error to answer, or null when the call is authenticated.
 */
export function checkSignature(
  req: SignedRequest,
  credentials: SimCredentials,
  serverTimeSeconds: number,
  windowSeconds: number,
): SimApiError | null {
  const appKey = req.header('x-ovh-application');
  if (!appKey) return notCredential();
  if (appKey !== credentials.applicationKey) return invalidKey();
  const consumerKey = req.header('x-ovh-consumer');
  if (!consumerKey) return notCredential();
  if (consumerKey !== credentials.consumerKey) return invalidCredential();
  const signature = req.header('x-ovh-signature');
  if (!signature) return notCredential();
  const timestampText = req.header('x-ovh-timestamp') ?? '';
  if (!/^-?\d+$/.test(timestampText)) return queryTimeOut();
  if (Math.abs(Number(timestampText) - serverTimeSeconds) > windowSeconds) return queryTimeOut();
  const ok = signedUrlCandidates(req.hostHeader, req.rawUrl).some((url) =>
    equal(signature, signRequest(credentials.applicationSecret, consumerKey, req.method, url, req.rawBody, timestampText)),
  );
  return ok ? null : invalidSignature();
}
