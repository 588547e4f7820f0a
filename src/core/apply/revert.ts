/**
 * Undo of an apply (AdminService.PlanRevert, `dnsplane journal revert ID`): a stored plan — never
 * applied by this call — that puts the record sets one apply touched back as they were before it,
 * for the apply's tenant (its ownership, so the sets are owned as before), asked for by the admin.
 *
 * What the apply changed is in its journal row's intent (core/apply/undo.ts): the names it touched and
 * the cached records of those names just before it (`before`). Each touched record set is compared as
 * it is now in the cache with as it was before; the difference becomes a change set (create, update,
 * delete) planned like any other, so its OVH operations are the minimal ones and Apply checks it
 * again under the zone lock (stale if the zone moved, ownership re-checked, the change threshold).
 * A record set a later apply touched (a journal row after this one, done or in flight, naming it) is
 * left as it is and listed as a conflict with what changed it: reverting it would undo that apply too.
 *
 * A shared set (core/ownership/ownership.ts: each tenant owns its targets) is compared on the apply's tenant's
 * slice only: its targets as they were and as they are, without the targets of other tenants (or of
 * nobody), which an apply never touches; so the revert puts back that tenant's targets and never
 * names or touches the others'. The plan and its journal row are written in one transaction.
 */
import { SHARED_LABEL } from '../../dns/diff.js';
import { InvalidInputError } from '../../dns/errors.js';
import { absoluteName } from '../../dns/names.js';
import type { Endpoint } from '../../dns/types.js';
import { recordsToEndpoints } from '../../ovh/mapping.js';
import * as store from '../../store/index.js';
import { readIntent } from './undo.js';
import { auditAdminAction } from '../journal/audit.js';
import type { CoreContext } from '../context.js';
import { NotFoundError, PermissionDeniedError } from '../errors.js';
import type { StoredPlan } from '../plan/plan.js';
import type { RawChangeSet, RawEndpoint } from '../plan/input.js';
import { plan } from '../plan/stored.js';
import { isAdmin, type Tenant } from '../tenants/tenants.js';

/** A record set the revert leaves alone: a later apply touched it. */
export interface RevertConflict {
  dnsName: string;
  recordType: string;
  /** The later journal row that touched it (the first of them), its tenant and when it started. */
  journalId: string;
  tenant: string;
  at: Date;
}

export interface Revert {
  /** The journal row reverted. */
  reverts: string;
  plan: StoredPlan;
  conflicts: RevertConflict[];
}

/**
 * Plans the revert of journal row `journalId` as `actor` (an admin). InvalidArgument for a row that is
 * not an apply, or an apply that did not finish done (a failed or recovered one was rolled back
 * already); the plan is stored for the apply's tenant, requested by the actor, and journaled
 * (`plan-revert`, naming the row it reverts and the conflicts).
 */
export async function planRevert(ctx: CoreContext, actor: Tenant, journalId: string): Promise<Revert> {
  if (!isAdmin(actor)) throw new PermissionDeniedError('', `reverting an apply needs the admin scope; tenant "${actor.name}" does not have it`);
  if (!/^[1-9][0-9]{0,18}$/.test(journalId)) throw new InvalidInputError('journalId', `must be a journal entry id (digits), got "${journalId}"`);
  const row = await store.getJournalEntry(ctx.pool, journalId);
  if (!row) {
    const pruned = await store.journalPrunedBefore(ctx.pool);
    const why = pruned ? ` (entries finished before ${pruned.toISOString()} were pruned: dnsplane journal prune)` : '';
    throw new NotFoundError('journal entry', journalId, `journal entry ${journalId} does not exist${why}`);
  }
  const kind = (row.intent as { kind?: unknown } | null)?.kind;
  if (typeof kind === 'string')
    throw new InvalidInputError('journalId', `journal entry ${journalId} is an admin action (${kind}), not an apply: only an apply's changes can be reverted`);
  if (row.state !== 'done')
    throw new InvalidInputError(
      'journalId',
      `journal entry ${journalId} is ${row.state}, not done: ${row.state === 'in_flight' ? 'it is still applying' : 'it was rolled back, nothing of it is left to revert'}`,
    );
  const tenant = await store.getTenantById(ctx.pool, row.tenantId);
  if (!tenant) throw new NotFoundError('tenant', row.tenantId);
  const { names, before, ops } = readIntent(row.intent);
  if (!ops) throw new InvalidInputError('journalId', `journal entry ${journalId} records no operations dnsplane can read back; it cannot be reverted`);
  const zone = row.zone;

  const later = await store.listLaterTouching(ctx.pool, zone, journalId, names);
  const tenantNames = new Map((await store.listTenants(ctx.pool)).map((t) => [t.id, t.name]));
  const touchedBy = new Map<string, store.JournalEntry>();
  for (const entry of later) {
    for (const n of readIntent(entry.intent).names) {
      const key = nameKey(n);
      if (!touchedBy.has(key)) touchedBy.set(key, entry);
    }
  }
  const now = await store.listRecordsForNames(ctx.pool, zone, names);
  const owners = await store.listOwnershipForSets(
    ctx.pool,
    zone,
    names.map((n) => ({ dnsName: absoluteName(n.subDomain, zone).toLowerCase(), recordType: n.fieldType })),
  );
  const changes: RawChangeSet = { create: [], updateOld: [], updateNew: [], delete: [] };
  const conflicts: RevertConflict[] = [];
  for (const n of names) {
    const slice = sharedSlice(zone, n, now, owners, tenant.id);
    const was = setOf(zone, before, n, slice);
    const is = setOf(zone, now, n, slice);
    const by = touchedBy.get(nameKey(n));
    if (by) {
      const e = (is ?? was)!;
      conflicts.push({
        dnsName: e?.dnsName ?? n.subDomain,
        recordType: n.fieldType,
        journalId: by.id,
        tenant: tenantNames.get(by.tenantId) ?? '',
        at: by.startedAt,
      });
      continue;
    }
    if (was && !is) changes.create.push(raw(was));
    else if (!was && is) changes.delete.push(raw(is));
    else if (was && is && !sameSet(was, is)) {
      changes.updateOld.push(raw(is));
      changes.updateNew.push(raw(was));
    }
  }
  // The plan and its journal row in one transaction: a revert journaled is a revert stored, and back.
  const stored = await plan(ctx, tenant, { kind: 'changes', changes, policy: 'sync', revertOf: journalId }, actor, (tx, p) =>
    auditAdminAction(
      tx,
      zone,
      actor,
      'plan-revert',
      `plan ${p.id} reverts apply ${journalId} of tenant "${tenant.name}" (asked for by ${actor.name}): ${changes.create.length + changes.updateNew.length + changes.delete.length} record set(s) put back, ${conflicts.length} conflict(s)`,
      {
        planId: p.id,
        reverts: journalId,
        tenant: tenant.name,
        conflicts: conflicts.map((c) => ({ dnsName: c.dnsName, recordType: c.recordType, journalId: c.journalId })),
      },
    ),
  );
  ctx.log.info({ zone, reverts: journalId, plan: stored.id, tenant: tenant.name, by: actor.name, conflicts: conflicts.length }, 'revert planned');
  return { reverts: journalId, plan: stored, conflicts };
}

function nameKey(n: { subDomain: string; fieldType: string }): string {
  return `${n.subDomain.toLowerCase()} ${n.fieldType}`;
}

/** A record's target in the canonical form ownership rows keep. */
function targetOf(zone: string, r: store.RecordRow): string | undefined {
  return recordsToEndpoints([{ ...r, zone }], zone).endpoints[0]?.targets[0];
}

/**
 * For a shared set: the targets that are not the tenant's (other tenants', or nobody's) — the same
 * before the apply and now, since an apply changes its own slice only; undefined: not a shared set.
 */
function sharedSlice(
  zone: string,
  n: { subDomain: string; fieldType: string },
  now: readonly store.RecordRow[],
  owners: readonly store.OwnershipRow[],
  tenantId: string,
): { foreign: Set<string> } | undefined {
  const dnsName = absoluteName(n.subDomain, zone).toLowerCase();
  const rows = owners.filter((o) => o.shared && o.dnsName === dnsName && o.recordType === n.fieldType.toUpperCase());
  if (rows.length === 0) return undefined;
  const mine = new Set(rows.filter((o) => o.tenantId === tenantId).map((o) => o.target));
  const foreign = new Set<string>();
  for (const r of now) {
    if (nameKey(r) !== nameKey(n)) continue;
    const t = targetOf(zone, r);
    if (t !== undefined && !mine.has(t)) foreign.add(t);
  }
  return { foreign };
}

/**
 * The record set (name, type) of `rows` as an endpoint, or undefined when it has no record; of a shared
 * set (`slice`), the tenant's targets only, labelled shared, with their own TTL.
 */
function setOf(
  zone: string,
  rows: readonly store.RecordRow[],
  n: { subDomain: string; fieldType: string },
  slice?: { foreign: Set<string> },
): Endpoint | undefined {
  const mine = rows.filter((r) => nameKey(r) === nameKey(n) && !slice?.foreign.has(targetOf(zone, r) ?? '')).map((r) => ({ ...r, zone }));
  const e = recordsToEndpoints(mine, zone).endpoints[0];
  return e && slice ? { ...e, labels: { ...e.labels, [SHARED_LABEL]: 'true' } } : e;
}

function sameSet(a: Endpoint, b: Endpoint): boolean {
  return a.ttl === b.ttl && a.targets.length === b.targets.length && [...a.targets].sort().every((t, i) => t === [...b.targets].sort()[i]);
}

function raw(e: Endpoint): RawEndpoint {
  const shared = e.labels?.[SHARED_LABEL] === 'true' ? { labels: { [SHARED_LABEL]: 'true' } } : {};
  return { dnsName: e.dnsName, recordType: e.recordType, targets: [...e.targets], ttl: e.ttl, ...shared };
}
