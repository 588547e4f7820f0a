/**
 * OVH keys as a kind of sealed key (core/credentials/admin.ts manages every kind alike). A key is three
 * random values made here, as OVH issues them: an application key (16 letters and digits, an identifier
 * kept in clear that names the key), an application secret (32, sealed) and a consumer key (32, of
 * which only the sha-256 is stored; a call is found by it). A rotation replaces the secret and the
 * consumer key, keeping the application key and the expiry. The entry points of AdminService and
 * `dnsplane tenant ovh-key`.
 */
import * as store from '../../store/index.js';
import { InvalidInputError, NotFoundError } from '../errors.js';
import { createKey, keyAdmin, keyTimes, type Issued, type KeyAdmin, type KeyKind, type KeyView, type Minted } from './admin.js';
import { APPLICATION_KEY_LENGTH, SECRET_LENGTH, consumerKeyHash, ovhSecretContext, randomKey } from '../keys/ovh.js';

/** A key as listings show it: never its secret or consumer key. */
export interface OvhKeyView extends KeyView {
  applicationKey: string;
  expiresAt: Date | null;
}

/** What a new key or rotation hands back once: never logged. */
interface OvhSecrets {
  applicationSecret: string;
  consumerKey: string;
}

/** A key just made or rotated, with its secret and consumer key: to be shown once, never logged. */
export type IssuedOvhKey = Issued<OvhKeyView, OvhSecrets>;

export interface NewOvhKeyInput {
  tenant: string;
  /** How long the consumer key stays valid; absent or 0: never expires. */
  expiresInMs?: number;
}

/** The longest expiry a key may be given (ten years): a mistyped duration is refused, not kept. */
export const MAX_EXPIRY_MS = 10 * 366 * 24 * 3_600_000;

function mint(): Minted<OvhSecrets> {
  const shown = { applicationSecret: randomKey(SECRET_LENGTH), consumerKey: randomKey(SECRET_LENGTH) };
  return { shown, secret: Buffer.from(shown.applicationSecret, 'utf8'), authValue: consumerKeyHash(shown.consumerKey) };
}

const OVH: KeyKind<store.OvhKeyRow, OvhKeyView, OvhSecrets> = {
  store: store.OVH_KEYS,
  what: 'OVH key',
  slug: 'ovh-key',
  replaces: 'secret and consumer key',
  sealedWhat: 'OVH application secrets',
  nameOf(raw) {
    const key = raw.trim();
    if (!/^[A-Za-z0-9]{16}$/.test(key))
      throw new InvalidInputError(
        'applicationKey',
        `must be an application key as \`dnsplane tenant ovh-key list\` shows it (16 letters and digits), got ${JSON.stringify(raw)}`,
      );
    return key;
  },
  context: ovhSecretContext,
  mint,
  view: (r) => {
    const { oldSecretValidUntil, ...times } = keyTimes(r);
    return { applicationKey: r.applicationKey, tenant: r.tenantName, ...times, expiresAt: r.expiresAt, oldSecretValidUntil };
  },
  describe: (k) => `OVH key ${k.applicationKey} of tenant ${k.tenant}`,
  fields: (k) => ({ applicationKey: k.applicationKey, tenant: k.tenant }),
  notFound: (key) => new NotFoundError('OVH key', key, `applicationKey: no OVH key ${key} (dnsplane tenant ovh-key list TENANT shows them)`),
};

/** A new key for a tenant; its secret and consumer key are in the answer and nowhere else in clear. */
export async function createOvhKey(admin: KeyAdmin, input: NewOvhKeyInput): Promise<IssuedOvhKey> {
  return createKey(admin, OVH, input.tenant, () => {
    const ms = input.expiresInMs;
    if (ms !== undefined && ms !== 0 && (!Number.isFinite(ms) || ms < 0 || ms > MAX_EXPIRY_MS))
      throw new InvalidInputError('expiresIn', `must be a duration from 1s to ${MAX_EXPIRY_MS / 3_600_000}h, or 0 for never, got ${ms} ms`);
    const expiresAt = ms ? new Date(Date.now() + ms) : null;
    const minted = mint();
    return {
      // A drawn application key that happens to be taken is drawn again (16 characters: never, in practice).
      draw: () => randomKey(APPLICATION_KEY_LENGTH),
      minted,
      values: (applicationKey) => ({ application_key: applicationKey, consumer_key_sha256: minted.authValue, expires_at: expiresAt }),
      detail: (key) => ({ expiresAt: key.expiresAt?.toISOString() ?? null }),
    };
  });
}

export const OVH_KEY_ADMIN = keyAdmin(OVH);
export const { list: listOvhKeys, rotate: rotateOvhKey, remove: deleteOvhKey } = OVH_KEY_ADMIN;
