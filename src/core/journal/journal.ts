/**
 * The journal as people read it (AdminService.ListJournal in admin/journal.ts, ZoneService.GetApply): a row decoded
 * into its calls, error, summary, approval and the row it reverts. The journal is the one audit log:
 * applies and admin actions (journal/audit.ts) alike.
 */
import type * as store from '../../store/index.js';
import type { Visibility } from '../visibility/visibility.js';

export interface JournalOperation {
  method: string;
  path: string;
  body: string;
  status: number;
  error: string;
}

export interface JournalView {
  id: string;
  zone: string;
  tenant: string;
  planId: string;
  kind: string;
  state: store.JournalState;
  startedAt: Date;
  finishedAt: Date | null;
  operations: JournalOperation[];
  calls: JournalOperation[];
  error: string;
  summary: string;
  /** The client address the apply's request came from (behind a trusted proxy, the client's); '' when not from a client (a background task). */
  from: string;
  /** An apply: the OVH account its zone's calls went through (issue 44); '' for other entries and applies journaled before it was recorded. */
  account: string;
  /** An apply that published: where its publish stands on the zone's authoritative servers. */
  visibility?: Visibility;
  /** An apply of an approved plan: the approval it applied under; an approve-plan entry: the approval it recorded (core/plan/approvals.ts). */
  approval?: { planId: string; approvedBy: string; approvedAt: Date; digest: string };
  /** An apply of a revert, or a plan-revert entry (core/apply/revert.ts): the journal row it reverts. */
  reverts?: string;
}

function field(v: store.JsonValue | null | undefined, key: string): store.JsonValue | undefined {
  return v !== null && v !== undefined && typeof v === 'object' && !Array.isArray(v) ? v[key] : undefined;
}

function str(v: store.JsonValue | undefined): string {
  return typeof v === 'string' ? v : '';
}

function operationsOf(v: store.JsonValue | undefined): JournalOperation[] {
  if (!Array.isArray(v)) return [];
  return v.map((op) => ({
    method: str(field(op, 'method')),
    path: str(field(op, 'path')),
    body: str(field(op, 'body')),
    status: typeof field(op, 'status') === 'number' ? (field(op, 'status') as number) : 0,
    error: str(field(op, 'error')),
  }));
}

/** A journal row as people read it; `names`: tenant id -> name. */
export function journalView(r: store.JournalEntry, names: ReadonlyMap<string, string>, visibility?: Visibility): JournalView {
  return {
    id: r.id,
    zone: r.zone,
    tenant: names.get(r.tenantId) ?? '',
    planId: r.planId ?? '',
    kind: str(field(r.intent, 'kind')) || 'apply',
    state: r.state,
    startedAt: r.startedAt,
    finishedAt: r.finishedAt,
    operations: operationsOf(field(r.intent, 'operations')),
    ...callsAndError(r),
    summary: str(field(r.intent, 'summary')) || str(field(r.result, 'summary')) || recoverySummary(r),
    from: str(field(r.intent, 'from')),
    account: str(field(r.intent, 'account')),
    ...(visibility ? { visibility } : {}),
    ...approvalView(r),
    ...revertsView(r),
  };
}

/** The journal row an entry reverts: an apply's `intent.revertOf`, a plan-revert entry's `intent.detail.reverts`. */
function revertsView(r: store.JournalEntry): Pick<JournalView, 'reverts'> {
  const id = str(field(r.intent, 'revertOf')) || (str(field(r.intent, 'kind')) === 'plan-revert' ? str(field(field(r.intent, 'detail'), 'reverts')) : '');
  return id ? { reverts: id } : {};
}

/** The approval an entry names: an apply's `intent.approval`, an approve-plan entry's `intent.detail`. */
function approvalView(r: store.JournalEntry): Pick<JournalView, 'approval'> {
  const own = field(r.intent, 'approval');
  const a = own ?? (str(field(r.intent, 'kind')) === 'approve-plan' ? field(r.intent, 'detail') : undefined);
  if (a === undefined) return {};
  const at = str(field(a, 'approvedAt'));
  return {
    approval: {
      planId: str(field(a, 'planId')),
      approvedBy: str(field(a, 'approvedBy')),
      approvedAt: at ? new Date(at) : r.startedAt,
      digest: str(field(a, 'digest')),
    },
  };
}

/**
 * The calls an entry made and its error. A recovered apply's result is the recovery's: the calls the
 * dead apply had noted (its progress) come first, then the compensating calls the recovery sent.
 */
function callsAndError(r: store.JournalEntry): { calls: JournalOperation[]; error: string } {
  const own = field(r.result, 'calls');
  if (own !== undefined || r.state !== 'recovered') return { calls: operationsOf(own), error: str(field(r.result, 'error')) };
  const progress = field(r.result, 'progress');
  return {
    calls: [...operationsOf(field(progress, 'calls')), ...operationsOf(field(r.result, 'undo'))],
    error: str(field(progress, 'error')),
  };
}

function recoverySummary(r: store.JournalEntry): string {
  if (r.state !== 'recovered') return '';
  const by = str(field(r.result, 'recoveredBy'));
  if (by !== '') return `rolled back after it died in flight (${by})`;
  const undo = field(r.result, 'undo');
  const n = Array.isArray(undo) ? undo.length : 0;
  return `rolled back after it died in flight: ${n} compensating call(s)${field(r.result, 'refreshed') === true ? ', the rolled-back draft published' : ''}`;
}
