/**
 * Who calls: a signed call is checked as OVH checks one, in OVH's order — application key, consumer
 * key, signature present, timestamp, signature — and answered with OVH's errors (NOT_CREDENTIAL,
 * INVALID_KEY, INVALID_CREDENTIAL for an unknown, expired or disabled credential, QUERY_TIME_OUT,
 * INVALID_SIGNATURE). The key is found by its consumer key through core's keyring (memory, exact
 * across replicas); its application secret checks the signature.
 *
 * The signed URL: clients sign the URL they called, and disagree on its form — @ovhcloud/node-ovh
 * signs `https://` + its host without the port; go-ovh (external-dns, lego, Traefik, Caddy,
 * cert-manager-webhook-ovh, Terraform) and python-ovh sign the endpoint they were given + the path:
 * `http://127.0.0.1:8080/ovh/1.0/…` locally, `https://dnsplane.example/ovh/1.0/…` behind a TLS
 * ingress (which reaches dnsplane over http). Accepted: http or https, the Host header as received
 * with or without its port, and the path and query exactly as received — nothing looser (no other
 * host, no other path, no body or timestamp but the ones sent).
 */
import { invalidCredential, invalidKey, invalidSignature, notCredential, queryTimeOut, type OvhApiError } from '../ovhwire/errors.js';
import { signatureMatches, signedUrlCandidates } from '../ovhwire/signature.js';
import type { KeyAt } from '../core/keys/keyring.js';
import type { OvhKey, OvhKeyring } from '../core/keys/ovh.js';

/** How far a call's timestamp may be from the server's clock, in seconds (OVH's is not published; the simulator assumes the same). */
export const TIMESTAMP_WINDOW_SECONDS = 300;

/** Schemes a client may have signed: https (TLS at an ingress, or node-ovh) and http (a local endpoint). */
const SCHEMES = ['https', 'http'] as const;

export interface SignedCall {
  method: string;
  /** Path and query exactly as received (/ovh/1.0/…). */
  rawUrl: string;
  host: string;
  rawBody: string;
  header(name: string): string | undefined;
}

/** A refusal, and whether it counts as a failed login (a wrong key or signature, not a clock). */
export class AuthRefusal extends Error {
  constructor(
    readonly answer: OvhApiError,
    readonly failedLogin: boolean,
  ) {
    super(answer.message);
  }
}

/**
 * The key a call is signed with, or an AuthRefusal with OVH's answer. `nowSeconds`: the server's clock;
 * `consumerAt`: keyring.at(its consumer key) when the caller has worked it out already (index.ts).
 */
export async function authenticateCall(call: SignedCall, keyring: OvhKeyring, nowSeconds: number, consumerAt?: KeyAt): Promise<OvhKey> {
  const applicationKey = call.header('x-ovh-application');
  const consumerKey = call.header('x-ovh-consumer');
  if (!applicationKey) throw new AuthRefusal(notCredential(), false);
  const key = consumerKey ? await keyring.find(consumerAt ?? consumerKey) : undefined;
  if (!key || key.applicationKey !== applicationKey) {
    // Which one is wrong, as OVH says it: an application key nobody has, else the consumer key.
    if (!(await keyring.applicationKnown(applicationKey))) throw new AuthRefusal(invalidKey(), true);
    if (!consumerKey) throw new AuthRefusal(notCredential(), false);
    throw new AuthRefusal(invalidCredential('This credential does not exist'), true);
  }
  if (key.tenant.disabled || (key.expiresAt !== null && key.expiresAt.getTime() <= nowSeconds * 1000)) throw new AuthRefusal(invalidCredential(), true);
  const signature = call.header('x-ovh-signature');
  if (!signature) throw new AuthRefusal(notCredential(), false);
  const timestamp = call.header('x-ovh-timestamp') ?? '';
  if (!/^-?\d{1,15}$/.test(timestamp) || Math.abs(Number(timestamp) - nowSeconds) > TIMESTAMP_WINDOW_SECONDS) throw new AuthRefusal(queryTimeOut(), false);
  const urls = signedUrlCandidates(call.host, call.rawUrl, SCHEMES);
  if (!signatureMatches(signature, key.applicationSecret, consumerKey!, call.method, urls, call.rawBody, timestamp))
    throw new AuthRefusal(invalidSignature(), true);
  return key;
}
