/**
 * Failed logins, limited per client address (both listeners share one; behind a trusted proxy the
 * address is the client's, net/client-address.ts): each address has a bucket of `burst` failures
 * that refills at `perSecond`. Once it is empty, that address's requests are refused (429 /
 * RESOURCE_EXHAUSTED with Retry-After) before their credential is checked — no database lookup, no
 * signature or JWT verification — unless the credential is one this process knows to be valid:
 * - the doors ask their credential cache first (a token, a Basic password, an OVH key found there is
 *   answered whatever this limiter says: api/gate.ts, webhook/handler.ts, ovhapi/index.ts), and the
 *   token cache holds every enabled tenant's tokens (core/tenants/token-warmth.ts);
 * - here, credentials that authenticated recently anywhere (`known`, by their hash; process-wide, not
 *   per address, no cap per address) pass on to the lookup while the caches cannot be trusted (the
 *   LISTEN connection lost). One that then fails is forgotten at once.
 * So one cluster with a stale token behind an ingress limits only the credentials nobody knows, never
 * the good clients beside it, however many they are.
 *
 * Failures are not logged one by one (a flood would write a line per request): the limiter keeps
 * counts and logs one summary per `summaryEveryMs` at most, naming the worst addresses.
 *
 * In memory, per process: a flood spread over replicas is limited per replica. Bounded: at most
 * `maxAddresses` addresses and `maxKnown` credentials are tracked (the least recently seen go first).
 */
export interface LoginLimiterOptions {
  /** Failures an address may make in a burst. */
  burst?: number;
  /** Failures per second an address regains. */
  perSecond?: number;
  maxAddresses?: number;
  /** Credentials (hashes) remembered as having authenticated; default 100,000. */
  maxKnown?: number;
  summaryEveryMs?: number;
  /** Where the summary goes (warn). */
  log: (fields: Record<string, unknown>, msg: string) => void;
  /** Counts refusals and failures (metrics). */
  onFailure?: (kind: 'failed' | 'limited') => void;
  now?: () => number;
}

interface Entry {
  tokens: number;
  at: number;
}

/** How long a credential that authenticated stays known (passes a limited address on to its lookup). */
const KNOWN_FOR_MS = 15 * 60_000;
/** A credential marked known this recently is not marked again (a client polling: not a write per request). */
const KNOWN_REFRESH_MS = 10_000;

export class LoginLimiter {
  private readonly burst: number;
  private readonly perSecond: number;
  private readonly maxAddresses: number;
  private readonly maxKnown: number;
  private readonly summaryEveryMs: number;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();
  /** Credentials (their hashes) that authenticated, with when; the map's order is least recently marked first. */
  private readonly known = new Map<string, number>();
  private failures = new Map<string, number>();
  private limited = 0;
  /** Refusals while limited, by address, since the last summary. */
  private refusedBy = new Map<string, number>();
  private lastSummary = 0;
  private summaryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: LoginLimiterOptions) {
    this.burst = opts.burst ?? 20;
    this.perSecond = opts.perSecond ?? 1;
    this.maxAddresses = opts.maxAddresses ?? 10_000;
    this.maxKnown = opts.maxKnown ?? 100_000;
    this.summaryEveryMs = opts.summaryEveryMs ?? 10_000;
    this.now = opts.now ?? (() => Date.now());
  }

  private entry(address: string): Entry {
    const now = this.now();
    let e = this.entries.get(address);
    if (e) {
      e.tokens = Math.min(this.burst, e.tokens + ((now - e.at) / 1000) * this.perSecond);
      e.at = now;
      this.entries.delete(address); // re-inserted: the map's order is least recently seen first
    } else {
      e = { tokens: this.burst, at: now };
      while (this.entries.size >= this.maxAddresses) {
        const oldest = this.entries.keys().next().value as string;
        this.entries.delete(oldest);
      }
    }
    this.entries.set(address, e);
    return e;
  }

  /**
   * Before a credential is looked up: undefined to go on, or the seconds to tell the client to wait (the
   * request is then refused without looking it up). `credential`: the credential's hash (hex), when the
   * request carries one; one that authenticated recently goes on whatever the address did.
   */
  check(address: string, credential: string | undefined): number | undefined {
    const e = this.entries.get(address);
    // No entry, or a whole token left before refilling (refilling only adds): nothing to refuse, and
    // nothing to write (every request of a good client passes here).
    if (!e || e.tokens >= 1) return undefined;
    const fresh = this.entry(address);
    if (fresh.tokens >= 1) return undefined;
    if (credential !== undefined && this.isKnown(credential)) return undefined;
    this.limited++;
    // Bounded: once 1,000 addresses are counted in a summary's window, the rest only in the total.
    if (this.refusedBy.has(address) || this.refusedBy.size < 1000) this.refusedBy.set(address, (this.refusedBy.get(address) ?? 0) + 1);
    this.opts.onFailure?.('limited');
    this.scheduleSummary();
    return Math.max(1, Math.ceil((1 - fresh.tokens) / this.perSecond));
  }

  /** A failed login from this address; the credential it carried (its hash), if any, is no longer known. */
  failed(address: string, credential?: string): void {
    if (credential !== undefined) this.known.delete(credential);
    const e = this.entry(address);
    e.tokens = Math.max(0, e.tokens - 1);
    this.failures.set(address, (this.failures.get(address) ?? 0) + 1);
    this.opts.onFailure?.('failed');
    this.scheduleSummary();
  }

  /** A credential (its hash, hex) that authenticated, from wherever: known for KNOWN_FOR_MS. */
  succeeded(credential: string): void {
    const now = this.now();
    const at = this.known.get(credential);
    if (at !== undefined && now - at < KNOWN_REFRESH_MS) return;
    this.known.delete(credential);
    this.known.set(credential, now);
    while (this.known.size > this.maxKnown) this.known.delete(this.known.keys().next().value as string);
  }

  private isKnown(credential: string): boolean {
    const at = this.known.get(credential);
    return at !== undefined && this.now() - at < KNOWN_FOR_MS;
  }

  private scheduleSummary(): void {
    if (this.summaryTimer) return;
    const wait = Math.max(0, this.lastSummary + this.summaryEveryMs - this.now());
    this.summaryTimer = setTimeout(() => this.flush(), wait);
    this.summaryTimer.unref();
  }

  /** Logs the failures and refusals since the last summary (one line), if any. */
  flush(): void {
    if (this.summaryTimer) clearTimeout(this.summaryTimer);
    this.summaryTimer = undefined;
    const total = [...this.failures.values()].reduce((a, b) => a + b, 0);
    if (total === 0 && this.limited === 0) return;
    // The worst addresses by what they cost: failed logins and the requests refused while limited.
    const top = [...new Set([...this.failures.keys(), ...this.refusedBy.keys()])]
      .map((address) => ({ address, failures: this.failures.get(address) ?? 0, refused: this.refusedBy.get(address) ?? 0 }))
      .sort((a, b) => b.failures + b.refused - (a.failures + a.refused))
      .slice(0, 5);
    const since = this.lastSummary ? Math.round((this.now() - this.lastSummary) / 1000) : undefined;
    this.opts.log(
      { failedLogins: total, addresses: this.failures.size, refusedWhileLimited: this.limited, top, ...(since !== undefined ? { seconds: since } : {}) },
      `failed logins: ${total} from ${this.failures.size} address(es), ${this.limited} request(s) refused with 429 while limited`,
    );
    this.failures = new Map();
    this.refusedBy = new Map();
    this.limited = 0;
    this.lastSummary = this.now();
  }

  close(): void {
    this.flush();
  }
}
