/**
 * The health checker: one per process (server/server.ts starts and stops it). Every DNSPLANE_HEALTH_INTERVAL
 * it runs a round: it takes the leases of the record sets with a check that no live replica holds
 * (its own renewed; store/health.ts claimCheckedSets), so one replica checks a set at a time and
 * another takes a set over within one lease when its replica dies; it checks each target of each
 * set (only the set's own targets, at most DNSPLANE_HEALTH_CONCURRENCY checks in flight for the
 * process, each within DNSPLANE_HEALTH_TIMEOUT: probe.ts), steps each set's state machine (state.ts),
 * asks the withdrawal mechanism to withdraw or restore what the step says (reason 'health', the
 * check's last answers as the detail: an apply through core, fenced, journalled, the zone's change
 * threshold applying), and writes the targets' states, fenced by the lease. Health probing costs no
 * OVH call; a withdrawal costs one DELETE per target and a restore one POST, with one refresh.
 * Time comes from `clock` and rounds can be run on demand (runRound): tests drive both.
 */
import { setMaxListeners } from 'node:events';
import { messageOf } from '../../lib/error-message.js';
import { parseHealthCheck, type HealthCheck } from '../../dns/health-check.js';
import { subDomainOf } from '../../dns/names.js';
import type { RecordType } from '../../dns/types.js';
import { ovhTargetToCanonical } from '../../ovh/mapping.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { instanceOf } from '../probe/record.js';
import type { CheckAnswer } from '../reads/health-view.js';
import { checkTarget, describeCheck, type CheckTarget } from './probe.js';
import { stepSet, type HealthRules, type TargetHealth } from './state.js';

/** One target to withdraw or restore (the withdrawal mechanism's item, reason 'health'). */
export interface HealthItem {
  /** The record's name (normalized fqdn). */
  name: string;
  type: string;
  /** Canonical form, as ownership holds it. */
  target: string;
  /** For people, journalled: the check and its last answers. */
  detail: string;
  evidence: CheckAnswer[];
}

/** What the mechanism did with each item: done (withdrawn/restored) or kept, and why. */
export type HealthItemOutcome = { target: string; done: boolean; why?: string };

/** The withdrawal mechanism as the checker uses it (core/withdrawals/withdrawals.ts, adapted in server/server.ts). */
export interface Withdrawals {
  withdraw(zone: string, items: HealthItem[]): Promise<HealthItemOutcome[]>;
  restore(zone: string, items: HealthItem[]): Promise<HealthItemOutcome[]>;
  /** The targets of a set withdrawn now (any reason): they are checked too (they must come back). */
  withdrawnTargets?(zone: string, name: string, type: string): Promise<string[]>;
}

export interface HealthSettings extends HealthRules {
  /** DNSPLANE_HEALTH_INTERVAL. */
  intervalMs: number;
  /** DNSPLANE_HEALTH_TIMEOUT: one check's bound. */
  timeoutMs: number;
  /** DNSPLANE_HEALTH_CONCURRENCY: checks in flight at most, for the process. */
  concurrency: number;
  /** A set's lease: another replica takes the set over when its holder has not renewed it for this long. */
  leaseMs: number;
}

export const DEFAULT_HEALTH: HealthSettings = {
  intervalMs: 10_000,
  timeoutMs: 2_000,
  concurrency: 64,
  leaseMs: 30_000,
  failures: 3,
  successes: 2,
  flapLimit: 3,
  flapWindowMs: 10 * 60_000,
  holdMs: 5 * 60_000,
};

/** The lease of a set outlives three rounds: one slow round never hands it to another replica. */
export function leaseFor(intervalMs: number): number {
  return 3 * intervalMs;
}

/** Sets taken per round (a replica checks at most this many sets per interval). */
const CLAIM = 10_000;
/** Sets worked on at once in a round. */
const SETS_AT_ONCE = 16;

export interface CheckerOptions {
  settings: HealthSettings;
  withdrawals: Withdrawals;
  /** The time the state machine sees (tests move it). Default: the wall clock. */
  clock?: () => Date;
  /** Rounds on a timer (default true); false: only runRound() (tests). */
  timer?: boolean;
  /** The holder name of this process's leases (default: the instance). */
  holder?: string;
}

/** What one round did, for tests and logs. */
export interface RoundReport {
  sets: number;
  checks: number;
  withdrawn: Array<{ zone: string; name: string; target: string }>;
  restored: Array<{ zone: string; name: string; target: string }>;
  allDown: Array<{ zone: string; name: string }>;
}

export class HealthChecker {
  private timer?: NodeJS.Timeout;
  private running?: Promise<RoundReport>;
  private stopped = false;
  private inFlight = 0;
  private readonly queue: Array<() => void> = [];
  private readonly abort = new AbortController();
  readonly holder: string;
  /** Rounds completed (tests). */
  rounds = 0;

  constructor(
    private readonly ctx: CoreContext,
    private readonly opts: CheckerOptions,
  ) {
    this.holder = opts.holder ?? instanceOf(ctx);
    // Every check in flight listens for the stop.
    setMaxListeners(0, this.abort.signal);
  }

  static start(ctx: CoreContext, opts: CheckerOptions): HealthChecker {
    const c = new HealthChecker(ctx, opts);
    if (opts.timer ?? true) {
      c.timer = setInterval(
        () => void c.runRound().catch((e: unknown) => ctx.log.warn({ err: messageOf(e) }, 'health check round failed')),
        opts.settings.intervalMs,
      );
      c.timer.unref();
    }
    return c;
  }

  /** Runs one round now (or joins the one running). */
  runRound(): Promise<RoundReport> {
    if (this.stopped) return Promise.resolve({ sets: 0, checks: 0, withdrawn: [], restored: [], allDown: [] });
    this.running ??= this.round().finally(() => (this.running = undefined));
    return this.running;
  }

  /** Stops the rounds; the leases are released so that another replica takes the sets at once. */
  async stop(opts: { release?: boolean } = {}): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.abort.abort();
    await this.running?.catch(() => undefined);
    if (opts.release ?? true) await store.releaseCheckedSets(this.ctx.pool, this.holder).catch(() => undefined);
  }

  private now(): Date {
    return this.opts.clock?.() ?? new Date();
  }

  private async round(): Promise<RoundReport> {
    const { settings } = this.opts;
    const sets = await store.claimCheckedSets(this.ctx.pool, this.holder, settings.leaseMs, CLAIM);
    const report: RoundReport = { sets: sets.length, checks: 0, withdrawn: [], restored: [], allDown: [] };
    // Sets SETS_AT_ONCE at a time (their database reads share the pool with the API); their checks
    // share the process's DNSPLANE_HEALTH_CONCURRENCY.
    let next = 0;
    const worker = async () => {
      while (next < sets.length && !this.stopped) {
        const set = sets[next++]!;
        await this.checkSet(set, report).catch((e: unknown) => {
          this.ctx.log.warn({ zone: set.zone, name: set.dnsName, type: set.recordType, err: messageOf(e) }, 'health check of a record set failed');
        });
      }
    };
    await Promise.all(Array.from({ length: Math.min(SETS_AT_ONCE, sets.length) }, worker));
    this.rounds++;
    return report;
  }

  /** The targets of a set to check, each with its owner's check. */
  private async targetsOf(set: store.CheckedSet): Promise<Map<string, CheckTarget>> {
    const checks = await store.listSetChecks(this.ctx.pool, set);
    const out = new Map<string, CheckTarget>();
    const parsed = (url: string): HealthCheck | undefined => {
      try {
        return parseHealthCheck(url, 'health_check');
      } catch {
        return undefined; // the schema's CHECK keeps these out; an older row is skipped, not trusted
      }
    };
    const exclusive = checks.find((c) => c.target === '');
    if (exclusive) {
      const check = parsed(exclusive.check);
      if (!check) return out;
      const rows = await store.listRecordsForNames(this.ctx.pool, set.zone, [{ subDomain: subDomainOf(set.dnsName, set.zone), fieldType: set.recordType }]);
      const targets = new Set(
        rows.map((r) => ovhTargetToCanonical(set.recordType as RecordType, r.target, set.zone)).filter((t): t is string => t !== undefined),
      );
      for (const t of (await this.opts.withdrawals.withdrawnTargets?.(set.zone, set.dnsName, set.recordType)) ?? []) targets.add(t);
      for (const t of targets) out.set(t, { check, address: t, name: set.dnsName });
      return out;
    }
    for (const c of checks) {
      const check = parsed(c.check);
      if (check) out.set(c.target, { check, address: c.target, name: set.dnsName });
    }
    return out;
  }

  private async checkSet(set: store.CheckedSet, report: RoundReport): Promise<void> {
    const targets = await this.targetsOf(set);
    if (targets.size === 0) return;
    const answers = new Map<string, CheckAnswer>();
    await Promise.all(
      [...targets].map(async ([target, t]) => answers.set(target, await this.bounded(() => checkTarget(t, this.opts.settings.timeoutMs, this.abort.signal)))),
    );
    report.checks += answers.size;
    for (const a of answers.values()) this.ctx.metrics?.healthChecked(a.ok);
    if (this.stopped) return;
    const before = new Map((await store.listTargetHealth(this.ctx.pool, set.zone, set)).map((r) => [r.target, fromRow(r)] as const));
    const step = stepSet(before, answers, this.now(), this.opts.settings);
    const byTarget = new Map(step.states.map((s) => [s.target, s] as const));
    const item = (target: string, verb: string): HealthItem => {
      const s = byTarget.get(target)!;
      const last = s.answers.map((a) => a.result).join(', ');
      return {
        name: set.dnsName,
        type: set.recordType,
        target,
        detail: `health check ${describeCheck(targets.get(target)!)} ${verb}: last answers ${last}`,
        evidence: s.answers,
      };
    };
    if (step.allDown) {
      report.allDown.push({ zone: set.zone, name: set.dnsName });
      this.ctx.log.warn(
        { zone: set.zone, name: set.dnsName, type: set.recordType, targets: [...targets.keys()] },
        'every target of the set fails its check: all stay published (fail open)',
      );
    }
    if (step.restore.length > 0) {
      const done = await this.opts.withdrawals.restore(
        set.zone,
        step.restore.map((t) => item(t, step.allDown ? 'fails on every target (fail open)' : 'passes again')),
      );
      for (const o of done) {
        if (o.done) report.restored.push({ zone: set.zone, name: set.dnsName, target: o.target });
        // Not restored: it stays down, asked again next round.
        else if (byTarget.get(o.target)) byTarget.get(o.target)!.state = 'down';
      }
    }
    if (step.withdraw.length > 0) {
      const done = await this.opts.withdrawals.withdraw(
        set.zone,
        step.withdraw.map((t) => item(t, 'fails')),
      );
      for (const o of done) {
        if (o.done) report.withdrawn.push({ zone: set.zone, name: set.dnsName, target: o.target });
        else {
          // Kept (never the last, the threshold …): failing, and tried again next round.
          const s = byTarget.get(o.target);
          if (s) {
            s.state = 'failing';
            s.flaps = Math.max(0, s.flaps - 1);
          }
          this.ctx.log.info({ zone: set.zone, name: set.dnsName, target: o.target, why: o.why }, 'failing target kept published');
        }
      }
    }
    const held = await store.saveTargetHealth(
      this.ctx.pool,
      this.holder,
      set,
      step.states.map((s) => ({ ...s, answers: s.answers as unknown as store.JsonValue })),
    );
    if (!held) {
      this.ctx.log.info({ zone: set.zone, name: set.dnsName }, 'health: lease of the set lost during the round (another replica checks it now)');
      return;
    }
    // A target that changed state changes what Records shows (core/reads/health-view.ts): the generation moves,
    // and its NOTIFY names the set, so that the read caches cut that set's answers again, not the zone's.
    const shown = (s: Pick<TargetHealth, 'state'> | undefined) => (s === undefined ? 'new' : s.state === 'healthy' ? 'healthy' : 'failing');
    if (step.states.some((s) => shown(s) !== shown(before.get(s.target)))) {
      const generation = await store.bumpGeneration(this.ctx.pool, set.zone);
      await store.notifyZoneChanged(this.ctx.pool, set.zone, generation, { ids: [], sets: [{ dnsName: set.dnsName, recordType: set.recordType }] });
    }
  }

  /** Runs `fn` with at most DNSPLANE_HEALTH_CONCURRENCY others in flight. */
  private async bounded<T>(fn: () => Promise<T>): Promise<T> {
    if (this.inFlight >= this.opts.settings.concurrency) await new Promise<void>((resolve) => this.queue.push(resolve));
    this.inFlight++;
    try {
      return await fn();
    } finally {
      this.inFlight--;
      this.queue.shift()?.();
    }
  }
}

function fromRow(r: store.TargetHealthRow): TargetHealth {
  return {
    target: r.target,
    state: r.state,
    failures: r.failures,
    successes: r.successes,
    flaps: r.flaps,
    ...(r.heldUntil ? { heldUntil: r.heldUntil } : {}),
    since: r.since,
    answers: Array.isArray(r.answers) ? (r.answers as unknown as CheckAnswer[]) : [],
  };
}
