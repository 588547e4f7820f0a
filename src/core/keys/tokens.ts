import { createHash, hash, randomBytes } from 'node:crypto';

/** A bearer token: 32 random bytes, base64url, with a prefix that makes leaked tokens easy to grep for. */
export function newToken(): string {
  return `dnsp_${randomBytes(32).toString('base64url')}`;
}

/** What the database keeps instead of the token. */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** hashToken as hex, in one call (crypto.hash: no Hash object), for the token cache's key on every request. */
export function tokenHashHex(token: string): string {
  return hash('sha256', token, 'hex');
}
