import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A bearer token: 32 random bytes, base64url, with a prefix that makes leaked tokens easy to grep for. */
export function newToken(): string {
  return `dnsp_${randomBytes(32).toString('base64url')}`;
}

/** What the database keeps instead of the token. */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
