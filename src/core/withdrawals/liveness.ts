/**
 * Tenant liveness (issue 30): every authenticated call of a tenant — a Records poll, an apply, a
 * webhook call, a DNS UPDATE, a call to the served OVH API — is a sign of life, written coarsely to
 * `tenants.last_seen_at` (core/keys/last-used.ts: the first call after a quiet interval at once, the latest
 * of the interval at its end; never a write per request). A tenant with `withdraw_after` that has been
 * silent that long has its targets of SHARED record sets withdrawn from OVH (core/withdrawals/withdrawals.ts,
 * reason 'silent', journalled "tenant c2 silent since …"); exclusive sets are left alone (there is no
 * other target to send anyone to), and the mechanism never withdraws the last target of a set. The
 * check runs on one replica at a time (a job lock, store.tryJobLock). When the tenant calls again, the
 * write of that sign of life answers that it has targets withdrawn for its silence, and they are
 * restored at once (not at the loop's next turn). Its Records shows them throughout (marked
 * withdrawn), so its external-dns plans nothing.
 *
 * A tenant is judged silent when its last_seen_at is older than withdraw_after plus the write interval
 * (a call may be written up to that late).
 */
import { messageOf } from '../../lib/error-message.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { LastUsed, LAST_USED_EVERY_MS } from '../keys/last-used.js';
import { workloadOf } from '../tenants/caller.js';
import { restoreTargets, withdrawTargets, type WithdrawOutcome } from './withdrawals.js';

/** How often the silent tenants are looked for (DNSPLANE_SILENT_CHECK_INTERVAL). */
export const SILENT_CHECK_EVERY_MS = 10_000;

export interface LivenessOptions {
  /** last_seen_at is written at most this often per tenant and process (default a minute). */
  writeEveryMs?: number;
  clock?: () => number;
}

/** This process's signs of life, written coarsely; restores a tenant's silent withdrawals when it is back. */
export class Liveness {
  private readonly lastSeen: LastUsed;
  /** The workload subjects that called (trusted_subjects.last_seen_at), written the same way. */
  private readonly subjectsSeen: LastUsed;
  private readonly restoring = new Map<string, Promise<unknown>>();
  readonly writeEveryMs: number;

  constructor(
    private readonly ctx: CoreContext,
    opts: LivenessOptions = {},
  ) {
    this.writeEveryMs = opts.writeEveryMs ?? LAST_USED_EVERY_MS;
    this.lastSeen = new LastUsed(
      async (uses) => {
        for (const id of await store.noteTenantsSeen(ctx.pool, uses)) this.restore(id);
      },
      ctx.log,
      'tenant',
      this.writeEveryMs,
      opts.clock,
      ctx.lifecycle,
    );
    this.subjectsSeen = new LastUsed(
      (uses) => store.noteSubjectsSeen(ctx.pool, uses),
      ctx.log,
      'workload subject',
      this.writeEveryMs,
      opts.clock,
      ctx.lifecycle,
    );
  }

  /**
   * The tenant authenticated a call now, from this client address (behind a trusted proxy, the
   * client's), and, when a workload token authenticated it, its subject.
   */
  seen(tenant: store.Tenant, from?: string): void {
    this.lastSeen.note(tenant.id, from);
    const w = workloadOf(tenant);
    if (w) this.subjectsSeen.note(w.bindingId);
  }

  /** Its silent withdrawals restored (once at a time per tenant); a failure is logged, the next sign of life tries again. */
  restore(tenantId: string): Promise<unknown> {
    const running = this.restoring.get(tenantId);
    if (running) return running;
    const p = restoreSilent(this.ctx, tenantId)
      .catch((e: unknown) => this.ctx.log.warn({ err: messageOf(e), tenantId }, 'a tenant that called again: its withdrawn targets could not be restored yet'))
      .finally(() => this.restoring.delete(tenantId));
    this.restoring.set(tenantId, p);
    return p;
  }

  /** Restores under way (tests, shutdown). */
  async settled(): Promise<void> {
    await Promise.all([...this.restoring.values()]);
  }
}

/** A sign of life of `tenant` (a no-op where the context keeps no liveness). */
export function noteSeen(ctx: Pick<CoreContext, 'liveness'>, tenant: store.Tenant, from?: string): void {
  ctx.liveness?.seen(tenant, from);
}

/** Restores every target withdrawn for the tenant's silence, zone by zone. */
export async function restoreSilent(ctx: CoreContext, tenantId: string): Promise<WithdrawOutcome[]> {
  const rows = await store.listWithdrawalsOfTenant(ctx.pool, tenantId, 'silent');
  const out: WithdrawOutcome[] = [];
  for (const zone of [...new Set(rows.map((r) => r.zone))]) {
    const items = rows
      .filter((r) => r.zone === zone)
      .map((r) => ({ name: r.dnsName, type: r.recordType, target: r.target, reason: 'silent' as const, detail: `tenant ${r.tenantName} called again` }));
    const outcome = await restoreTargets(ctx, zone, items, { force: true });
    ctx.log.info(
      { zone, tenant: rows[0]!.tenantName, restored: outcome.items.filter((i) => i.state === 'restored').length },
      'a silent tenant called again: its targets restored',
    );
    out.push(outcome);
  }
  return out;
}

/**
 * One turn of the silent-tenant check, on one replica at a time (undefined: another replica holds the
 * turn): tenants no longer silent whose targets are still withdrawn have them restored; each tenant
 * silent past its withdraw_after has its published targets of shared sets withdrawn.
 */
export async function withdrawSilentTenants(ctx: CoreContext): Promise<WithdrawOutcome[] | undefined> {
  const slackMs = ctx.liveness?.writeEveryMs ?? LAST_USED_EVERY_MS;
  return store.tryJobLock(ctx.pool, 'silent-tenants', async () => {
    const out: WithdrawOutcome[] = [];
    // Back, and not restored by their call (it was written by a replica that could not restore, or withdraw_after is off).
    for (const id of await store.listTenantsBack(ctx.pool, slackMs)) out.push(...(await restoreSilent(ctx, id)));
    for (const tenant of await store.listSilentTenants(ctx.pool, slackMs)) {
      const withdrawn = new Set(
        (await store.listWithdrawalsOfTenant(ctx.pool, tenant.id, 'silent')).map((w) => `${w.zone} ${w.dnsName} ${w.recordType} ${w.target}`),
      );
      const owned = (await store.listOwnershipForTenant(ctx.pool, tenant.id)).filter(
        (o) => o.shared && !withdrawn.has(`${o.zone} ${o.dnsName} ${o.recordType} ${o.target}`),
      );
      const detail = `tenant ${tenant.name} silent since ${tenant.lastSeenAt.toISOString()}`;
      for (const zone of [...new Set(owned.map((o) => o.zone))]) {
        const items = owned
          .filter((o) => o.zone === zone)
          .map((o) => ({ name: o.dnsName, type: o.recordType, target: o.target, reason: 'silent' as const, detail }));
        const outcome = await withdrawTargets(ctx, zone, items, { force: true });
        const n = outcome.items.filter((i) => i.state === 'withdrawn').length;
        if (n > 0 || outcome.error)
          ctx.log.info(
            { zone, tenant: tenant.name, withdrawn: n, kept: outcome.items.length - n, ...(outcome.error ? { err: messageOf(outcome.error) } : {}) },
            detail,
          );
        out.push(outcome);
      }
    }
    return out;
  });
}

/** The silent-tenant loop (server/server.ts): a turn every `everyMs`, none while one runs; stop() ends it. */
export function startSilentWatch(ctx: CoreContext, everyMs = SILENT_CHECK_EVERY_MS): { stop(): Promise<void> } {
  let running: Promise<unknown> | undefined;
  let stopped = false;
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = withdrawSilentTenants(ctx)
      .catch((e: unknown) => ctx.log.warn({ err: messageOf(e) }, 'the silent-tenant check failed; it runs again at its next turn'))
      .finally(() => (running = undefined));
  }, everyMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
