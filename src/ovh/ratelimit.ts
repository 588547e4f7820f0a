import { createHash } from 'node:crypto';

/**
 * Who an OVH call is made for: the tenant whose request caused it and the zone it works on. Core
 * scopes a client to it (OvhApi.scoped, client/scope.ts) around each use case; the client hands it
 * to the limiter. Either may be missing: work no tenant asked for (the drift check, recovery at
 * start) shares one "tenant" of its own.
 */
export interface OvhFlow {
  tenant?: string;
  zone?: string;
}

/**
 * The account's budget beyond this process: OVH counts one rate per account, whichever replica
 * calls. core/ovh-budget.ts implements it over the database (tokens leased in small batches from
 * one row, shared by every replica); server/server.ts hands it to the client. The limiter grants a call
 * only with a token of it, after its own spacing and fairness: which tenant goes next stays the
 * limiter's choice, how many calls the account may make the budget's.
 */
export interface RateBudget {
  /** Takes one token when this process holds one now (no I/O). False: none held; it gets more (for `waiting` calls) and calls the ready callback when take() may succeed. */
  take(waiting: number): boolean;
  /** Nobody waits any more: tokens held may go back to the account. */
  idle(): void;
  /** Sets what the budget calls when tokens may be there again. */
  onReady(fn: () => void): void;
}

/** What acquire() hands back: the whole wait, and when the token was granted (on the limiter's clock). */
export interface Grant {
  waitedMs: number;
  /**
   * The limiter's `now()` at the moment it gave this call its token: the point where the rate is
   * decided. Two grants are never closer than 1/rate on this clock, whatever happens to the call after.
   */
  grantedAt: number;
}

interface Waiter {
  start: number;
  /** grants when it started waiting. */
  grantsBefore: number;
  grant: (g: Grant) => void;
}

/** One decision of the limiter, in grant order (RateLimiter.observe). */
export interface GrantNotice extends Grant {
  /** 1, 2, 3, … over the limiter's life. */
  seq: number;
  flow: OvhFlow;
  /** Calls granted while this one waited: what waiting its turn cost it (in a FIFO: everything queued before it). */
  grantedWhileWaiting: number;
  /** Calls still waiting after this grant. */
  queued: number;
}

/** Round robin over keys: a Map in service order (the next to serve first). */
class Ring<V> {
  readonly items = new Map<string, V>();

  get size(): number {
    return this.items.size;
  }

  /** The entry of `key`, created at the end of the ring (last to be served) when absent. */
  entry(key: string, make: () => V): V {
    let v = this.items.get(key);
    if (v === undefined) {
      v = make();
      this.items.set(key, v);
    }
    return v;
  }

  /** The first entry in service order. */
  head(): [string, V] | undefined {
    const first = this.items.entries().next();
    return first.done ? undefined : first.value;
  }

  /** After serving `key`: to the end of the ring when it still waits, out of it when not. */
  served(key: string, stillWaiting: boolean): void {
    const v = this.items.get(key)!;
    this.items.delete(key);
    if (stillWaiting) this.items.set(key, v);
  }
}

/**
 * A token bucket and a bound on calls in flight, shared fairly.
 *
 * The bucket holds at most one token and refills at `ratePerSecond`, so calls start at least 1/rate
 * apart — no burst: "20 per second" is what OVH sees in every window, not 20 at once then a pause.
 * A call waits until both a token and a concurrency slot are free (it holds no slot while it waits).
 *
 * Fairness: waiting calls queue per flow (OvhFlow), and each grant goes round robin, first over
 * tenants, then over that tenant's zones, FIFO within a zone. So a tenant with a thousand calls queued
 * (a bulk apply, a cold read, applies to many zones at once) gets one call in turn with every other
 * waiting tenant: another tenant's call waits for at most one grant per tenant waiting, never behind
 * the whole queue; and within a tenant, one zone's burst does not starve its other zones. With a
 * single flow waiting it is plain FIFO at the full rate: nothing is reserved for absent tenants.
 *
 * acquire() returns the whole wait, which the client reports (metrics), and the grant time, which it
 * reports too (the rate tests assert on it: delivery delays after the grant are the network's and the
 * scheduler's, not the limiter's). One limiter per OVH application key is shared by every zone in the
 * process (limiterFor).
 */
export class RateLimiter {
  private tokens: number;
  private last: number;
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  private waiting = 0;
  private grants = 0;
  /** tenant -> zone -> waiters. */
  private readonly tenants = new Ring<Ring<Waiter[]>>();
  private readonly observers = new Set<(g: GrantNotice) => void>();

  constructor(
    readonly ratePerSecond: number,
    readonly maxConcurrent: number,
    private readonly now: () => number = () => performance.now(),
    /** The account's budget shared with other processes (none: this process is alone on the account). */
    private readonly budget?: RateBudget,
  ) {
    if (!(ratePerSecond > 0)) throw new Error('rate must be > 0');
    if (!(maxConcurrent >= 1)) throw new Error('maxConcurrent must be >= 1');
    this.tokens = 1;
    this.last = this.now();
    budget?.onReady(() => this.pump());
  }

  /** Waits for a token and a concurrency slot, in turn with the other flows; returns the wait and the grant time. Call release() after. */
  acquire(flow: OvhFlow = {}): Promise<Grant> {
    return new Promise<Grant>((grant) => {
      const tenant = this.tenants.entry(flow.tenant ?? '', () => new Ring<Waiter[]>());
      tenant.entry(flow.zone ?? '', () => []).push({ start: this.now(), grantsBefore: this.grants, grant });
      this.waiting++;
      this.pump();
    });
  }

  release(): void {
    this.inFlight--;
    this.pump();
  }

  /** Calls waiting for a grant. */
  get queued(): number {
    return this.waiting;
  }

  /** Tells `fn` of every grant from now on, in grant order, where the limiter decides; returns the unsubscribe. */
  observe(fn: (g: GrantNotice) => void): () => void {
    this.observers.add(fn);
    return () => this.observers.delete(fn);
  }

  /** Grants what can be granted now; arms the timer for the next token otherwise. */
  private pump(): void {
    while (this.waiting > 0 && this.inFlight < this.maxConcurrent) {
      const t = this.refill();
      if (this.tokens < 1) {
        this.arm();
        return;
      }
      // The account's token, once this process may call: none held means wait for the budget's ready.
      if (this.budget && !this.budget.take(this.waiting)) return;
      this.tokens -= 1;
      this.inFlight++;
      this.waiting--;
      const [tenantKey, zones] = this.tenants.head()!;
      const [zoneKey, queue] = zones.head()!;
      const w = queue.shift()!;
      zones.served(zoneKey, queue.length > 0);
      this.tenants.served(tenantKey, zones.size > 0);
      const granted: Grant = { waitedMs: t - w.start, grantedAt: t };
      const seq = ++this.grants;
      if (this.observers.size > 0) {
        const g: GrantNotice = {
          ...granted,
          seq,
          flow: { ...(tenantKey ? { tenant: tenantKey } : {}), ...(zoneKey ? { zone: zoneKey } : {}) },
          grantedWhileWaiting: seq - 1 - w.grantsBefore,
          queued: this.waiting,
        };
        for (const fn of this.observers) fn(g);
      }
      w.grant(granted);
    }
    if (this.waiting === 0) this.budget?.idle();
  }

  /** Returns the time it refilled at. */
  private refill(): number {
    const t = this.now();
    // Burst capacity of one token: calls are spaced 1/rate apart, which is what "N per second" means to OVH.
    this.tokens = Math.min(1, this.tokens + ((t - this.last) / 1000) * this.ratePerSecond);
    this.last = t;
    return t;
  }

  private arm(): void {
    if (this.timer) return;
    const wait = Math.max(0, ((1 - this.tokens) / this.ratePerSecond) * 1000);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.pump();
    }, Math.ceil(wait));
    this.timer.unref?.();
  }
}

const limiters = new Map<string, RateLimiter>();
/** The limiters of each shared budget (a budget belongs to one server: kept as long as it is). */
const budgeted = new WeakMap<RateBudget, Map<string, RateLimiter>>();

/**
 * The process-wide limiter of one OVH application key (the key itself is not kept, only a label),
 * under `budget` when the account's budget is shared with other processes.
 */
export function limiterFor(key: string, ratePerSecond: number, maxConcurrent: number, budget?: RateBudget): RateLimiter {
  const id = `${accountLabel(key)}|${ratePerSecond}|${maxConcurrent}`;
  let byId = limiters;
  if (budget) {
    let b = budgeted.get(budget);
    if (!b) budgeted.set(budget, (b = new Map()));
    byId = b;
  }
  let l = byId.get(id);
  if (!l) {
    l = new RateLimiter(ratePerSecond, maxConcurrent, undefined, budget);
    byId.set(id, l);
  }
  return l;
}

/** The label an OVH account is known by (its budget's row, the limiter's key): a SHA-256 of the key, never the key. */
export function accountLabel(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
