import type { Policy } from '../dns/types.js';
import { AlreadyExistsError, ConflictError, NotFoundError } from './errors.js';
import {
  assertIdString,
  assertLimit,
  jsonParam,
  PG_FOREIGN_KEY_VIOLATION,
  PG_UNIQUE_VIOLATION,
  errorCode,
  pgConstraint,
  type JsonValue,
  type Queryable,
} from './internal.js';

export type PlanStatus = 'pending' | 'applied' | 'stale' | 'expired' | 'failed' | 'superseded';

/** What a listing shows of a plan, without its request and body (migrations/0008). */
export interface PlanCounts {
  /** The zones of the plan, in its order. */
  zones: string[];
  changeCount: number;
  conflictCount: number;
  /** OVH calls, one refresh per zone with changes included. */
  operationCount: number;
}

/** A plan without its request and body: what listings and status changes read. */
export interface PlanHead extends PlanCounts {
  id: string;
  /** The tenant the plan is for. */
  tenantId: string;
  /** The tenant that asked (itself, or an admin planning on its behalf). */
  requestedBy: string;
  policy: Policy;
  digest: string;
  /** zone -> generation (decimal string) the plan was computed against. */
  baseGenerations: Record<string, string>;
  status: PlanStatus;
  createdAt: Date;
  expiresAt: Date;
  appliedAt: Date | null;
  /** The two-person rule (migrations/0018): who approved the plan over the change threshold, when, and the digest approved; null until approved. */
  approval: PlanApproval | null;
}

export interface PlanApproval {
  /** The admin tenant's id. */
  approvedBy: string;
  approvedAt: Date;
  digest: string;
}

export interface Plan extends PlanHead {
  request: JsonValue;
  body: JsonValue;
}

/** A JSON value already written as text (by the caller, in slices): stored as it is. */
export class JsonText {
  constructor(readonly text: string) {}
}

export interface NewPlan {
  id: string;
  tenantId: string;
  requestedBy: string;
  policy: Policy;
  /** Any JSON-serializable value (stored as jsonb), or its JSON text already written (JsonText). */
  request: unknown;
  body: unknown;
  digest: string;
  baseGenerations: Record<string, string>;
  expiresAt: Date;
  /** What a listing shows, counted by the caller from the plan it stores. */
  counts: PlanCounts;
}

interface HeadRow {
  id: string;
  tenant_id: string;
  requested_by: string;
  policy: Policy;
  digest: string;
  base_generations: Record<string, string>;
  status: PlanStatus;
  created_at: Date;
  expires_at: Date;
  applied_at: Date | null;
  approved_by: string | null;
  approved_at: Date | null;
  approved_digest: string | null;
  zones: string[];
  change_count: number;
  conflict_count: number;
  operation_count: number;
}

interface Row extends HeadRow {
  request: JsonValue;
  body: JsonValue;
}

/** A plan's columns but its request and body (megabytes for a large plan). */
const HEAD_COLUMNS = `id, tenant_id::text AS tenant_id, requested_by::text AS requested_by, policy, digest,
  base_generations, status, created_at, expires_at, applied_at, zones, change_count, conflict_count, operation_count,
  approved_by::text AS approved_by, approved_at, approved_digest`;
const COLUMNS = `${HEAD_COLUMNS}, request, body`;

function toHead(r: HeadRow): PlanHead {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    requestedBy: r.requested_by,
    policy: r.policy,
    digest: r.digest,
    baseGenerations: r.base_generations,
    status: r.status,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    appliedAt: r.applied_at,
    approval:
      r.approved_by !== null && r.approved_at !== null && r.approved_digest !== null
        ? { approvedBy: r.approved_by, approvedAt: r.approved_at, digest: r.approved_digest }
        : null,
    zones: r.zones,
    changeCount: r.change_count,
    conflictCount: r.conflict_count,
    operationCount: r.operation_count,
  };
}

function toPlan(r: Row): Plan {
  return { ...toHead(r), request: r.request, body: r.body };
}

/**
 * Stores a new pending plan. AlreadyExistsError on a duplicate id, NotFoundError on an unknown tenant.
 * Returns nothing: the caller has the plan, and reading its body back (megabytes for a large plan)
 * would cost more than the insert. The request and body are stored as json, as written.
 */
export async function insertPlan(q: Queryable, p: NewPlan): Promise<void> {
  assertIdString('tenant id', p.tenantId);
  assertIdString('requested-by tenant id', p.requestedBy);
  for (const [zone, generation] of Object.entries(p.baseGenerations)) {
    assertIdString(`baseGenerations[${zone}]`, generation);
  }
  try {
    await q.query(
      `INSERT INTO plans (id, tenant_id, requested_by, policy, request, body, digest, base_generations, expires_at,
                          zones, change_count, conflict_count, operation_count)
       VALUES ($1, $2::bigint, $3::bigint, $4, $5::json, $6::json, $7, $8::jsonb, $9, $10::text[], $11, $12, $13)`,
      [
        p.id,
        p.tenantId,
        p.requestedBy,
        p.policy,
        p.request instanceof JsonText ? p.request.text : jsonParam(p.request, 'plan request'),
        p.body instanceof JsonText ? p.body.text : jsonParam(p.body, 'plan body'),
        p.digest,
        JSON.stringify(p.baseGenerations),
        p.expiresAt,
        p.counts.zones,
        p.counts.changeCount,
        p.counts.conflictCount,
        p.counts.operationCount,
      ],
    );
  } catch (err) {
    if (errorCode(err) === PG_UNIQUE_VIOLATION) throw new AlreadyExistsError('plan', p.id);
    if (errorCode(err) === PG_FOREIGN_KEY_VIOLATION) {
      throw new NotFoundError('tenant', pgConstraint(err) === 'plans_requested_by_fkey' ? p.requestedBy : p.tenantId);
    }
    throw err;
  }
}

export async function getPlan(q: Queryable, id: string): Promise<Plan | undefined> {
  const { rows } = await q.query<Row>(`SELECT ${COLUMNS} FROM plans WHERE id = $1`, [id]);
  return rows[0] ? toPlan(rows[0]) : undefined;
}

/**
 * Sets the status. 'applied' records appliedAt (default now()). With `from`, the change happens
 * only if the current status is one of them (else ConflictError) — e.g. from ['pending'] so that a
 * plan is applied once. NotFoundError when no such plan.
 */
export async function setPlanStatus(q: Queryable, id: string, status: PlanStatus, opts: { appliedAt?: Date; from?: PlanStatus[] } = {}): Promise<PlanHead> {
  const { rows } = await q.query<HeadRow>(
    `UPDATE plans
        SET status = $2,
            applied_at = CASE WHEN $2 = 'applied' THEN COALESCE($3::timestamptz, now()) ELSE applied_at END
      WHERE id = $1 AND ($4::text[] IS NULL OR status = ANY($4::text[]))
      RETURNING ${HEAD_COLUMNS}`,
    [id, status, opts.appliedAt ?? null, opts.from ?? null],
  );
  if (rows[0]) return toHead(rows[0]);
  const current = await getPlan(q, id);
  if (!current) throw new NotFoundError('plan', id);
  throw new ConflictError(`plan ${JSON.stringify(id)} is ${current.status}, not ${(opts.from ?? []).join(' or ')}`);
}

/**
 * Records an approval (the two-person rule, core/plan/approvals.ts), fenced in the statement: only while
 * the plan is pending, unexpired, not approved yet, its digest the one judged, and the approver not
 * the one who asked. Returns the plan's head, or undefined when any of these no longer holds (the
 * caller reads the plan again to say which).
 */
export async function approvePlan(q: Queryable, a: { id: string; approvedBy: string; digest: string }): Promise<PlanHead | undefined> {
  assertIdString('approver tenant id', a.approvedBy);
  const { rows } = await q.query<HeadRow>(
    `UPDATE plans SET approved_by = $2::bigint, approved_at = clock_timestamp(), approved_digest = $3
      WHERE id = $1 AND status = 'pending' AND expires_at > clock_timestamp() AND approved_by IS NULL
        AND digest = $3 AND requested_by <> $2::bigint
      RETURNING ${HEAD_COLUMNS}`,
    [a.id, a.approvedBy, a.digest],
  );
  return rows[0] ? toHead(rows[0]) : undefined;
}

/** Newest first, without their requests and bodies. */
export async function listPlans(q: Queryable, opts: { tenantId?: string; status?: PlanStatus; limit: number }): Promise<PlanHead[]> {
  assertLimit(opts.limit);
  if (opts.tenantId !== undefined) assertIdString('tenant id', opts.tenantId);
  const { rows } = await q.query<HeadRow>(
    `SELECT ${HEAD_COLUMNS} FROM plans
      WHERE ($1::bigint IS NULL OR tenant_id = $1::bigint) AND ($2::text IS NULL OR status = $2)
      ORDER BY created_at DESC, id DESC
      LIMIT $3`,
    [opts.tenantId ?? null, opts.status ?? null, opts.limit],
  );
  return rows.map(toHead);
}

/** Marks pending plans whose expiry has passed as expired; returns how many. */
export async function expirePendingPlans(q: Queryable, now: Date = new Date()): Promise<number> {
  const { rowCount } = await q.query(`UPDATE plans SET status = 'expired' WHERE status = 'pending' AND expires_at <= $1`, [now]);
  return rowCount ?? 0;
}
