/**
 * Failed logins, limited per client address (both listeners share one): each address has a bucket of
 * `burst` failures that refills at `perSecond`. Once it is empty, that address's requests are refused
 * (429 / RESOURCE_EXHAUSTED with Retry-After) before any token is checked — no hashing, no database —
 * except requests carrying a token that recently authenticated from that address, so that a good
 * client behind the same NAT as a flooder keeps working.
 *
 * Failures are not logged one by one (a flood would write a line per request): the limiter keeps
 * counts and logs one summary per `summaryEveryMs` at most, naming the worst addresses.
 *
 * In memory, per process: a flood spread over replicas is limited per replica. Bounded: at most
 * `maxAddresses` addresses are tracked (the least recently seen are dropped first).
 */
import { tokenHashHex } from '../credentials/tokens.js';

export interface LoginLimiterOptions {
  /** Failures an address may make in a burst. */
  burst?: number;
  /** Failures per second an address regains. */
  perSecond?: number;
  maxAddresses?: number;
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
  /** sha-256 (hex) of tokens that authenticated from here recently, with when. */
  good: Map<string, number>;
}

/** How long a token that authenticated from an address stays welcome there while it is limited. */
const GOOD_FOR_MS = 15 * 60_000;
const MAX_GOOD_PER_ADDRESS = 16;
/** A token marked good this recently is not marked again (GOOD_FOR_MS is what counts). */
const GOOD_REFRESH_MS = 1_000;

export class LoginLimiter {
  private readonly burst: number;
  private readonly perSecond: number;
  private readonly maxAddresses: number;
  private readonly summaryEveryMs: number;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();
  private failures = new Map<string, number>();
  private limited = 0;
  private lastSummary = 0;
  private summaryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: LoginLimiterOptions) {
    this.burst = opts.burst ?? 20;
    this.perSecond = opts.perSecond ?? 1;
    this.maxAddresses = opts.maxAddresses ?? 10_000;
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
      e = { tokens: this.burst, at: now, good: new Map() };
      while (this.entries.size >= this.maxAddresses) {
        const oldest = this.entries.keys().next().value as string;
        this.entries.delete(oldest);
      }
    }
    this.entries.set(address, e);
    return e;
  }

  /**
   * Before a token is checked: undefined to go on, or the seconds to tell the client to wait (the
   * request is then refused without checking the token).
   */
  check(address: string, token: string | undefined): number | undefined {
    const e = this.entries.get(address);
    // No entry, or a whole token left before refilling (refilling only adds): nothing to refuse, and
    // nothing to write (every request of a good client passes here).
    if (!e || e.tokens >= 1) return undefined;
    const fresh = this.entry(address);
    if (fresh.tokens >= 1) return undefined;
    if (token !== undefined) {
      const seen = fresh.good.get(digest(token));
      if (seen !== undefined && this.now() - seen < GOOD_FOR_MS) return undefined;
    }
    this.limited++;
    this.opts.onFailure?.('limited');
    this.scheduleSummary();
    return Math.max(1, Math.ceil((1 - fresh.tokens) / this.perSecond));
  }

  /** A failed login from this address. */
  failed(address: string): void {
    const e = this.entry(address);
    e.tokens = Math.max(0, e.tokens - 1);
    this.failures.set(address, (this.failures.get(address) ?? 0) + 1);
    this.opts.onFailure?.('failed');
    this.scheduleSummary();
  }

  /**
   * A token that authenticated from this address: welcome there even while the address is limited.
   * `sha256Hex`: the token's sha-256 in hex when the caller has it already (core/credentials/tokens.ts tokenHashHex).
   */
  succeeded(address: string, token: string, sha256Hex?: string): void {
    const key = sha256Hex ?? digest(token);
    // Marked within the last second already (a client polling): left as it is, not rewritten per request.
    const known = this.entries.get(address)?.good.get(key);
    if (known !== undefined && this.now() - known < GOOD_REFRESH_MS) return;
    const e = this.entry(address);
    e.good.delete(key);
    e.good.set(key, this.now());
    while (e.good.size > MAX_GOOD_PER_ADDRESS) e.good.delete(e.good.keys().next().value as string);
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
    const top = [...this.failures.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([address, n]) => ({ address, failures: n }));
    const since = this.lastSummary ? Math.round((this.now() - this.lastSummary) / 1000) : undefined;
    this.opts.log(
      { failedLogins: total, addresses: this.failures.size, refusedWhileLimited: this.limited, top, ...(since !== undefined ? { seconds: since } : {}) },
      `failed logins: ${total} from ${this.failures.size} address(es), ${this.limited} request(s) refused with 429 while limited`,
    );
    this.failures = new Map();
    this.limited = 0;
    this.lastSummary = this.now();
  }

  close(): void {
    this.flush();
  }
}

/** The token's sha-256 in hex: the token cache's key too, so that the gate computes it once per request. */
function digest(token: string): string {
  return tokenHashHex(token);
}
