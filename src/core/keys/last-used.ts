/**
 * "Last used" of a credential (a TSIG key, an OVH key), coalesced per credential and process: the
 * first use after a quiet interval is written at once; later uses within the interval are remembered
 * and the latest is written when the interval ends — never a write per request. "At once" is within
 * BATCH_MS, in one statement with every other credential's use of that moment: two thousand clusters
 * polling for the first time after a start are one write, not two thousand (each one a pooled
 * connection). A failed write is logged (no secret is involved) and dropped. When the process stops
 * (its Lifecycle), every use still waiting for its interval is written at once and so is each use
 * after it, as tasks the stop waits for before the pools end. A use may say where it came from (a
 * client address): the latest use's is written with it.
 */
import type { Logger } from 'pino';
import { messageOf } from '../../lib/error-message.js';
import type { Lifecycle } from '../lifecycle.js';

/** "Last used" is written at most this often per credential and process. */
export const LAST_USED_EVERY_MS = 60_000;
/** The uses of this long are written together. */
const BATCH_MS = 50;
/** At most this many uses in one statement. */
const BATCH_MAX = 1_000;

export class LastUsed {
  private readonly keys = new Map<string, { writtenAt: number; pending?: number; from?: string; timer?: NodeJS.Timeout }>();
  /** Uses to write in the next batch. */
  private batch: Array<{ id: string; at: Date; from?: string }> = [];
  private batchTimer: NodeJS.Timeout | undefined;

  constructor(
    /** Writes the uses (store.TSIG_KEYS.noteUsed, store.OVH_KEYS.noteUsed). */
    private readonly write: (uses: Array<{ id: string; at: Date; from?: string }>) => Promise<void>,
    private readonly log: Logger,
    /** What a credential is, for the log line ("TSIG key"). */
    private readonly what: string,
    private readonly everyMs: number = LAST_USED_EVERY_MS,
    private readonly clock: () => number = Date.now,
    /** The process's stop: the uses waiting are written when it begins, tracked by it. */
    private readonly lifecycle?: Lifecycle,
  ) {
    lifecycle?.onStop(() => this.writeWaiting());
  }

  /** The credential with this row id authenticated a request now (from this client address, when said). */
  note(id: string, from?: string): void {
    const now = this.clock();
    const state = this.keys.get(id);
    if (!state || (now - state.writtenAt >= this.everyMs && !state.timer) || this.lifecycle?.stopping) {
      if (!state && this.keys.size >= 10_000) this.prune(now);
      this.keys.set(id, { writtenAt: now });
      this.record(id, now, from);
      return;
    }
    state.pending = Math.max(state.pending ?? now, now);
    if (from !== undefined) state.from = from;
    if (state.timer) return;
    state.timer = setTimeout(
      () => {
        state.timer = undefined;
        const at = state.pending;
        const from = state.from;
        state.pending = undefined;
        state.from = undefined;
        if (at === undefined) return;
        state.writtenAt = this.clock();
        this.record(id, at, from);
      },
      Math.max(0, state.writtenAt + this.everyMs - now),
    );
    state.timer.unref();
  }

  private record(id: string, at: number, from: string | undefined): void {
    this.batch.push({ id, at: new Date(at), ...(from !== undefined ? { from } : {}) });
    if (this.batch.length >= BATCH_MAX || this.lifecycle?.stopping) this.flush();
    else if (!this.batchTimer) {
      this.batchTimer = setTimeout(() => this.flush(), BATCH_MS);
      this.batchTimer.unref();
    }
  }

  /** Writes the uses waiting, in one statement (the latest of a credential's, should it be there twice). */
  private flush(): void {
    if (this.batchTimer) clearTimeout(this.batchTimer);
    this.batchTimer = undefined;
    const uses = [...new Map(this.batch.map((u) => [u.id, u])).values()];
    this.batch = [];
    if (uses.length === 0) return;
    const written = this.write(uses).catch((e: unknown) => {
      this.log.warn({ err: messageOf(e), uses: uses.length, credential: this.what }, `could not record when ${uses.length} ${this.what}(s) were last used`);
    });
    this.lifecycle?.track(written);
  }

  /** The stop began: each credential's use waiting for its interval, and the batch, written now. */
  private writeWaiting(): void {
    for (const [id, state] of this.keys) {
      if (!state.timer) continue;
      clearTimeout(state.timer);
      state.timer = undefined;
      if (state.pending !== undefined) this.batch.push({ id, at: new Date(state.pending), ...(state.from !== undefined ? { from: state.from } : {}) });
      state.pending = undefined;
      state.from = undefined;
    }
    this.flush();
  }

  /** Forgets credentials with nothing pending whose interval is over (they start afresh at their next use). */
  private prune(now: number): void {
    for (const [id, s] of this.keys) if (!s.timer && now - s.writtenAt >= this.everyMs) this.keys.delete(id);
  }
}
