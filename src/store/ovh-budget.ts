/**
 * The OVH rate budget shared by the replicas on this database (migration 0014): one statement leases
 * tokens from the account's bucket, closing this replica's previous lease in the same go. The bucket
 * is refilled by the database's clock, so replicas whose clocks disagree still share one rate.
 */
import type { Queryable } from './internal.js';

export interface BudgetLeaseRequest {
  /** The account's label (never the application key itself). */
  account: string;
  /** Who asks: one replica (process) of dnsplane. */
  replica: string;
  /** The account's rate (tokens per second) and its bucket's capacity (tokens). */
  rate: number;
  capacity: number;
  /** Tokens wanted now (at most). */
  want: number;
  /** How long the lease's tokens may be spent (ms); past it they are the bucket's again to count. */
  lifetimeMs: number;
  /** This replica's previous lease, closed here, and how many of its tokens it did not spend (given back). */
  close?: { leaseId: string; unused: number };
  /** For tests: the time to act at instead of the database's clock. */
  at?: Date;
}

export interface BudgetLease {
  /** Tokens granted (0: none now). */
  granted: number;
  /** The lease holding them (when granted > 0). */
  leaseId?: string;
  /** When granted is 0: how long to wait before asking again (ms). */
  retryMs: number;
  /** Replicas that asked in the last minute (this one included). */
  replicas: number;
  /** The database's time of the lease. */
  at: Date;
}

interface Row {
  granted: number;
  lease_id: string | null;
  expires_at: Date | null;
  retry_ms: number | null;
  replicas: number;
  at: Date;
}

/** Leases up to `want` tokens of the account's budget (see the migration's ovh_budget_lease). */
export async function leaseOvhBudget(q: Queryable, r: BudgetLeaseRequest): Promise<BudgetLease> {
  const { rows } = await q.query<Row>(
    'SELECT granted, lease_id::text AS lease_id, expires_at, retry_ms, replicas, at FROM ovh_budget_lease($1, $2, $3, $4, $5, $6, $7, $8, $9)',
    [r.account, r.replica, r.rate, r.capacity, r.want, Math.round(r.lifetimeMs), r.close?.leaseId ?? null, r.close?.unused ?? 0, r.at ?? null],
  );
  const row = rows[0]!;
  return { granted: row.granted, ...(row.lease_id ? { leaseId: row.lease_id } : {}), retryMs: row.retry_ms ?? 0, replicas: row.replicas, at: row.at };
}
