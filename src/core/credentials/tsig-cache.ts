/**
 * A TSIG key as the keyring hands it out (core/credentials/tsig.ts), and the cache of keys found, which
 * server.ts builds per process and keeps exact with NOTIFY dnsplane_tenant (core/credentials/cache.ts).
 * Apart from the keyring so that CoreContext can hold the cache without importing the keyring.
 */
import type { TsigAlgorithm } from '../../dns/wire/index.js';
import { CredentialCache } from './cache.js';
import type { Tenant } from '../tenants.js';

/** The algorithms are the DNS wire format's (dns/wire/tsig.ts). */
export type { TsigAlgorithm };

export interface TsigKey {
  id: string;
  /** Lowercase, no trailing dot. */
  name: string;
  algorithm: TsigAlgorithm;
  secret: Buffer;
  /**
   * The secret a rotation with a grace replaced, still accepted until `previousValidUntil` (judged with
   * the context's clock when a message is verified, core/credentials/tsig.ts previousSecretOf).
   */
  previous?: { secret: Buffer; validUntil: Date };
  /** The key's tenant as it was when the key was read (kept exact by the cache's invalidation). */
  tenant: Tenant;
  /** The key may only add and delete TXT records named _acme-challenge.* inside its tenant's zones. */
  acmeOnly: boolean;
}

/** Keys found, by name; server.ts builds one per process and forgets a tenant's on NOTIFY dnsplane_tenant. */
export class TsigKeyCache extends CredentialCache<TsigKey> {
  constructor(isTrusted: () => boolean, maxEntries = 10_000) {
    super(isTrusted, (k) => k.tenant.name, maxEntries);
  }
}

