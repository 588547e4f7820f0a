/**
 * The TSIG keys the DNS door authenticates with, as it needs them: found by name, each acting as its
 * tenant. The same shape as core/tsig-keys.ts's TsigKeyring (which server.ts hands in); kept here as
 * the door's own interface so that tests can hand in keys of their own.
 */
import type { TsigAlgorithm } from '../dns/wire/index.js';
import type { Tenant } from '../core/tenants.js';

export interface DoorKey {
  id: string;
  /** Lowercase, no trailing dot. */
  name: string;
  algorithm: TsigAlgorithm;
  secret: Buffer;
  tenant: Tenant;
  /** May only add and delete TXT records named _acme-challenge.* inside its tenant's zones. */
  acmeOnly: boolean;
}

export interface DoorKeyring {
  /** The key of that name (any case, trailing dot or not), or undefined; rejects when it cannot be read (SERVFAIL). */
  find(name: string): Promise<DoorKey | undefined>;
  /** A message authenticated with this key. */
  noteUsed(key: DoorKey): void;
}

/** No keys at all: every signed message is BADKEY. */
export const NO_KEYS: DoorKeyring = { find: async () => undefined, noteUsed: () => undefined };
