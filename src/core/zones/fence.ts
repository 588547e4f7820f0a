/**
 * Fencing: an apply (or a recovery) sends an OVH write or a refresh only while it still holds its
 * zone lock.
 *
 * The zone lock is a transaction-scoped advisory lock: when its session dies (a terminated backend,
 * a Postgres restart or failover, a cut connection) Postgres frees it at once, and another holder
 * (another replica, or the next apply of this one) may take it, while the first holder keeps running.
 * So, under every zone lock:
 * - Before each OVH write attempt (retries included, after the rate limiter, right before the
 *   request), ZoneFence.beforeWrite runs `SELECT 1` on the lock's own session: it succeeds only while
 *   that session and its transaction — hence the lock — are alive. Once it fails, every later write
 *   is refused: after a lock loss at most the one call already in flight lands.
 * - The journal rows the holder works on carry a lease (journal.live_until), renewed before a write
 *   when half of LEASE_STEP_MS has passed, through the journal's own pool but fenced: the UPDATE
 *   itself checks in pg_locks that the holder's session (pid + backend start) still holds the lock.
 *   The journal's pool can thus never move an apply forward, nor extend its lease, once its lock is
 *   gone.
 * - The next holder waits, before rolling such a row back, until none of the old holder's calls can
 *   still land (store.recoveryWaitMs: the lease's end, or the old holder's OVH timeout + margin after
 *   now, whichever comes first).
 * - Past the shutdown deadline (Lifecycle) no write leaves either.
 * The fence is handed to OVH explicitly: `fence.ovh` is the client scoped to it (OvhApi.scoped), and
 * everything under the lock that calls OVH is given that client, never the unfenced ctx.ovh.
 */
import { hostname } from 'node:os';
import type pg from 'pg';
import type { OvhApi } from '../../ovh/client.js';
import type { WriteGuard } from '../../ovh/client/scope.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { ShuttingDownError } from '../errors.js';
import { messageOf } from '../../lib/error-message.js';

/** A holder renews its lease when half of this has passed since the last renewal. */
export const LEASE_STEP_MS = 2_000;
/** Added to the OVH call timeout: a request the client gave up on may still be handled by OVH. */
export const FENCE_MARGIN_MS = 2_000;
/** How long the lock's session may take to answer the fence check before the lock counts as lost. */
export const FENCE_CHECK_TIMEOUT_MS = 5_000;

const defaultInstance = `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 10)}`;

export class ZoneFence implements WriteGuard {
  /** Set once the lock is known lost: every later write is refused with it. */
  lost: store.ZoneLockLostError | undefined;
  /** Write attempts this fence let through so far (a caller compares before/after a call). */
  writesAllowed = 0;
  /** The OVH client whose writes go through this fence, its calls in this zone's share of the rate. */
  readonly ovh: OvhApi;
  private readonly leased = new Set<string>();
  private renewedAt = 0;

  private constructor(
    private readonly ctx: CoreContext,
    private readonly tx: pg.PoolClient,
    readonly zone: string,
    readonly session: store.LockSession,
  ) {
    this.ovh = ctx.ovh.scoped({ flow: { zone }, guard: this });
  }

  /** The fence of the zone lock `tx` holds (reads the session's identity: one query). */
  static async open(ctx: CoreContext, tx: pg.PoolClient, zone: string): Promise<ZoneFence> {
    return new ZoneFence(ctx, tx, zone, await store.lockSession(tx, zone));
  }

  /** What this holder writes in the journal's fencing columns. */
  journalFence(): store.JournalFence {
    const timeout = this.ctx.ovh.timeoutMs;
    return {
      session: this.session,
      holder: `${this.ctx.instance ?? defaultInstance} session ${this.session.pid}`,
      leaseMs: LEASE_STEP_MS + timeout + FENCE_MARGIN_MS,
      fenceMs: timeout + FENCE_MARGIN_MS,
    };
  }

  /** Journal rows whose lease this holder renews before its writes (its own intent, rows it recovers). */
  lease(journalId: string): void {
    this.leased.add(journalId);
    this.renewedAt = performance.now();
  }

  /** The holder stopped sending for this row. */
  unlease(journalId: string): void {
    this.leased.delete(journalId);
  }

  /** Throws ZoneLockLostError unless the lock's session answers now. */
  async check(): Promise<void> {
    if (this.lost) throw this.lost;
    try {
      await store.checkLockHeld(this.tx, this.zone, FENCE_CHECK_TIMEOUT_MS);
    } catch (e) {
      this.lost = e instanceof store.ZoneLockLostError ? e : new store.ZoneLockLostError(this.zone, messageOf(e));
      throw this.lost;
    }
  }

  async beforeWrite(method: string, path: string): Promise<void> {
    if (this.ctx.lifecycle?.pastDeadline) throw new ShuttingDownError(`dnsplane is shutting down: ${method} ${path} was not sent (past the shutdown deadline)`);
    await this.check();
    if (this.leased.size > 0 && performance.now() - this.renewedAt >= LEASE_STEP_MS / 2) {
      const started = performance.now();
      let renewed: number;
      try {
        renewed = await store.renewJournalLease(this.ctx.journalPool ?? this.ctx.pool, [...this.leased], this.session, this.journalFence().leaseMs);
      } catch (e) {
        this.lost = new store.ZoneLockLostError(this.zone, `its journal lease could not be renewed: ${messageOf(e)}`);
        throw this.lost;
      }
      if (renewed < this.leased.size) {
        this.lost = new store.ZoneLockLostError(this.zone, 'the database no longer shows its session holding it');
        throw this.lost;
      }
      this.renewedAt = started;
    }
    this.writesAllowed++;
  }
}
