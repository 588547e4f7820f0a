/**
 * TSIG keys as a kind of sealed key (core/credentials/admin.ts manages every kind alike): a key is named
 * by a DNS name unique across tenants (asked for, or drawn as "<tenant>-<8 hex>.dnsplane"), its secret
 * random and as long as its HMAC's output, bound to the key's name; a rotation keeps the name, algorithm
 * and scope. The entry points of AdminService and `dnsplane tenant tsig`.
 */
import { randomBytes } from 'node:crypto';
import * as store from '../../store/index.js';
import { InvalidInputError, NotFoundError } from '../errors.js';
import { createKey, keyAdmin, keyTimes, type Issued, type KeyAdmin, type KeyKind, type KeyView } from './admin.js';
import { DEFAULT_TSIG_ALGORITHM, isTsigAlgorithm, normalizeTsigKeyName, parseTsigAlgorithm, tsigSecretBytes } from '../../dns/tsig-keys.js';
import { secretContext, type TsigAlgorithm } from '../keys/tsig.js';

/** A key as listings show it: never its secret. */
export interface TsigKeyView extends KeyView {
  name: string;
  algorithm: TsigAlgorithm;
  acmeOnly: boolean;
}

/** A key just made or rotated, with its secret: to be shown once, never logged. */
export type IssuedTsigKey = Issued<TsigKeyView, { secret: Buffer }>;

export interface NewTsigKeyInput {
  tenant: string;
  /** '' or absent: hmac-sha256. */
  algorithm?: string;
  /** '' or absent: "<tenant>-<8 hex>.dnsplane". */
  name?: string;
  acmeOnly?: boolean;
}

const algorithmOf = (r: { algorithm: string }): TsigAlgorithm => (isTsigAlgorithm(r.algorithm) ? r.algorithm : DEFAULT_TSIG_ALGORITHM);

function mint(algorithm: TsigAlgorithm): { shown: { secret: Buffer }; secret: Buffer } {
  const secret = randomBytes(tsigSecretBytes(algorithm));
  return { shown: { secret }, secret };
}

const TSIG: KeyKind<store.TsigKeyRow, TsigKeyView, { secret: Buffer }> = {
  store: store.TSIG_KEYS,
  what: 'TSIG key',
  slug: 'tsig-key',
  replaces: 'secret',
  sealedWhat: 'TSIG secrets',
  nameOf: (raw) => normalizeTsigKeyName(raw, 'name'),
  context: secretContext,
  mint: (current) => mint(algorithmOf(current)),
  view: (r) => ({ name: r.name, tenant: r.tenantName, algorithm: algorithmOf(r), acmeOnly: r.acmeOnly, ...keyTimes(r) }),
  describe: (k) => `TSIG key ${k.name} (${k.algorithm}${k.acmeOnly ? ', acme-only' : ''}) of tenant ${k.tenant}`,
  fields: (k) => ({ key: k.name, tenant: k.tenant }),
  notFound: (name) => new NotFoundError('TSIG key', name, `name: no TSIG key named "${name}" (dnsplane tenant tsig list TENANT shows them)`),
  logsDetail: true,
};

/** A new key for a tenant; its secret is in the answer and nowhere else in clear. */
export async function createTsigKey(admin: KeyAdmin, input: NewTsigKeyInput): Promise<IssuedTsigKey> {
  return createKey(admin, TSIG, input.tenant, () => {
    const algorithm = parseTsigAlgorithm(input.algorithm ?? '', 'algorithm');
    const acmeOnly = input.acmeOnly ?? false;
    return {
      ...(input.name?.trim() ? { wanted: normalizeTsigKeyName(input.name, 'name') } : {}),
      draw: (tenant) => `${tenant.slice(0, 54)}-${randomBytes(4).toString('hex')}.dnsplane`,
      minted: mint(algorithm),
      values: (name) => ({ name, algorithm, acme_only: acmeOnly }),
      detail: () => ({ algorithm, acmeOnly }),
      taken: (name) =>
        new InvalidInputError('name', `a TSIG key named "${name}" already exists (key names are unique across tenants: a DNS message names only its key)`),
    };
  });
}

export const TSIG_KEY_ADMIN = keyAdmin(TSIG);
export const { list: listTsigKeys, rotate: rotateTsigKey, remove: deleteTsigKey } = TSIG_KEY_ADMIN;
