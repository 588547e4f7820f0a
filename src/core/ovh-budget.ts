/**
 * One OVH budget across replicas: DNSPLANE_OVH_RATE is the OVH account's rate, shared by every
 * replica on the database. The OVH client's limiter (ovh/ratelimit.ts) asks this budget for a token
 * before each call; the budget holds a few tokens leased from the account's row in Postgres
 * (store/ovh-budget.ts, migration 0014: a token bucket refilled by the database's clock) and leases
 * more when they are spent, closing the spent lease in the same statement.
 *
 * - A lease holds at most `batch` tokens (a tenth of the rate, 1 to 100) for LEASE_LIFETIME_MS; its
 *   unspent tokens go back when the replica has nobody waiting (after IDLE_CLOSE_MS) or leases again.
 *   A replica that dies holds its lease until it expires: at most `batch` tokens for 2 s (2 at the
 *   default rate of 20).
 * - The bucket holds at most `batch` tokens and the open leases at most `batch`: over any window of
 *   W seconds the account's calls stay within refill × W + 2 × batch, however many replicas there
 *   are. That burst is paid for out of the rate: the bucket refills at rate − 2 × batch / 5 s (19.2
 *   per second at the default 20), so that no 5 s window (nor any longer one) holds more than
 *   DNSPLANE_OVH_RATE × its length; a 1 s window may hold the burst (24 calls at 20 per second).
 * - A lease's tokens are spent only before its expiry as this replica sees it (measured from when it
 *   asked, which is before the database's clock started the lease).
 * - The database unreachable or slow (no answer within LEASE_TIMEOUT_MS): for FALLBACK_MS the replica
 *   calls at its share of the rate — the rate divided by the replicas that asked in the last minute
 *   (as last seen; 1 when it never reached the database) —, then asks the database again. No call
 *   waits longer than LEASE_TIMEOUT_MS for the database.
 *
 * Fairness between tenants stays the limiter's (round robin over tenants, then zones): the budget
 * only says how many calls this replica may make, never whose.
 */
import type { RateBudget } from '../ovh/ratelimit.js';
import * as store from '../store/index.js';
import { messageOf } from '../lib/error-message.js';

/** How long a lease's tokens may be spent: what a dead replica holds back at most. */
export const LEASE_LIFETIME_MS = 2_000;
/** Nobody waiting this long: the lease's unspent tokens go back. */
export const IDLE_CLOSE_MS = 100;
/** The database not answering a lease within this: the replica falls back to its share. */
export const LEASE_TIMEOUT_MS = 1_000;
/** How long a replica calls at its share before asking the database again. */
export const FALLBACK_MS = 5_000;
/** The window the rate holds over, bursts included (the refill pays for the leases' burst over it). */
export const RATE_WINDOW_S = 5;

export interface SharedBudgetOptions {
  pool: store.Queryable;
  /** The account's label (ovh/ratelimit.ts accountLabel: never the key). */
  account: string;
  /** This replica, as the leases name it. */
  replica: string;
  /** The account's rate (DNSPLANE_OVH_RATE). */
  ratePerSecond: number;
  /** Tokens per lease and the bucket's capacity; default a tenth of the rate, 1 to 100. */
  batch?: number;
  warn?: (msg: string, fields?: Record<string, unknown>) => void;
  /** For tests: this process's clock (ms) and the time the database acts at (default its own clock). */
  now?: () => number;
  dbTime?: () => Date;
}

interface Held {
  leaseId: string;
  left: number;
  /** This process's clock: no token of the lease is spent at or after it. */
  until: number;
}

export class SharedOvhBudget implements RateBudget {
  readonly batch: number;
  /** The bucket's refill (tokens per second): the rate less the burst spread over RATE_WINDOW_S. */
  readonly refillPerSecond: number;
  /** Replicas that asked in the last minute, as the database last said. */
  replicas = 1;
  /** Tokens granted by the database, over this budget's life (tests, the bench). */
  leased = 0;
  private held: Held | undefined;
  private asking: Promise<void> | undefined;
  private retry: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private ready: () => void = () => undefined;
  private fallbackUntil = -Infinity;
  private share = { tokens: 1, last: 0 };
  private closed = false;
  private readonly now: () => number;

  constructor(private readonly opts: SharedBudgetOptions) {
    if (!(opts.ratePerSecond > 0)) throw new RangeError('ratePerSecond must be > 0');
    this.batch = opts.batch ?? Math.min(100, Math.max(1, Math.floor(opts.ratePerSecond / 10)));
    if (!(Number.isInteger(this.batch) && this.batch >= 1)) throw new RangeError(`batch: expected an integer >= 1, got ${this.batch}`);
    this.refillPerSecond = Math.max(opts.ratePerSecond / 2, opts.ratePerSecond - (2 * this.batch) / RATE_WINDOW_S);
    this.now = opts.now ?? (() => performance.now());
  }

  onReady(fn: () => void): void {
    this.ready = fn;
  }

  /** Whether the replica calls at its share (the database did not answer), and until when. */
  get fallingBack(): boolean {
    return this.now() < this.fallbackUntil;
  }

  take(waiting: number): boolean {
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    const t = this.now();
    // Closed (the server stopping): what still runs calls at the share, never waits for a lease.
    if (this.closed || t < this.fallbackUntil) return this.takeShare(t);
    const h = this.held;
    if (h && h.left > 0 && t < h.until) {
      h.left--;
      return true;
    }
    void this.lease(waiting);
    return false;
  }

  idle(): void {
    if (!this.held || this.idleTimer) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.held && !this.asking) void this.lease(0);
    }, IDLE_CLOSE_MS);
    this.idleTimer.unref?.();
  }

  /**
   * Closes the lease held (its unspent tokens back) and leases up to `want` tokens (at most a batch),
   * once at a time; then tells the limiter. Nothing granted: asks again when the database says.
   */
  lease(want: number): Promise<void> {
    if (this.asking || this.retry || this.closed) return this.asking ?? Promise.resolve();
    const asked = this.now();
    const h = this.held;
    this.held = undefined;
    const close = h ? { leaseId: h.leaseId, unused: asked < h.until ? h.left : 0 } : undefined;
    const request = store.leaseOvhBudget(this.opts.pool, {
      account: this.opts.account,
      replica: this.opts.replica,
      rate: this.refillPerSecond,
      capacity: this.batch,
      want: Math.min(this.batch, Math.max(0, want)),
      lifetimeMs: LEASE_LIFETIME_MS,
      ...(close ? { close } : {}),
      ...(this.opts.dbTime ? { at: this.opts.dbTime() } : {}),
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${LEASE_TIMEOUT_MS} ms`)), LEASE_TIMEOUT_MS);
    });
    this.asking = Promise.race([request, timeout])
      .then((r) => {
        this.replicas = Math.max(1, r.replicas);
        this.leased += r.granted;
        if (r.granted > 0) this.held = { leaseId: r.leaseId!, left: r.granted, until: asked + LEASE_LIFETIME_MS };
        else if (want > 0) {
          this.retry = setTimeout(
            () => {
              this.retry = undefined;
              this.ready();
            },
            Math.max(1, Math.ceil(r.retryMs)),
          );
          this.retry.unref?.();
        }
      })
      .catch((e: unknown) => {
        // A lease granted after the timeout is never spent: it expires, as a dead replica's does.
        request.catch(() => undefined);
        if (this.closed) return;
        if (!this.fallingBack)
          this.opts.warn?.("OVH budget: the database did not lease tokens; calling at this replica's share of DNSPLANE_OVH_RATE for a while", {
            error: messageOf(e),
            share: this.opts.ratePerSecond / this.replicas,
            seconds: FALLBACK_MS / 1000,
          });
        this.fallbackUntil = this.now() + FALLBACK_MS;
        this.share = { tokens: 1, last: this.now() };
      })
      .finally(() => {
        clearTimeout(timer);
        this.asking = undefined;
        // Always: calls may have come while a closing lease (want 0) was on its way.
        this.ready();
      });
    return this.asking;
  }

  /** Stops leasing (the server stops; calls still made go at the share); the lease held expires on its own. */
  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    clearTimeout(this.idleTimer);
  }

  /** The fallback: a bucket of one token at this replica's share of the rate. */
  private takeShare(t: number): boolean {
    const rate = this.opts.ratePerSecond / this.replicas;
    this.share.tokens = Math.min(1, this.share.tokens + ((t - this.share.last) / 1000) * rate);
    this.share.last = t;
    if (this.share.tokens >= 1) {
      this.share.tokens -= 1;
      return true;
    }
    if (!this.retry) {
      this.retry = setTimeout(
        () => {
          this.retry = undefined;
          this.ready();
        },
        Math.ceil(((1 - this.share.tokens) / rate) * 1000),
      );
      this.retry.unref?.();
    }
    return false;
  }
}
