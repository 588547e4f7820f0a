/**
 * What an apply answers, per zone and as a whole: the outcome, the calls made, the changes. The
 * model every file of the apply path builds its answer in, at the bottom of the folder (it imports
 * nothing of the apply itself).
 */
import type { Change, Conflict } from '../../dns/types.js';

/** One OVH call as it was made. */
export interface CallRecord {
  method: string;
  path: string;
  body: string;
  status: number;
  error?: string;
}

/** dry_run: DNSPLANE_DRY_RUN is on; `calls` are the calls that would have been made (status 0), none was sent. */
/** refused: an all-or-nothing request (PlanInput.allOrNothing) had conflicts under the lock; nothing was sent. */
export type ZoneApplyStatus = 'applied' | 'no_changes' | 'stale' | 'failed' | 'dry_run' | 'refused';

export interface ZoneApplyResult {
  zone: string;
  status: ZoneApplyStatus;
  generation: bigint;
  calls: CallRecord[];
  changes: Change[];
  conflicts: Conflict[];
  /** Set when status is stale or failed. */
  error?: Error;
  /**
   * A request larger than DNSPLANE_APPLY_BATCH operations is applied in batches: the batches that
   * were applied and published, in order (absent for a request applied in one go). When a later batch
   * failed, status is failed and these stay applied.
   */
  batches?: ApplyBatch[];
  /** The journal row of the apply (the last batch's). */
  journalId?: string;
}

export interface ApplyBatch {
  /** From 1. */
  index: number;
  /** Operations sent (the refresh not counted). */
  operations: number;
  /** The zone's generation once this batch was recorded. */
  generation: bigint;
  journalId?: string;
}

export interface ApplyResult {
  planId?: string;
  zones: ZoneApplyResult[];
}
