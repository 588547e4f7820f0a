/**
 * OVH's request signature:
 *
 * X-Ovh-Signature = "$1$" + sha1_hex(AS + "+" + CK + "+" + METHOD + "+" + URL + "+" + BODY + "+" + TIMESTAMP)
 *
 * URL is the scheme, host and path-with-query the client signed. Clients disagree on it:
 * @ovhcloud/node-ovh signs `https://` + its host WITHOUT the port, even on a non-443 port; go-ovh
 * (external-dns, lego, Traefik, Caddy's libdns, cert-manager-webhook-ovh, Terraform) and python-ovh
 * sign the endpoint URL they were configured with + the path, port and scheme included. A server
 * accepts the forms those clients produce for the request it received (signedUrlCandidates).
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export function signRequest(applicationSecret: string, consumerKey: string, method: string, url: string, body: string, timestamp: number | string): string {
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
 * The URLs a correct signature may cover for a request with this Host header and path (as received):
 * for each scheme given, the Host header as sent and without its port, and for an IPv6 literal also
 * without brackets (the node client given `host: '::1'` signs `https://::1/…`).
 */
export function signedUrlCandidates(hostHeader: string, rawUrl: string, schemes: readonly string[] = ['https']): string[] {
  const portless = stripPort(hostHeader);
  const hosts = new Set([hostHeader, portless]);
  if (portless.startsWith('[') && portless.endsWith(']')) hosts.add(portless.slice(1, -1));
  return schemes.flatMap((scheme) => [...hosts].map((h) => `${scheme}://${h}${rawUrl}`));
}

/** Whether `signature` is one a client holding this secret and consumer key made for one of `urls`, in constant time per candidate. */
export function signatureMatches(
  signature: string,
  applicationSecret: string,
  consumerKey: string,
  method: string,
  urls: readonly string[],
  body: string,
  timestamp: string,
): boolean {
  const given = Buffer.from(signature);
  let ok = false;
  for (const url of urls) {
    const expected = Buffer.from(signRequest(applicationSecret, consumerKey, method, url, body, timestamp));
    if (expected.length === given.length && timingSafeEqual(expected, given)) ok = true;
  }
  return ok;
}
