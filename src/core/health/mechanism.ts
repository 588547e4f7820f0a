/**
 * The checker's Withdrawals (checker.ts) over the withdrawal mechanism (core/withdrawals/withdrawals.ts): reason
 * 'health', the check's last answers as the detail and the evidence. The owner's change threshold
 * applies (no force). An item counts as done when the target ends as the checker wants it: withdrawn
 * (or already so), restored (or not withdrawn for health, or still withdrawn for another reason only).
 */
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import type { ItemOutcome } from '../withdrawals/items.js';
import { restoreTargets, withdrawTargets } from '../withdrawals/withdrawals.js';
import type { HealthItem, HealthItemOutcome, Withdrawals } from './checker.js';

function outcomes(items: readonly ItemOutcome[], done: (o: ItemOutcome) => boolean): HealthItemOutcome[] {
  return items.map((o) => ({ target: o.target, done: done(o), ...(o.why ? { why: o.why } : {}) }));
}

export function coreWithdrawals(ctx: CoreContext): Withdrawals {
  return {
    async withdraw(zone: string, items: HealthItem[]) {
      const out = await withdrawTargets(
        ctx,
        zone,
        items.map((i) => ({ name: i.name, type: i.type, target: i.target, reason: 'health' as const, detail: i.detail, evidence: i.evidence })),
      );
      if (out.error) ctx.log.warn({ zone, err: out.error.message }, 'health: a withdrawal did not go through');
      return outcomes(out.items, (o) => o.state === 'withdrawn' || o.why === 'already');
    },
    async restore(zone: string, items: HealthItem[]) {
      const out = await restoreTargets(
        ctx,
        zone,
        items.map((i) => ({ name: i.name, type: i.type, target: i.target, reason: 'health' as const, detail: i.detail })),
      );
      if (out.error) ctx.log.warn({ zone, err: out.error.message }, 'health: a restore did not go through');
      return outcomes(out.items, (o) => o.state === 'restored' || o.why === 'not-withdrawn' || o.why === 'still-withdrawn');
    },
    async withdrawnTargets(zone: string, name: string, type: string) {
      return (await store.listWithdrawalsForSets(ctx.pool, zone, [{ dnsName: name, recordType: type }])).map((w) => w.target);
    },
  };
}
