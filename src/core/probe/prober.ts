/**
 * The prober: one per process (server/server.ts starts and stops it). It runs the probes this process holds
 * — the ones its own refreshes recorded (core/probe/record.ts), heard at COMMIT through NOTIFY
 * dnsplane_probe — and takes over those whose holder's lease lapsed (a replica that died), found by a
 * scan every third of the lease, when it also renews the leases of the probes it runs. Each probe goes
 * in rounds (round.ts), the first at once, then after a backoff that grows from DNSPLANE_PROBE_BACKOFF's
 * least to its most (×1.25 a round), never past the probe's deadline; at most DNSPLANE_PROBE_QUERIES
 * DNS questions in flight for the whole process.
 */
import { setMaxListeners } from 'node:events';
import { messageOf } from '../../lib/error-message.js';
import * as store from '../../store/index.js';
import { DEFAULT_VISIBILITY, type CoreContext } from '../context.js';
import { instanceOf } from './record.js';
import { runRound, type Running } from './round.js';
import type { ServerDirectory } from './servers.js';

export interface ProberOptions {
  directory: ServerDirectory;
  /** DNSPLANE_PROBE_QUERIES: DNS questions in flight at most, for the process. */
  maxQueries: number;
  /** DNSPLANE_PROBE_BACKOFF: the wait between two rounds of a probe, from min growing to max. */
  backoff: { minMs: number; maxMs: number };
  /** How long one question waits for its answer. Default 2 s. */
  queryTimeoutMs?: number;
  /**
   * 'outside': the caller's listener hears NOTIFY dnsplane_probe and calls heard() (server/server.ts: one
   * LISTEN connection per process); default: a listener of the prober's own.
   */
  listener?: 'own' | 'outside';
}

/** Probes claimed per scan. */
const CLAIM = 64;

export class Prober {
  private readonly running = new Map<string, Running & { timer?: NodeJS.Timeout; busy?: Promise<void> }>();
  private readonly abort = new AbortController();
  private stopped = false;
  private listener?: store.Listener;
  private tick?: NodeJS.Timeout;
  private scanning?: Promise<void>;
  private rescan = false;
  private inFlight = 0;
  private readonly queue: Array<() => void> = [];
  private readonly holder: string;
  private readonly leaseMs: number;

  private constructor(
    private readonly ctx: CoreContext,
    private readonly opts: ProberOptions,
  ) {
    this.holder = instanceOf(ctx);
    // Every question in flight listens for the stop.
    setMaxListeners(0, this.abort.signal);
    this.leaseMs = (ctx.settings.visibility ?? DEFAULT_VISIBILITY).leaseMs;
  }

  /** Starts listening for probes and takes the ones waiting (this process's, and those of replicas that died). */
  static async start(ctx: CoreContext, opts: ProberOptions): Promise<Prober> {
    const p = new Prober(ctx, opts);
    if (opts.listener !== 'outside') {
      p.listener = await store.listen(
        ctx.pool,
        { probe: () => p.heard() },
        { onReconnect: () => p.heard(), onError: (e) => ctx.log.debug({ err: messageOf(e) }, 'prober: LISTEN connection error') },
      );
    }
    p.tick = setInterval(() => void p.renew().then(() => p.scan()), Math.max(50, Math.floor(p.leaseMs / 3)));
    p.tick.unref();
    p.scan();
    return p;
  }

  /** A probe was recorded (NOTIFY dnsplane_probe), or notifications may have been missed: claim what is due. */
  heard(): void {
    this.scan();
  }

  /** Probes this process runs now. */
  get probes(): number {
    return this.running.size;
  }

  /** Stops: nothing more is asked or written; the leases end now, so another replica takes the probes over at once. */
  async stop(): Promise<void> {
    const ids = await this.halt();
    await store
      .releaseProbes(this.ctx.pool, this.holder, ids)
      .catch((e: unknown) => this.ctx.log.warn({ err: messageOf(e) }, 'prober: the leases could not be released; they lapse'));
  }

  /**
   * Stops as a process that died would: nothing more is asked or written, the leases are left to
   * lapse (another replica takes the probes over then). Returns the probes it ran.
   */
  async halt(): Promise<string[]> {
    this.stopped = true;
    this.abort.abort();
    clearInterval(this.tick);
    for (const r of this.running.values()) clearTimeout(r.timer);
    await this.listener?.stop();
    await Promise.all([...[...this.running.values()].map((r) => r.busy), this.scanning]);
    const ids = [...this.running.keys()];
    this.running.clear();
    return ids;
  }

  /** Claims the probes due to this process (again once more when asked while it ran). */
  private scan(): void {
    if (this.stopped) return;
    if (this.scanning) {
      this.rescan = true;
      return;
    }
    this.scanning = (async () => {
      do {
        this.rescan = false;
        const claimed = await store.claimProbes(this.ctx.pool, this.holder, this.leaseMs, CLAIM, [...this.running.keys()]);
        for (const row of claimed) {
          if (this.stopped) return;
          const run = { row, rounds: row.rounds, servers: new Map(), written: new Map() };
          this.running.set(row.id, run);
          this.schedule(run, row.nextAt.getTime() - Date.now());
        }
        if (claimed.length === CLAIM) this.rescan = true;
      } while (this.rescan && !this.stopped);
    })()
      .catch((e: unknown) => this.ctx.log.warn({ err: messageOf(e) }, 'prober: could not claim probes; the next scan tries again'))
      .finally(() => (this.scanning = undefined));
  }

  /** Renews the leases of the probes it runs; forgets those another replica took over. */
  private async renew(): Promise<void> {
    if (this.stopped || this.running.size === 0) return;
    try {
      const held = await store.renewProbes(this.ctx.pool, this.holder, [...this.running.keys()], this.leaseMs);
      for (const [id, r] of this.running) {
        if (held.has(id) || this.stopped) continue;
        clearTimeout(r.timer);
        this.running.delete(id);
      }
    } catch (e) {
      this.ctx.log.warn({ err: messageOf(e) }, 'prober: could not renew its leases');
    }
  }

  private schedule(run: Running & { timer?: NodeJS.Timeout; busy?: Promise<void> }, delayMs: number): void {
    if (this.stopped) return;
    run.timer = setTimeout(
      () => {
        run.busy = this.round(run).finally(() => (run.busy = undefined));
      },
      Math.max(0, delayMs),
    );
    run.timer.unref();
  }

  private async round(run: Running & { timer?: NodeJS.Timeout }): Promise<void> {
    const id = run.row.id;
    try {
      const done = await runRound(this.ctx, run, {
        directory: this.opts.directory,
        limit: (fn) => this.limited(fn),
        queryTimeoutMs: this.opts.queryTimeoutMs ?? 2_000,
        signal: this.abort.signal,
        live: () => !this.stopped && this.running.has(id),
      });
      if (this.stopped || !this.running.has(id)) return;
      if (done) {
        await store.deleteProbe(this.ctx.pool, id);
        this.running.delete(id);
        return;
      }
    } catch (e) {
      if (this.stopped) return;
      this.ctx.log.warn({ zone: run.row.zone, probe: id, err: messageOf(e) }, 'prober: a round failed; it is tried again');
    }
    const { minMs, maxMs } = this.opts.backoff;
    const untilDeadline = Math.max(0, run.row.deadline.getTime() - Date.now());
    const delay = Math.min(maxMs, minMs * 1.25 ** Math.max(0, run.rounds - 1), untilDeadline);
    const held = await store.scheduleProbe(this.ctx.pool, this.holder, id, delay, run.rounds).catch(() => true);
    if (!held) {
      this.running.delete(id);
      return;
    }
    this.schedule(run, delay);
  }

  /** Runs fn once fewer than maxQueries questions are in flight. */
  private async limited<T>(fn: () => Promise<T>): Promise<T> {
    if (this.inFlight >= this.opts.maxQueries) await new Promise<void>((resolve) => this.queue.push(resolve));
    this.inFlight++;
    try {
      return await fn();
    } finally {
      this.inFlight--;
      this.queue.shift()?.();
    }
  }
}
