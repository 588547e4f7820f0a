/**
 * At most `limit` Plans per tenant computing at once (DNSPLANE_PLAN_CONCURRENCY). One more is refused
 * at once with ResourceExhaustedError (gRPC/Connect RESOURCE_EXHAUSTED), nothing done: a tenant that
 * fires Plans in parallel gets its share of the process, not all of it, and a refused request holds no
 * memory or connection while it would wait. Clients retry with backoff, as RESOURCE_EXHAUSTED asks.
 *
 * Per process: with several replicas a tenant may have `limit` Plans on each.
 */
import { ResourceExhaustedError } from './errors.js';

export interface PlanLimiterHooks {
  /** A Plan of this tenant started (+1) or ended (-1). */
  running?(tenant: string, delta: 1 | -1): void;
  /** A Plan of this tenant was refused. */
  refused?(tenant: string): void;
}

export class PlanLimiter {
  private readonly running = new Map<string, number>();

  constructor(
    readonly limit: number,
    private readonly hooks: PlanLimiterHooks = {},
  ) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`plan concurrency must be a positive integer, got ${limit}`);
  }

  /** Plans of this tenant (by id) computing now. */
  inProgress(tenantId: string): number {
    return this.running.get(tenantId) ?? 0;
  }

  /** Runs `fn` as one of the tenant's Plans, or throws ResourceExhaustedError when it has `limit` already. */
  async run<T>(tenant: { id: string; name: string }, fn: () => Promise<T>): Promise<T> {
    const n = this.inProgress(tenant.id);
    if (n >= this.limit) {
      this.hooks.refused?.(tenant.name);
      throw new ResourceExhaustedError(
        `tenant "${tenant.name}" already has ${n} plan(s) in progress, the most one tenant may have at once (DNSPLANE_PLAN_CONCURRENCY=${this.limit}); retry when one has finished`,
      );
    }
    this.running.set(tenant.id, n + 1);
    this.hooks.running?.(tenant.name, 1);
    try {
      return await fn();
    } finally {
      const left = this.inProgress(tenant.id) - 1;
      if (left > 0) this.running.set(tenant.id, left);
      else this.running.delete(tenant.id);
      this.hooks.running?.(tenant.name, -1);
    }
  }
}
