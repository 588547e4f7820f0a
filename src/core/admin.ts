/**
 * The admin use cases (AdminService). Every function takes the calling tenant first and refuses it
 * without the `admin` scope (PermissionDenied) before it looks at anything else.
 *
 * Admin changes of ownership (assign, TXT-registry import) and zone invalidations are written to the
 * journal, in the same transaction as the change, as finished rows whose intent holds `kind` and a
 * `summary`: the journal is the one audit log (ListJournal), applies and admin actions alike.
 */
import { InvalidInputError } from '../dns/errors.js';
import { normalizeName } from '../dns/names.js';
import type { Endpoint } from '../dns/types.js';
import * as store from '../store/index.js';
import type { CoreContext } from './context.js';
import { Slicer } from './slices.js';
import { waitForHolder } from './apply/index.js';
import { NotFoundError, PermissionDeniedError } from './errors.js';
import { auditAdminAction } from './audit.js';
import { restoreSilent } from './liveness.js';
import { approvePlan as runApprove } from './approvals.js';
import { planRevert as runRevert, type Revert } from './revert.js';
import { importTxtRegistry as runImport, type ImportInput, type ImportResult } from './import-txt.js';
import { assignOwnership as runAssign, listOwnership as runList, type AssignInput, type AssignResult } from './ownership-admin.js';
import { getPlanWithRow, plan, type PlanInput, type StoredPlan } from './plan.js';
import {
  setTenantMaxChangePercent as runSetMaxChange,
  setTenantWithdrawAfter as runSetWithdrawAfter,
  createTenantInManagedZones,
  isAdmin,
  listTenants as runListTenants,
  rotateTenantToken as runRotate,
  setTenantDisabled,
  type NewTenant,
  type Tenant,
} from './tenants.js';
import { syncZone } from './zones.js';
import { exportZone, type ZoneExport } from './zone-export.js';
import { readVisibility, type Visibility } from './visibility.js';
import { healthTargetState } from './health/view.js';
import {
  createTsigKey as runCreateKey,
  deleteTsigKey as runDeleteKey,
  listTsigKeys as runListKeys,
  rotateTsigKey as runRotateKey,
  type IssuedTsigKey,
  type NewTsigKeyInput,
  type TsigKeyView,
} from './credentials/tsig-admin.js';

/** Default and largest page of a listing. */
export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

export function requireAdmin(actor: Tenant): void {
  if (!isAdmin(actor)) throw new PermissionDeniedError('', `this call needs the admin scope; tenant "${actor.name}" does not have it`);
}

function limitOf(limit: number, field = 'limit'): number {
  if (limit === 0) return DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new InvalidInputError(field, `must be 1-${MAX_LIMIT} (0 means ${DEFAULT_LIMIT}), got ${limit}`);
  return limit;
}

async function tenantNamed(ctx: CoreContext, name: string, field: string): Promise<Tenant> {
  if (name === '') throw new InvalidInputError(field, 'a tenant name is required');
  const t = await store.getTenantByName(ctx.pool, name);
  if (!t) throw new NotFoundError('tenant', name, `tenant "${name}" does not exist`);
  return t;
}

async function managedZone(ctx: CoreContext, raw: string, field: string): Promise<string> {
  const zone = normalizeName(raw, field);
  if (!(await store.getZone(ctx.pool, zone))) throw new InvalidInputError(field, `"${zone}" is not a zone dnsplane manages`);
  return zone;
}

// --- plans ---

export async function planAs(ctx: CoreContext, actor: Tenant, tenantName: string, input: PlanInput): Promise<StoredPlan> {
  requireAdmin(actor);
  const tenant = await tenantNamed(ctx, tenantName, 'tenant');
  return plan(ctx, tenant, input, actor);
}

export interface PlanSummary {
  id: string;
  tenant: string;
  requestedBy: string;
  status: store.PlanStatus;
  policy: store.Plan['policy'];
  digest: string;
  createdAt: Date;
  expiresAt: Date;
  appliedAt: Date | null;
  zones: string[];
  changeCount: number;
  conflictCount: number;
  /** OVH operations, one refresh per zone with changes included. */
  operationCount: number;
  /** Approved over the change threshold by this admin (core/approvals.ts), when, and the digest approved; null: not approved. */
  approval: { approvedBy: string; approvedAt: Date; digest: string } | null;
}

function summarize(p: store.PlanHead, names: Map<string, string>): PlanSummary {
  return {
    id: p.id,
    tenant: names.get(p.tenantId) ?? '',
    requestedBy: names.get(p.requestedBy) ?? '',
    status: p.status,
    policy: p.policy,
    digest: p.digest,
    createdAt: p.createdAt,
    expiresAt: p.expiresAt,
    appliedAt: p.appliedAt,
    zones: p.zones,
    changeCount: p.changeCount,
    conflictCount: p.conflictCount,
    operationCount: p.operationCount,
    approval: p.approval ? { ...p.approval, approvedBy: names.get(p.approval.approvedBy) ?? '' } : null,
  };
}

export async function tenantNames(ctx: CoreContext): Promise<Map<string, string>> {
  return new Map((await store.listTenants(ctx.pool)).map((t) => [t.id, t.name]));
}

const PLAN_STATUSES: readonly store.PlanStatus[] = ['pending', 'applied', 'stale', 'expired', 'failed', 'superseded'];

export async function listPlans(ctx: CoreContext, actor: Tenant, q: { tenant: string; status: string; limit: number }): Promise<PlanSummary[]> {
  requireAdmin(actor);
  const limit = limitOf(q.limit);
  if (q.status !== '' && !(PLAN_STATUSES as readonly string[]).includes(q.status)) {
    throw new InvalidInputError('status', `unknown status "${q.status}" (known: ${PLAN_STATUSES.join(', ')})`);
  }
  const tenantId = q.tenant === '' ? undefined : (await tenantNamed(ctx, q.tenant, 'tenant')).id;
  const rows = await store.listPlans(ctx.pool, {
    limit,
    ...(tenantId === undefined ? {} : { tenantId }),
    ...(q.status === '' ? {} : { status: q.status as store.PlanStatus }),
  });
  const names = await tenantNames(ctx);
  return rows.map((p) => summarize(p, names));
}

export async function getPlanAsAdmin(ctx: CoreContext, actor: Tenant, id: string): Promise<{ plan: StoredPlan; summary: PlanSummary }> {
  requireAdmin(actor);
  if (id === '') throw new InvalidInputError('id', 'a plan id is required');
  const { plan: p, row } = await getPlanWithRow(ctx, actor, id);
  return { plan: p, summary: summarize(row, await tenantNames(ctx)) };
}

/** Undo of an apply (core/revert.ts): a stored plan that puts back what journal row `journalId` changed. */
export async function planRevert(ctx: CoreContext, actor: Tenant, journalId: string): Promise<Revert> {
  requireAdmin(actor);
  return runRevert(ctx, actor, journalId);
}

/** The two-person rule (core/approvals.ts): `actor` approves plan `id` over the change threshold. */
export async function approvePlan(ctx: CoreContext, actor: Tenant, id: string): Promise<PlanSummary> {
  requireAdmin(actor);
  return summarize(await runApprove(ctx, actor, id), await tenantNames(ctx));
}

// --- tenants ---

export async function createTenant(ctx: CoreContext, actor: Tenant, input: NewTenant): Promise<{ tenant: Tenant; token: string }> {
  requireAdmin(actor);
  const { registered, ...created } = await createTenantInManagedZones(ctx.pool, input, { configured: ctx.settings.zones, listOvh: () => ctx.ovh.listZones() });
  ctx.log.info({ tenant: created.tenant.name, scopes: created.tenant.scopes, zones: created.tenant.zones, by: actor.name, ...(registered.length ? { registered } : {}) }, 'tenant created');
  return created;
}

export async function listTenants(ctx: CoreContext, actor: Tenant): Promise<Tenant[]> {
  requireAdmin(actor);
  return runListTenants(ctx.pool);
}

export async function rotateTenantToken(ctx: CoreContext, actor: Tenant, name: string, graceMs = 0): Promise<{ tenant: Tenant; token: string }> {
  requireAdmin(actor);
  if (name === '') throw new InvalidInputError('name', 'a tenant name is required');
  const rotated = await runRotate(ctx.pool, name, graceMs, 'graceSeconds');
  ctx.tokens?.forget(name); // this replica at once; the others on NOTIFY dnsplane_tenant
  ctx.log.info({ tenant: name, by: actor.name, ...(rotated.tenant.previousTokenValidUntil ? { oldTokenValidUntil: rotated.tenant.previousTokenValidUntil.toISOString() } : {}) }, 'tenant token rotated');
  return rotated;
}

export async function disableTenant(ctx: CoreContext, actor: Tenant, name: string, enable: boolean): Promise<Tenant> {
  requireAdmin(actor);
  if (name === '') throw new InvalidInputError('name', 'a tenant name is required');
  if (!enable && name === actor.name) throw new InvalidInputError('name', 'an admin cannot disable itself (it would lock itself out)');
  const t = await setTenantDisabled(ctx.pool, name, !enable);
  ctx.tokens?.forget(name); // this replica at once; the others on NOTIFY dnsplane_tenant
  ctx.log.info({ tenant: name, disabled: t.disabled, by: actor.name }, enable ? 'tenant enabled' : 'tenant disabled');
  return t;
}

/** A tenant's own change threshold (core/guard.ts); null puts back the server's DNSPLANE_MAX_CHANGE_PERCENT. */
export async function setTenantMaxChangePercent(ctx: CoreContext, actor: Tenant, name: string, percent: number | null): Promise<Tenant> {
  requireAdmin(actor);
  const t = await runSetMaxChange(ctx.pool, name, percent);
  ctx.log.info({ tenant: name, maxChangePercent: percent, by: actor.name }, 'tenant change threshold set');
  return t;
}

/**
 * The tenant's withdraw_after (core/liveness.ts), or off; turned off, what was withdrawn for its
 * silence is restored now (its next call would do it too).
 */
export async function setTenantWithdrawAfter(ctx: CoreContext, actor: Tenant, name: string, ms: number | null): Promise<Tenant> {
  requireAdmin(actor);
  const t = await runSetWithdrawAfter(ctx.pool, name, ms);
  ctx.log.info({ tenant: name, withdrawAfterSeconds: ms === null ? null : ms / 1000, by: actor.name }, ms === null ? 'tenant withdraw-after off' : 'tenant withdraw-after set');
  if (ms === null) await restoreSilent(ctx, t.id);
  return t;
}

// --- TSIG keys (core/credentials/tsig-admin.ts); the secret is never logged ---

export async function createTsigKey(ctx: CoreContext, actor: Tenant, input: NewTsigKeyInput): Promise<IssuedTsigKey> {
  requireAdmin(actor);
  const issued = await runCreateKey({ pool: ctx.pool, secrets: ctx.secrets, actor }, input);
  const { name, tenant, algorithm, acmeOnly } = issued.key;
  ctx.log.info({ key: name, tenant, algorithm, acmeOnly, by: actor.name }, 'TSIG key created');
  return issued;
}

export async function listTsigKeys(ctx: CoreContext, actor: Tenant, tenant: string): Promise<TsigKeyView[]> {
  requireAdmin(actor);
  return runListKeys(ctx.pool, tenant);
}

export async function rotateTsigKey(ctx: CoreContext, actor: Tenant, name: string, graceMs = 0): Promise<IssuedTsigKey> {
  requireAdmin(actor);
  const issued = await runRotateKey({ pool: ctx.pool, secrets: ctx.secrets, actor }, name, graceMs);
  ctx.tsigKeys?.forget(issued.key.tenant); // this replica at once; the others on NOTIFY dnsplane_tenant
  const until = issued.key.oldSecretValidUntil;
  ctx.log.info({ key: issued.key.name, tenant: issued.key.tenant, by: actor.name, ...(until ? { oldSecretValidUntil: until.toISOString() } : {}) }, 'TSIG key rotated');
  return issued;
}

export async function deleteTsigKey(ctx: CoreContext, actor: Tenant, name: string): Promise<TsigKeyView> {
  requireAdmin(actor);
  const key = await runDeleteKey({ pool: ctx.pool, actor }, name);
  ctx.tsigKeys?.forget(key.tenant); // this replica at once; the others on NOTIFY dnsplane_tenant
  ctx.log.info({ key: key.name, tenant: key.tenant, by: actor.name }, 'TSIG key deleted');
  return key;
}

// --- ownership ---


export async function listOwnership(
  ctx: CoreContext,
  actor: Tenant,
  q: { zone: string; tenant: string; includeUnowned: boolean },
): Promise<{ rows: store.OwnershipRow[]; unowned: Endpoint[] }> {
  requireAdmin(actor);
  const zones = q.zone === '' ? await store.listZoneNames(ctx.pool) : [await managedZone(ctx, q.zone, 'zone')];
  const tenantId = q.tenant === '' ? undefined : (await tenantNamed(ctx, q.tenant, 'tenant')).id;
  const listed = await runList(ctx, { zones, includeUnowned: q.includeUnowned, ...(tenantId === undefined ? {} : { tenantId }) });
  // A shared target not withdrawn shows its state by its health check (core/health/view.ts).
  const health = new Map<string, store.TargetHealthRow[]>();
  for (const zone of new Set(listed.rows.map((r) => r.zone))) health.set(zone, await store.listTargetHealth(ctx.pool, zone));
  const rows = listed.rows.map((r) => {
    if (r.targetState) return r;
    const targetState = healthTargetState(r, health.get(r.zone)!);
    return targetState ? { ...r, targetState } : r;
  });
  return { ...listed, rows };
}

export async function assignOwnership(ctx: CoreContext, actor: Tenant, input: AssignInput): Promise<AssignResult> {
  requireAdmin(actor);
  const result = await runAssign(ctx, input, (tx, zone, summary, rows) =>
    auditAdminAction(tx, zone, actor, 'assign-ownership', summary, {
      rows: rows.map((r) => ({ dnsName: r.dnsName, recordType: r.recordType, target: r.target, tenant: r.tenantName, shared: r.shared })),
    }),
  );
  ctx.log.info({ zone: result.zone, by: actor.name, summary: result.summary }, 'ownership assigned');
  return result;
}

export async function importTxtRegistry(ctx: CoreContext, actor: Tenant, input: ImportInput): Promise<ImportResult> {
  requireAdmin(actor);
  const zone = input.zone === '' ? '' : normalizeName(input.zone, 'zone');
  const result = await runImport(ctx, actor, input, (tx, summary, adopted) =>
    auditAdminAction(tx, zone, actor, 'import-txt-registry', summary, {
      adopted: adopted.map((a) => ({ dnsName: a.dnsName, recordType: a.recordType, tenant: a.tenant, ownerId: a.ownerId })),
    }),
  );
  ctx.log.info(
    { zone: result.zone, by: actor.name, dryRun: result.dryRun, adopted: result.adoptions.filter((a) => a.outcome === 'adopted').length },
    'TXT registry import',
  );
  return result;
}

// --- zones ---

/**
 * Drops the zone's cache and reads the zone again from OVH, under the zone lock (list ids, GET each,
 * SOA): generation + 1. Applies that died in flight are covered by the full read and marked recovered.
 */
/** A zone as a zone file, from the cache (core/zone-export.ts). */
export async function exportZoneFile(ctx: CoreContext, actor: Tenant, rawZone: string, options: { owners: boolean; atGeneration?: bigint; atTime?: Date }): Promise<ZoneExport> {
  requireAdmin(actor);
  if (options.atGeneration !== undefined && options.atTime !== undefined) throw new InvalidInputError('at_time', 'give at_generation or at_time, not both');
  if (options.atGeneration !== undefined && options.atGeneration < 0n) throw new InvalidInputError('at_generation', `must be a generation (0 or more), got ${options.atGeneration}`);
  const at = options.atGeneration !== undefined ? { generation: options.atGeneration } : options.atTime !== undefined ? { time: options.atTime } : undefined;
  return exportZone(ctx, await managedZone(ctx, rawZone, 'zone'), { owners: options.owners, ...(at ? { at } : {}) });
}

export async function invalidateZone(ctx: CoreContext, actor: Tenant, rawZone: string): Promise<{ zone: string; generation: bigint; recordCount: number }> {
  requireAdmin(actor);
  const zone = await managedZone(ctx, rawZone, 'zone');
  return store.withZoneLock(ctx.pool, zone, { lockTimeoutMs: ctx.settings.lockTimeoutMs }, async (tx) => {
    const dead = await store.listInFlight(tx, zone);
    // The full read settles them only once none of their calls can still land.
    for (const row of dead) await waitForHolder(ctx, tx, zone, row);
    const recordCount = await syncZone(ctx, tx, zone);
    for (const row of dead) await store.finishJournal(tx, row.id, 'recovered', { recoveredBy: 'invalidate-zone' });
    const generation = (await store.getZone(tx, zone))!.generation; // syncZone notified it
    await auditAdminAction(tx, zone, actor, 'invalidate-zone', `cache of ${zone} dropped and re-read from OVH by ${actor.name}: ${recordCount} records`);
    ctx.log.info({ zone, records: recordCount, generation: String(generation), by: actor.name }, 'zone invalidated');
    return { zone, generation, recordCount };
  });
}

// --- audit ---

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
  /** An apply that published: where its publish stands on the zone's authoritative servers. */
  visibility?: Visibility;
  /** An apply of an approved plan: the approval it applied under; an approve-plan entry: the approval it recorded (core/approvals.ts). */
  approval?: { planId: string; approvedBy: string; approvedAt: Date; digest: string };
  /** An apply of a revert, or a plan-revert entry (core/revert.ts): the journal row it reverts. */
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

const JOURNAL_STATES: readonly store.JournalState[] = ['in_flight', 'done', 'failed', 'recovered'];

export interface JournalQuery {
  zone: string;
  tenant: string;
  limit: number;
  /** Only entries older than this id (the last id of the previous page); '' for the newest. */
  beforeId?: string;
  /** Only entries in this state; '' for any. */
  state?: string;
}

export async function listJournal(ctx: CoreContext, actor: Tenant, q: JournalQuery): Promise<JournalView[]> {
  requireAdmin(actor);
  const limit = limitOf(q.limit);
  const beforeId = q.beforeId ?? '';
  if (beforeId !== '' && !/^[1-9][0-9]{0,18}$/.test(beforeId)) throw new InvalidInputError('beforeId', `must be a journal entry id (digits), got "${beforeId}"`);
  const state = q.state ?? '';
  if (state !== '' && !(JOURNAL_STATES as readonly string[]).includes(state)) {
    throw new InvalidInputError('state', `unknown state "${state}" (known: ${JOURNAL_STATES.join(', ')})`);
  }
  const zone = q.zone === '' ? undefined : await managedZone(ctx, q.zone, 'zone');
  const tenantId = q.tenant === '' ? undefined : (await tenantNamed(ctx, q.tenant, 'tenant')).id;
  const rows = await store.listJournal(ctx.pool, {
    limit,
    ...(zone === undefined ? {} : { zone }),
    ...(tenantId === undefined ? {} : { tenantId }),
    ...(beforeId === '' ? {} : { beforeId }),
    ...(state === '' ? {} : { state: state as store.JournalState }),
  });
  const names = await tenantNames(ctx);
  // Where each publish stands (the rows that published; an admin action has none): one query.
  const published = new Map((await readVisibility(ctx, rows.map((r) => r.id))).filter((v) => v.publishedAt).map((v) => [v.journalId, v]));
  // Up to 1,000 entries of up to an apply batch's calls each: read in slices.
  return new Slicer().map(rows, (r) => journalView(r, names, published.get(r.id)), 16);
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
  return { approval: { planId: str(field(a, 'planId')), approvedBy: str(field(a, 'approvedBy')), approvedAt: at ? new Date(at) : r.startedAt, digest: str(field(a, 'digest')) } };
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
