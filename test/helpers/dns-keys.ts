/**
 * TSIG keys for tests of the DNS door: an in-memory keyring (the door's TsigKeyring) holding keys
 * made here for real tenants, and each key as the command-line tools take it.
 */
import { randomBytes } from 'node:crypto';
import type { Tenant } from '../../src/core/tenants/tenants.js';
import type { TsigAlgorithm } from '../../src/dns/wire/index.js';
import type { TsigKey, TsigKeyring } from '../../src/core/keys/tsig.js';

export interface TestKeyring extends TsigKeyring {
  add(tenant: Tenant, opts?: { algorithm?: TsigAlgorithm; acmeOnly?: boolean; name?: string }): TsigKey;
  used: string[];
}

let seq = 0;

export function memoryKeyring(): TestKeyring {
  const keys = new Map<string, TsigKey>();
  const used: string[] = [];
  return {
    used,
    add(tenant, opts = {}) {
      const name = opts.name ?? `${tenant.name}-${++seq}.keys.dnsplane`;
      const key: TsigKey = {
        id: String(seq),
        name,
        algorithm: opts.algorithm ?? 'hmac-sha256',
        secret: randomBytes(32),
        tenant,
        acmeOnly: opts.acmeOnly ?? false,
      };
      keys.set(name, key);
      return key;
    },
    async find(name) {
      return keys.get(name.toLowerCase().replace(/\.$/, ''));
    },
    cached(name) {
      return keys.get(name.toLowerCase().replace(/\.$/, ''));
    },
    noteUsed(key) {
      used.push(key.name);
    },
  };
}

/** A key as `nsupdate -y` / `dig -y` take it. */
export function cliKey(key: TsigKey): { algorithm: string; name: string; secret: string } {
  return { algorithm: key.algorithm, name: key.name, secret: key.secret.toString('base64') };
}
