/**
 * An OVH key as the keyring hands it out (core/credentials/ovh.ts), and the cache of keys found, which
 * server.ts builds per process and keeps exact with NOTIFY dnsplane_tenant (core/credentials/cache.ts).
 * Apart from the keyring so that CoreContext can hold the cache without importing the keyring.
 */
import { CredentialCache } from './cache.js';
import type { Tenant } from '../tenants.js';

export interface OvhKey {
  id: string;
  applicationKey: string;
  /** Opened from its sealed form; never logged. */
  applicationSecret: string;
  /** The key's tenant as it was when the key was read (kept exact by the cache's invalidation). */
  tenant: Tenant;
  /** null: never expires. */
  expiresAt: Date | null;
  createdAt: Date;
  /**
   * Found by the consumer key a rotation with a grace replaced (`applicationSecret` is the replaced
   * one): accepted until then, by the context's clock (core/credentials/ovh.ts).
   */
  replacedUntil?: Date;
}

/** Keys found, by the sha-256 (hex) of their consumer key; server.ts builds one per process. */
export class OvhKeyCache extends CredentialCache<OvhKey> {
  constructor(isTrusted: () => boolean, maxEntries = 10_000) {
    super(isTrusted, (k) => k.tenant.name, maxEntries);
  }
}
