/**
 * Apply: per zone, under the zone's advisory lock, on one transaction:
 *   recover dead applies -> recompute the plan (ownership re-checked; a stored plan whose zone moved is
 *   stale) -> journal the intent (autocommitted, survives a crash) -> send the operations -> one
 *   refresh -> cache, ownership, generation + 1, journal done, NOTIFY, COMMIT.
 * When an operation fails: undo what succeeded, no refresh, re-read only the touched names,
 * generation + 1, journal failed, COMMIT, report. A zone is never published half-applied.
 */
import type { Change, Conflict } from '../dns/types.js';
import { OvhError } from '../ovh/errors.js';
import { describeOperation } from '../ovh/ops.js';
import type { OvhOperation, OvhRecord, OvhRecordBody } from '../ovh/types.js';
import { refreshPath } from '../ovh/types.js';
import * as store from '../store/index.js';
import type { CoreContext } from './context.js';
import { ApplyFailedError, PermissionDeniedError, StalePlanError } from './errors.js';
import { computeZonePlan, getPlan, planDigest, routeInput, type PlanInput, type RoutedInput, type ZonePlan } from './plan.js';
import type { Tenant } from './tenants.js';
import { ensureSynced, toRow } from './zones.js';

/** One OVH call as it was made. */
export interface CallRecord {
  method: string;
  path: string;
  body: string;
  status: number;
  error?: string;
}

export type ZoneApplyStatus = 'applied' | 'no_changes' | 'stale' | 'failed';

export interface ZoneApplyResult {
  zone: string;
  status: ZoneApplyStatus;
  generation: bigint;
  calls: CallRecord[];
  changes: Change[];
  conflicts: Conflict[];
  /** Set when status is stale or failed. */
  error?: Error;
}

export interface ApplyResult {
  planId?: string;
  zones: ZoneApplyResult[];
}

export type ApplySource = { planId: string } | { input: PlanInput };

export async function apply(ctx: CoreContext, tenant: Tenant, source: ApplySource): Promise<ApplyResult> {
  if ('planId' in source) {
    const stored = await getPlan(ctx, tenant, source.planId);
    if (stored.tenantId !== tenant.id) throw new PermissionDeniedError('planId', `plan "${stored.id}" belongs to tenant "${stored.tenant}"; only it may apply the plan`);
    if (stored.status !== 'pending') throw new StalePlanError(`plan "${stored.id}" is ${stored.status}; make a new plan`);
    if (stored.expiresAt.getTime() < Date.now()) {
      await store.setPlanStatus(ctx.pool, stored.id, 'expired');
      throw new StalePlanError(`plan "${stored.id}" expired at ${stored.expiresAt.toISOString()}; make a new plan`);
    }
    const routed = await routeInput(ctx, tenant, stored.input);
    const zones = await Promise.all(stored.zones.map((zp) => applyZone(ctx, tenant, zp.zone, routed, zp)));
    const ok = zones.every((z) => z.status === 'applied' || z.status === 'no_changes');
    await store.setPlanStatus(ctx.pool, stored.id, ok ? 'applied' : zones.some((z) => z.status === 'stale') ? 'stale' : 'failed', { appliedAt: new Date() });
    return { planId: stored.id, zones };
  }
  const routed = await routeInput(ctx, tenant, source.input);
  const zones = [...routed.byZone.keys()].sort();
  for (const zone of zones) await ensureSynced(ctx, zone);
  return { zones: await Promise.all(zones.map((zone) => applyZone(ctx, tenant, zone, routed))) };
}

async function applyZone(ctx: CoreContext, tenant: Tenant, zone: string, routed: RoutedInput, stored?: ZonePlan): Promise<ZoneApplyResult> {
  return store.withZoneLock(ctx.pool, zone, { lockTimeoutMs: ctx.settings.lockTimeoutMs }, async (tx) => {
    await recoverInFlight(ctx, tx, zone);
    const plan = await computeZonePlan(ctx, tx, tenant, zone, routed);
    const base = { zone, generation: plan.baseGeneration, calls: [], changes: plan.changes, conflicts: plan.conflicts };
    if (stored) {
      if (plan.baseGeneration !== stored.baseGeneration) {
        return { ...base, status: 'stale', error: new StalePlanError(`zone ${zone} changed since the plan was made (generation ${stored.baseGeneration} -> ${plan.baseGeneration}); nothing was sent, make a new plan`) };
      }
      if (planDigest([plan]) !== planDigest([stored])) {
        return { ...base, status: 'stale', error: new StalePlanError(`ownership in zone ${zone} changed since the plan was made; nothing was sent, make a new plan`) };
      }
    }
    if (plan.operations.length === 0) return { ...base, status: 'no_changes' };
    return execute(ctx, tx, tenant, plan);
  });
}

interface Done {
  op: OvhOperation;
  created?: OvhRecord;
}

async function execute(ctx: CoreContext, tx: store.Queryable, tenant: Tenant, plan: ZonePlan): Promise<ZoneApplyResult> {
  const { zone } = plan;
  const names = touchedNames(plan.operations);
  const journalId = await store.insertIntent(ctx.pool, {
    zone,
    tenantId: tenant.id,
    intent: { operations: plan.operations.map(describeOperation), names },
  });
  const knownIds = new Set((await store.listRecords(tx, zone)).map((r) => r.id));
  const calls: CallRecord[] = [];
  const done: Done[] = [];
  let failure: { op?: OvhOperation; error: unknown } | undefined;

  for (const op of plan.operations) {
    try {
      const created = await send(ctx, zone, op, knownIds);
      if (created) knownIds.add(created.id);
      done.push({ op, created });
      calls.push({ ...describeOperation(op), status: 200 });
    } catch (error) {
      calls.push({ ...describeOperation(op), status: statusOf(error), error: messageOf(error) });
      failure = { op, error };
      break;
    }
  }
  if (!failure) {
    try {
      await ctx.ovh.refresh(zone);
      calls.push({ method: 'POST', path: refreshPath(zone), body: '', status: 204 });
    } catch (error) {
      calls.push({ method: 'POST', path: refreshPath(zone), body: '', status: statusOf(error), error: messageOf(error) });
      failure = { error };
    }
  }

  if (!failure) {
    await updateCache(tx, zone, done);
    await updateOwnership(tx, zone, tenant, plan.changes);
    const generation = await store.bumpGeneration(tx, zone);
    await store.notifyZoneChanged(tx, zone, generation);
    await store.finishJournal(tx, journalId, 'done', { calls });
    ctx.log.info({ zone, tenant: tenant.name, operations: plan.operations.length, generation: String(generation) }, 'applied');
    return { zone, status: 'applied', generation, calls, changes: plan.changes, conflicts: plan.conflicts };
  }

  // Undo, newest first, what this apply did; publish nothing; re-read what was touched.
  const undo: CallRecord[] = [];
  for (const d of [...done].reverse()) {
    const u = inverse(zone, d);
    try {
      const created = await send(ctx, zone, u, knownIds);
      if (created) knownIds.add(created.id);
      undo.push({ ...describeOperation(u), status: 200 });
    } catch (error) {
      undo.push({ ...describeOperation(u), status: statusOf(error), error: messageOf(error) });
      ctx.log.error({ zone, op: describeOperation(u), err: messageOf(error) }, 'undo of a failed apply failed; the re-read below records what OVH holds');
    }
  }
  calls.push(...undo);
  await rereadNames(ctx, tx, zone, names);
  const generation = await store.bumpGeneration(tx, zone);
  await store.notifyZoneChanged(tx, zone, generation);
  const what = failure.op ? `${failure.op.method} ${failure.op.path}` : `POST ${refreshPath(zone)}`;
  const index = failure.op ? plan.operations.indexOf(failure.op) + 1 : plan.operations.length + 1;
  const message = `apply to zone ${zone} failed at operation ${index} of ${plan.operations.length + 1} (${what}): ${messageOf(failure.error)}; the ${done.length} operation(s) that had succeeded were undone and nothing was published`;
  await store.finishJournal(tx, journalId, 'failed', { calls, failedOperation: what, error: messageOf(failure.error) });
  ctx.log.warn({ zone, tenant: tenant.name, failed: what, err: messageOf(failure.error) }, 'apply failed and was rolled back');
  const transient = !(failure.error instanceof OvhError) || failure.error.transient;
  return {
    zone,
    status: 'failed',
    generation,
    calls,
    changes: plan.changes,
    conflicts: plan.conflicts,
    error: new ApplyFailedError(message, zone, transient),
  };
}

async function send(ctx: CoreContext, zone: string, op: OvhOperation, knownIds: ReadonlySet<string>): Promise<OvhRecord | undefined> {
  switch (op.method) {
    case 'POST':
      return ctx.ovh.createRecord(zone, op.body, knownIds);
    case 'PUT':
      await ctx.ovh.updateRecord(zone, op.id, op.body);
      return undefined;
    case 'DELETE':
      await ctx.ovh.deleteRecord(zone, op.id);
      return undefined;
  }
}

/** The operation that undoes one that succeeded. */
function inverse(zone: string, d: Done): OvhOperation {
  const { op } = d;
  switch (op.method) {
    case 'POST': {
      const r = d.created!;
      return { method: 'DELETE', path: `/domain/zone/${zone}/record/${r.id}`, id: r.id, before: r };
    }
    case 'PUT':
      return { method: 'PUT', path: op.path, id: op.id, body: { target: op.before.target, ttl: op.before.ttl }, before: op.before };
    case 'DELETE': {
      const b = op.before;
      const body: OvhRecordBody = { fieldType: b.fieldType, subDomain: b.subDomain, target: b.target, ttl: b.ttl };
      return { method: 'POST', path: `/domain/zone/${zone}/record`, body };
    }
  }
}

async function updateCache(tx: store.Queryable, zone: string, done: Done[]): Promise<void> {
  const upserts: store.RecordRow[] = [];
  const deletes: string[] = [];
  for (const { op, created } of done) {
    if (op.method === 'POST') upserts.push(toRow(created!));
    else if (op.method === 'PUT') upserts.push(toRow({ ...op.before, target: op.body.target, ttl: op.body.ttl }));
    else deletes.push(op.id);
  }
  if (deletes.length) await store.deleteRecords(tx, zone, deletes);
  if (upserts.length) await store.upsertRecords(tx, zone, upserts);
}

async function updateOwnership(tx: store.Queryable, zone: string, tenant: Tenant, changes: Change[]): Promise<void> {
  for (const c of changes) {
    if (c.action === 'create') {
      await store.setOwner(tx, { zone, dnsName: c.after!.dnsName, recordType: c.after!.recordType, tenantId: tenant.id });
    } else if (c.action === 'delete') {
      await store.removeOwner(tx, { zone, dnsName: c.before!.dnsName, recordType: c.before!.recordType });
    }
  }
}

export interface TouchedName {
  subDomain: string;
  fieldType: string;
}

function touchedNames(ops: OvhOperation[]): TouchedName[] {
  const seen = new Map<string, TouchedName>();
  for (const op of ops) {
    const n = op.method === 'POST' ? op.body : op.before;
    seen.set(`${n.subDomain} ${n.fieldType}`, { subDomain: n.subDomain, fieldType: n.fieldType });
  }
  return [...seen.values()];
}

/** Re-reads only these names from OVH into the cache (never the whole zone). */
async function rereadNames(ctx: CoreContext, tx: store.Queryable, zone: string, names: TouchedName[]): Promise<void> {
  const rows: store.RecordRow[] = [];
  for (const n of names) {
    const ids = await ctx.ovh.listRecordIds(zone, { fieldType: n.fieldType, subDomain: n.subDomain });
    for (const id of ids) rows.push(toRow(await ctx.ovh.getRecord(zone, id, 2)));
  }
  await store.replaceRecordsForNames(tx, zone, names, rows);
}

/**
 * Applies that died with their journal row in_flight: holding the zone lock proves they are dead
 * (they held it while running). Re-read the names they touched before anything else.
 */
export async function recoverInFlight(ctx: CoreContext, tx: store.Queryable, zone: string): Promise<number> {
  const rows = await store.listInFlight(tx, zone);
  if (rows.length === 0) return 0;
  for (const row of rows) {
    const names = ((row.intent as { names?: TouchedName[] }).names ?? []).filter((n) => typeof n.subDomain === 'string');
    await rereadNames(ctx, tx, zone, names);
    await store.finishJournal(tx, row.id, 'recovered', { recoveredAt: new Date().toISOString(), names });
    ctx.log.warn({ zone, journal: row.id, names: names.length }, 'recovered an apply that died in flight');
  }
  const generation = await store.bumpGeneration(tx, zone);
  await store.notifyZoneChanged(tx, zone, generation);
  return rows.length;
}

/** At start: recover every zone that has dead applies. */
export async function recoverAll(ctx: CoreContext): Promise<number> {
  let n = 0;
  for (const z of await store.listZones(ctx.pool)) {
    if ((await store.listInFlight(ctx.pool, z.name)).length === 0) continue;
    n += await store.withZoneLock(ctx.pool, z.name, { lockTimeoutMs: ctx.settings.lockTimeoutMs }, (tx) => recoverInFlight(ctx, tx, z.name));
  }
  return n;
}

function statusOf(e: unknown): number {
  return e instanceof OvhError ? e.status : 0;
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

