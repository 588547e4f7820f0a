/**
 * The simulator's check of a call's credentials, in the order OVH reports problems: application key,
 * consumer key, timestamp, signature (OVH's signature itself: ovhwire/signature.ts). The simulator
 * knows one set of credentials, and its clients sign https URLs.
 */
import { invalidCredential, invalidKey, invalidSignature, notCredential, queryTimeOut, type OvhApiError } from '../ovhwire/errors.js';
import { signatureMatches, signedUrlCandidates } from '../ovhwire/signature.js';
import type { SimCredentials } from './types.js';

export interface SignedRequest {
  method: string;
  /** Path and query exactly as received. */
  rawUrl: string;
  hostHeader: string;
  /** The body bytes exactly as received ('' when none). */
  rawBody: string;
  header(name: string): string | undefined;
}

/** The error to answer, or null when the call is authenticated. */
export function checkSignature(req: SignedRequest, credentials: SimCredentials, serverTimeSeconds: number, windowSeconds: number): OvhApiError | null {
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
  const urls = signedUrlCandidates(req.hostHeader, req.rawUrl);
  return signatureMatches(signature, credentials.applicationSecret, consumerKey, req.method, urls, req.rawBody, timestampText) ? null : invalidSignature();
}
