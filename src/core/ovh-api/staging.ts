/**
 * The draft of the OVH API dnsplane serves, written and published. On OVH, record calls edit a draft
 * of the zone that POST …/refresh publishes. Here each tenant has its own draft per zone (Postgres:
 * store/ovh-drafts.ts; read through core/ovh-api/draft-view.ts): a write is judged at once as an apply would
 * judge it — the tenant's grant, ownership, CNAME rules, dnsplane's target rules — and refused then
 * (PermissionDeniedError, InvalidInputError) or staged; its refresh turns every staged write of the
 * zone into ONE apply through core (core/apply/: the zone lock, minimal operations — a staged delete
 * and create of one record set become one PUT, or nothing —, coalescing with other applies, the
 * journal, rollback). Nothing of another tenant is ever part of it: the change set names only record
 * sets the tenant's own records make up.
 *
 * Per record set: the refresh asks for the set to hold exactly the tenant's records of it in the draft
 * (its slice, for a shared set), or to be gone when none is left; its TTL is the TTL of the latest
 * staged write of the set that gave one, else the set's TTL as published, else (a new set) the
 * lowest of its records'. The refresh is planned under the zone lock (an input kind of its own,
 * DraftPlanner in core/plan/input.ts), against the zone as the applies before it left it, and what it keeps
 * — the served ids, the draft rows it published — is written in the apply's transaction. A record
 * keeps the id the tool was given for as long as it exists (core/ovh-api/draft-view.ts: served ids): a staged
 * create its staged id, a record the tenant had its OVH id, also when a refresh replaced its OVH
 * record. A staged write no refresh published within DNSPLANE_OVH_API_DRAFT_TTL (1 h by default) is
 * dropped (sweepExpiredDrafts).
 */
import { InvalidInputError } from '../../dns/errors.js';
import { messageOf } from '../../lib/error-message.js';
import { RECORD_TYPES, isRecordType, SHARED_LABEL, type Conflict, type RecordSetKey, type RecordType } from '../../dns/index.js';
import { ovhRecordKey, ovhRecordSetName, ovhTargetToCanonical, recordsToEndpoints } from '../../ovh/mapping.js';
import type { OvhRecord } from '../../ovh/types.js';
import { stripOneQuotePair } from '../../ovhwire/records.js';
import * as store from '../../store/index.js';
import { requireAdmin } from '../admin/index.js';
import { apply } from '../apply/index.js';
import type { CoreContext } from '../context.js';
import {
  draftRecord,
  ownWithDraft,
  ownRecords,
  ownRecordsIn,
  servedIdsOf,
  tenantBase,
  tenantZone,
  servedRecordOf,
  type DraftRecord,
  type ServedIds,
} from './draft-view.js';
import { NotFoundError, PermissionDeniedError } from '../errors.js';
import { canonicalOf } from '../ownership/ownership.js';
import { computeZonePlan } from '../plan/plan.js';
import { routeInput, type DraftPlanner, type DraftSent, type RawChangeSet, type RawEndpoint } from '../plan/input.js';
import { readCacheOf } from '../reads/read-cache.js';
import type { ZoneBase } from '../reads/zone-base.js';
import type { Tenant } from '../tenants/tenants.js';
import { baseIndexOf } from '../reads/base-index.js';
import type { ZoneIndex } from '../reads/sets-index.js';

/** DNSPLANE_OVH_API_DRAFT_TTL's default: a tool's calls and its refresh come seconds apart; a draft an hour old was abandoned. */
export const DEFAULT_DRAFT_TTL_MS = 3_600_000;

/** A record as a tool writes it, validated by OVH's rules (ovhwire/records.ts): OVH's stored form. */
export interface WrittenRecord extends store.DraftRecord {
  /** The write gave a TTL (else the set keeps its own). */
  ttlSet: boolean;
}

/** What a PUT changes (OVH: subDomain, target and ttl; fieldType is read-only). */
export interface RecordPatch {
  subDomain?: string;
  target?: string;
  ttl?: number;
}

function expiry(ctx: CoreContext): Date {
  return new Date(Date.now() + (ctx.settings.ovhApi?.draftTtlMs ?? DEFAULT_DRAFT_TTL_MS));
}

function managedType(fieldType: string): RecordType {
  if (!isRecordType(fieldType))
    throw new InvalidInputError('fieldType', `dnsplane manages ${RECORD_TYPES.join(', ')} records; ${fieldType} is not one of them`);
  return fieldType;
}

/** A record's target as OVH stores it (a TXT answer unquoted and joined), from the form OVH answers. */
function storedTarget(r: OvhRecord): string {
  if (r.fieldType !== 'TXT' && r.fieldType !== 'SPF') return r.target;
  return ovhTargetToCanonical(r.fieldType, r.target, r.zone) ?? stripOneQuotePair(r.target);
}

function isShared(index: ZoneIndex, e: { dnsName: string; recordType: string }): boolean {
  return index.ownersAt(e.dnsName).some((o) => o.shared && o.recordType === e.recordType);
}

/** The record set these records make up, as core takes it; undefined when they make none (no record). */
function endpointOf(zone: string, index: ZoneIndex, records: readonly OvhRecord[], ttl?: number): RawEndpoint | undefined {
  const e = recordsToEndpoints(records, zone).endpoints[0];
  if (!e) return undefined;
  const shared = isShared(index, e);
  return { dnsName: e.dnsName, recordType: e.recordType, targets: e.targets, ttl: ttl ?? e.ttl, ...(shared ? { labels: { [SHARED_LABEL]: 'true' } } : {}) };
}

function byKey(zone: string, records: Iterable<OvhRecord>): Map<RecordSetKey, OvhRecord[]> {
  const out = new Map<RecordSetKey, OvhRecord[]>();
  for (const r of records) {
    const key = ovhRecordKey(r, zone);
    const list = out.get(key);
    if (list) list.push(r);
    else out.set(key, [r]);
  }
  return out;
}

/** A conflict in words that name its record set. */
function conflictText(c: Conflict): string {
  return c.reason.startsWith(c.endpoint.dnsName) ? c.reason : `${c.endpoint.dnsName} ${c.endpoint.recordType}: ${c.reason}`;
}

/**
 * The set `key` holding `wanted` (the tenant's records of it after a write), judged as an apply
 * judges it, without applying: a name outside the grant or in another zone, a target dnsplane
 * refuses, a set another tenant (or nobody) owns, a CNAME beside other types — refused now.
 */
async function judgeWrite(ctx: CoreContext, tenant: Tenant, zone: string, base: ZoneBase, wanted: readonly OvhRecord[]): Promise<void> {
  const e = endpointOf(zone, await baseIndexOf(base, zone), wanted);
  if (!e) return;
  const routed = await routeInput(ctx, tenant, { kind: 'changes', changes: { create: [e], updateOld: [], updateNew: [], delete: [] }, policy: 'sync' });
  if (!routed.byZone.has(zone)) {
    throw new InvalidInputError('subDomain', `${e.dnsName} is in zone ${[...routed.byZone.keys()][0]}, which dnsplane manages apart: write it there`);
  }
  const plan = await store.withSnapshot(ctx.pool, (q) => computeZonePlan(ctx, q, tenant, zone, routed, undefined, readCacheOf(ctx)));
  if (plan.conflicts.length > 0) throw new PermissionDeniedError('', plan.conflicts.map(conflictText).join('; '));
}

/** The tenant's records of the zone in its draft, with `write` laid over them, grouped by set. */
async function draftWith(ctx: CoreContext, tenant: Tenant, zone: string): Promise<{ base: ZoneBase; view: Map<string, DraftRecord> }> {
  const { base, ids } = await tenantBase(ctx, tenant, zone);
  return { base, view: ownWithDraft(zone, await ownRecords(base, tenant, zone, ids), await store.listDraft(ctx.pool, tenant.id, zone)) };
}

/** POST …/record: a new record staged under a new id, after the set it joins was judged. */
export async function stageCreate(ctx: CoreContext, tenant: Tenant, rawZone: string, written: WrittenRecord): Promise<DraftRecord> {
  const zone = await tenantZone(ctx, tenant, rawZone);
  managedType(written.fieldType);
  const { base, view } = await draftWith(ctx, tenant, zone);
  const id = await store.newDraftId(ctx.pool);
  const created = servedRecordOf(zone, id, written);
  const key = ovhRecordKey(created, zone);
  await judgeWrite(ctx, tenant, zone, base, [...(byKey(zone, view.values()).get(key) ?? []), created]);
  const { ttlSet, ...record } = written;
  await store.stageWrite(ctx.pool, { tenantId: tenant.id, zone, recordId: id, action: 'create', record, ttlSet, expiresAt: expiry(ctx) });
  return { ...created, staged: true };
}

/** The tenant's record of that id (`published`: in OVH, else a staged create), or NotFound / PermissionDenied (another tenant's, or nobody's). */
async function ownDraftRecord(ctx: CoreContext, tenant: Tenant, zone: string, id: string): Promise<{ record: DraftRecord; published: boolean }> {
  const found = await draftRecord(ctx, tenant, zone, id);
  if (found.kind === 'foreign') throw new PermissionDeniedError('id', `record ${id} of zone ${zone} is not tenant "${tenant.name}"'s`);
  if (found.kind === 'absent') throw new NotFoundError('record', id, `The requested object (id = ${id}) does not exist`);
  return found;
}

/** PUT …/record/{id}: the record changed in the draft (a staged create in place; a published record by an update). */
export async function stageUpdate(ctx: CoreContext, tenant: Tenant, rawZone: string, id: string, patch: RecordPatch): Promise<void> {
  const zone = await tenantZone(ctx, tenant, rawZone);
  const { record, published } = await ownDraftRecord(ctx, tenant, zone, id);
  const next: store.DraftRecord = {
    subDomain: patch.subDomain ?? record.subDomain,
    fieldType: record.fieldType,
    target: patch.target ?? storedTarget(record),
    ttl: patch.ttl ?? record.ttl,
  };
  const { base, view } = await draftWith(ctx, tenant, zone);
  const changed = servedRecordOf(zone, id, next);
  const key = ovhRecordKey(changed, zone);
  const others = (byKey(zone, view.values()).get(key) ?? []).filter((r) => r.id !== id);
  await judgeWrite(ctx, tenant, zone, base, [...others, changed]);
  const action = published ? 'update' : 'create';
  await store.stageWrite(ctx.pool, { tenantId: tenant.id, zone, recordId: id, action, record: next, ttlSet: patch.ttl !== undefined, expiresAt: expiry(ctx) });
}

/** DELETE …/record/{id}: a staged create dropped, a published record's delete staged. */
export async function stageDelete(ctx: CoreContext, tenant: Tenant, rawZone: string, id: string): Promise<void> {
  const zone = await tenantZone(ctx, tenant, rawZone);
  const { published } = await ownDraftRecord(ctx, tenant, zone, id);
  if (!published) await store.dropDraftRow(ctx.pool, tenant.id, zone, id);
  else await store.stageWrite(ctx.pool, { tenantId: tenant.id, zone, recordId: id, action: 'delete', ttlSet: false, expiresAt: expiry(ctx) });
}

/** What a refresh did. */
export interface RefreshOutcome {
  zone: string;
  /** nothing_staged: no staged write, nothing done; dry_run (DNSPLANE_DRY_RUN): nothing sent, the draft kept. */
  status: 'applied' | 'no_changes' | 'nothing_staged' | 'dry_run';
  /** Staged writes the refresh took (published, or dropped as they changed nothing or were refused). */
  writes: number;
  /** OVH calls the apply made (operations and refresh). */
  calls: number;
  /** Record sets the apply refused (their ownership moved since the write), in words; their writes dropped. */
  refused: string[];
}

/**
 * The change set a draft asks for: every record set a staged write touches (where its record was,
 * where it is now) to hold the tenant's records of it in the draft, or to be gone.
 */
function draftChanges(
  zone: string,
  index: ZoneIndex,
  own: ReadonlyMap<string, OvhRecord>,
  view: ReadonlyMap<string, DraftRecord>,
  draft: readonly store.DraftRow[],
): RawChangeSet {
  const touched = new Set<RecordSetKey>();
  const ttls = new Map<RecordSetKey, number>();
  for (const d of draft) {
    const before = own.get(d.recordId);
    if (before) touched.add(ovhRecordKey(before, zone));
    if (!d.record) continue;
    const key = ovhRecordKey(servedRecordOf(zone, d.recordId, d.record), zone);
    touched.add(key);
    if (d.ttlSet) ttls.set(key, d.record.ttl); // staged in order: the latest write that gave one wins
  }
  const wanted = byKey(zone, view.values());
  const current = byKey(zone, own.values());
  const changes: RawChangeSet = { create: [], updateOld: [], updateNew: [], delete: [] };
  for (const key of [...touched].sort()) {
    const records = wanted.get(key) ?? [];
    if (records.length > 0) {
      // A write that gave no TTL leaves the set's own (a POST without one must not reset the set's).
      const e = endpointOf(zone, index, records, ttls.get(key) ?? endpointOf(zone, index, current.get(key) ?? [])?.ttl);
      if (e) changes.create.push(e);
      continue;
    }
    const gone = endpointOf(zone, index, current.get(key) ?? []);
    if (gone) changes.delete.push(gone);
  }
  return changes;
}

/**
 * Which OVH record each of the tenant's records of the touched sets is after a refresh's operations:
 * a record whose OVH record is still there with its target keeps it; another (created, or its record
 * replaced) takes a record of its set holding its target that no other took — its served id moves to
 * that OVH record (`moved`).
 */
function movedIds(zone: string, ids: ServedIds, view: ReadonlyMap<string, DraftRecord>, after: readonly OvhRecord[]): store.ServedId[] {
  const afterByKey = byKey(zone, after);
  const moved: store.ServedId[] = [];
  for (const [key, wanted] of byKey(zone, view.values())) {
    const records = afterByKey.get(key);
    if (!records) continue;
    const type = wanted[0]!.fieldType as RecordType;
    const target = (r: OvhRecord) => canonicalOf(r, type, zone);
    const taken = new Set<string>();
    const unplaced: OvhRecord[] = [];
    for (const w of wanted) {
      const now = ids.ovhOf.get(w.id) ?? w.id;
      const same = records.find((r) => r.id === now && target(r) === target(w));
      if (same) taken.add(same.id);
      else unplaced.push(w);
    }
    for (const w of unplaced) {
      const match = records.find((r) => !taken.has(r.id) && target(r) === target(w));
      if (!match) continue;
      taken.add(match.id);
      moved.push({ servedId: w.id, ovhId: match.id });
    }
  }
  return moved;
}

/**
 * One refresh's draft as the apply plans it under the zone lock (DraftPlanner): the change set of the
 * draft as it is then, against the zone as the applies before it left it; and, in the apply's
 * transaction after each batch, the served ids moved to the records they name now, and after the
 * last one the draft rows it read dropped (by revision: a write staged again meanwhile waits).
 */
class DraftRefresh implements DraftPlanner {
  /** The draft rows the latest planning read (what the refresh publishes). */
  read: store.DraftRow[] = [];
  private view: ReadonlyMap<string, DraftRecord> = new Map();
  private ids: ServedIds = servedIdsOf([]);
  /** The draft rows names() read, for the changes() that follows it (the same rows: never a row staged in between). */
  private named: store.DraftRow[] | undefined;
  planned = false;

  constructor(
    private readonly tenant: Tenant,
    private readonly zone: string,
  ) {}

  async names(q: store.Queryable): Promise<string[]> {
    this.named = await store.listDraft(q, this.tenant.id, this.zone);
    return this.named.flatMap((d) => (d.record ? [ovhRecordSetName(d.record.subDomain, this.zone)] : []));
  }

  async changes(q: store.Queryable, index: ZoneIndex): Promise<RawChangeSet> {
    const { tenant, zone } = this;
    this.ids = servedIdsOf(await store.listServedIds(q, tenant.id, zone));
    const own = ownRecordsIn(index, tenant, zone, this.ids);
    this.read = this.named ?? (await store.listDraft(q, tenant.id, zone));
    this.named = undefined;
    this.view = ownWithDraft(zone, own, this.read);
    this.planned = true;
    return draftChanges(zone, index, own, this.view, this.read);
  }

  async recorded(q: store.Queryable, sent: DraftSent): Promise<void> {
    await store.moveServedIds(q, this.tenant.id, this.zone, movedIds(this.zone, this.ids, this.view, sent.records), sent.gone);
    if (!sent.more) await store.dropPublishedDraft(q, this.tenant.id, this.zone, this.read);
  }
}

/**
 * POST …/refresh: the tenant's staged writes of the zone published as one apply, planned under the
 * zone lock. Throws what the apply threw or failed with (the draft kept: a refresh again retries it);
 * the writes of record sets the apply refused are dropped and named in `refused`.
 */
/** applicationKey: the key that asked (public, never its secret), named in the journal's summary; from: the client address. */
export async function refreshDraft(ctx: CoreContext, tenant: Tenant, rawZone: string, applicationKey?: string, from?: string): Promise<RefreshOutcome> {
  const zone = await tenantZone(ctx, tenant, rawZone);
  // Read once before the lock only to answer an empty draft without taking it.
  if ((await store.listDraft(ctx.pool, tenant.id, zone)).length === 0) return { zone, status: 'nothing_staged', writes: 0, calls: 0, refused: [] };
  const draft = new DraftRefresh(tenant, zone);
  const origin = applicationKey ? `OVH API refresh by application key ${applicationKey}` : 'OVH API refresh';
  const result = (
    await apply(ctx, tenant, { input: { kind: 'draft', zone, draft, policy: 'sync', origin }, ...(from !== undefined ? { from } : {}) })
  ).zones.find((z) => z.zone === zone);
  if (!result) throw new Error(`the refresh of zone ${zone} applied no change to it`);
  if (result.status === 'dry_run') return { zone, status: 'dry_run', writes: draft.read.length, calls: 0, refused: [] };
  if (result.status !== 'applied' && result.status !== 'no_changes') throw result.error ?? new Error(`the refresh of zone ${zone} ended ${result.status}`);
  const refused = result.conflicts.map(conflictText);
  // Nothing was sent (the draft changed nothing, or only sets refused): its rows go all the same; after
  // operations, the last batch dropped them in its transaction (this finds none left).
  if (draft.planned) await store.dropPublishedDraft(ctx.pool, tenant.id, zone, draft.read);
  return { zone, status: result.status, writes: draft.read.length, calls: result.calls.length, refused };
}

/** Drops staged writes past their expiry and staged ids whose record is gone; says how many. */
export async function sweepExpiredDrafts(ctx: CoreContext): Promise<{ drafts: number; ids: number }> {
  return store.sweepOvhDrafts(ctx.pool);
}

/** How often the server sweeps: an expired staged write is never read, so this only bounds the table. */
export const DRAFT_SWEEP_MS = 60_000;

/** The server's sweep, every DRAFT_SWEEP_MS (a failed one is logged and tried at the next). */
export function startDraftSweep(ctx: CoreContext): { stop(): void } {
  const timer = setInterval(() => {
    sweepExpiredDrafts(ctx).then(
      (swept) => {
        if (swept.drafts + swept.ids > 0) ctx.log.info(swept, 'dropped expired staged writes of the OVH API and ids of records gone');
      },
      (e: unknown) => ctx.log.warn({ err: messageOf(e) }, 'could not sweep the OVH API drafts'),
    );
  }, DRAFT_SWEEP_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** A staged write as an admin's listing shows it: whose, where, what, until when. */
export type StagedWrite = store.DraftListing;

/** Every unexpired staged write (of `tenant`, or of every tenant when ''), for an admin (the console). */
export async function listDrafts(ctx: CoreContext, actor: Tenant, tenant: string): Promise<StagedWrite[]> {
  requireAdmin(actor);
  const tenantId = tenant.trim() === '' ? undefined : (await store.getTenantByName(ctx.pool, tenant.trim()))?.id;
  if (tenant.trim() !== '' && tenantId === undefined) throw new NotFoundError('tenant', tenant.trim(), `tenant: no tenant named "${tenant.trim()}"`);
  return store.listAllDrafts(ctx.pool, { ...(tenantId ? { tenantId } : {}), limit: 1000 });
}
