/**
 * The planner of a withdraw/restore apply as plan/ sees it (plan/input.ts's RoutedInput carries it,
 * plan/plan.ts calls it), apart from withdrawals/ (planner.ts implements it, withdrawals.ts applies through
 * core/apply/) so that planning does not import the apply path back: plan/ imports only this contract.
 */
import type { Change } from '../../dns/types.js';
import type { ZoneRecords } from '../../ovh/mapping.js';
import type { OvhOperation } from '../../ovh/types.js';
import type * as store from '../../store/index.js';

/** The planner of a withdraw/restore apply (plan/plan.ts planOver calls it under the zone lock). */
export interface WithdrawPlanner {
  /** The names (normalized) whose record sets it reads. */
  names(): string[];
  /** Its changes (each set's published targets before and after) and its operations, against the zone under the lock. */
  plan(
    q: store.Queryable,
    source: { recordsByKey: ZoneRecords; ownership: readonly store.OwnershipRow[] },
    tenantId: string,
  ): Promise<{ changes: Change[]; operations: OvhOperation[] }>;
  /** Whether the last plan changes withdrawal rows (even with no operation). */
  pending(): boolean;
  /** Writes the last plan's withdrawal rows in the apply's transaction, after its operations. */
  recorded(tx: store.Queryable, journalId: string | undefined): Promise<void>;
}
