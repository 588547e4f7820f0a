/**
 * What the webhook protocol handler needs from dnsplane, for one caller. Two implementations:
 * - central (core-backend.ts): in the `dnsplane serve` process, calling core directly; the caller is
 *   the tenant named by HTTP Basic `tenant:token`;
 * - sidecar (connect-backend.ts): `dnsplane webhook` beside external-dns, calling the central service's
 *   ZoneService over Connect with the token it was given.
 * The handler (handler.ts) is the same for both, and so is the conformance test suite.
 */
import type { RawChangeSet } from '../core/plan/input.js';
import type { Conflict, Endpoint } from '../dns/types.js';
import type { ChangeList } from './protocol.js';
import type { TenantScope } from './normalize.js';

/** applied, no_changes, stale, failed, or what core adds (dry_run): only failed and stale are failures. */
export type ZoneStatus = string;

export interface ZoneOutcome {
  zone: string;
  status: ZoneStatus;
  /** OVH calls made (the refresh included). */
  calls: number;
  conflicts: Conflict[];
  /** Why the zone failed; its changes were rolled back. */
  error?: string;
  /** Whether trying again later may succeed (OVH unavailable). */
  transient?: boolean;
  /** Refused by the change threshold (core/plan/guard.ts): nothing sent; needs force or a higher limit. */
  overThreshold?: boolean;
}

export interface ApplyOutcome {
  zones: ZoneOutcome[];
}

export interface WebhookSession {
  /** The tenant's zones and suffixes. */
  scope(): Promise<TenantScope>;
  /**
   * The tenant's own record sets, normalized (labels.owner is dnsplane's: the owning tenant). May be
   * an array the read cache shares with every caller of the same view (core/reads/read-cache.ts): read
   * it, never change it.
   */
  records(): Promise<readonly Endpoint[]>;
  /** One inline Apply of a change set (policy sync: external-dns applied its own policy already). */
  apply(changes: RawChangeSet): Promise<ApplyOutcome>;
}

/**
 * A caller's credential, read from its Authorization header once per request (WebhookBackend.credential):
 * what session() and knows() take, so that its secret is hashed once for the token cache and the
 * login limiter alike (as api/gate.ts does).
 */
export interface WebhookCredential {
  readonly authorization: string | undefined;
  /** HTTP Basic's user and password (central mode's TENANT:TOKEN), when the header is one with both set. */
  readonly basic?: { readonly user: string; readonly password: string };
  /** The sha-256 (hex) of that password: the token cache's key and the login limiter's. */
  readonly hashHex?: string;
}

export interface WebhookBackend {
  readonly mode: 'central' | 'sidecar';
  /** The caller's credential as this backend reads it; default: the header alone (nothing hashed). */
  credential?(authorization: string | undefined): WebhookCredential;
  /**
   * The session of the caller, from its credential; `client`: its address (behind a trusted proxy,
   * the client's), for "last seen" and the journal. Throws WebhookError(401).
   */
  session(credential: WebhookCredential, client?: string): Promise<WebhookSession>;
  /**
   * Whether the credential is one this process knows to be valid without asking anyone (the token
   * cache): such a caller is never refused for its address's failed logins (core/tenants/login-limiter.ts).
   */
  knows?(credential: WebhookCredential): boolean;
}

/**
 * Why a request could not be served, as the status external-dns will see:
 * 401 bad credentials; 503 OVH unavailable, a zone lock not acquired in time, the centre unreachable
 * (external-dns retries on its next loop); 500 anything else (also retried). `entry` marks an error
 * about one entry of the change set sent (`changes.create[3]…`): the handler drops that entry and
 * applies the rest.
 */
export class WebhookError extends Error {
  override readonly name = 'WebhookError';
  constructor(
    readonly status: 401 | 500 | 503,
    message: string,
    readonly entry?: { list: ChangeList; index: number },
    /** The centre refused the change set by its change threshold (the sidecar learns it this way). */
    readonly overThreshold = false,
    /** With overThreshold: the zone the refusal is about. */
    readonly zone = '',
  ) {
    super(message);
  }
}

const ENTRY = /(?:^|\b)changes\.(create|updateOld|updateNew|delete)\[(\d+)\]/;

/** The change-set entry an error message names (`changes.create[3].dnsName: …`), if any. */
export function entryOf(message: string): { list: ChangeList; index: number } | undefined {
  const m = ENTRY.exec(message);
  if (!m) return undefined;
  return { list: m[1] as ChangeList, index: Number(m[2]) };
}
