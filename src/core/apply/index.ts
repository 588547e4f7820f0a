/**
 * Apply: per zone, under the zone's advisory lock, on one transaction:
 *   recover dead applies -> recompute the plan (ownership re-checked; a stored plan whose zone moved is
 *   stale) -> journal the intent (autocommitted, survives a crash) -> send the operations -> one
 *   refresh -> cache, ownership, generation + 1, journal done, NOTIFY, COMMIT.
 * When an operation fails: undo what succeeded, no refresh, re-read only the touched names,
 * generation + 1, journal failed, COMMIT, report. A zone is never published half-applied.
 * An apply that died in flight (its journal row still in_flight) is rolled back by the zone's next
 * lock holder before anything else (core/recovery.ts recoverInFlight): an apply counts iff its journal
 * row is done. The record operations it sends, and what it and recovery share, are core/apply-ops.ts.
 *
 * Fencing (core/fence.ts): every OVH write is sent only while the zone lock is still held (checked on
 * the lock's own session right before it). An apply that loses its lock stops at once — at most the
 * call in flight lands, never a refresh after it —, answers Unavailable saying what it had sent, and
 * leaves the rollback to the zone's next lock holder, which first waits until none of its calls can
 * still land (the journal row's lease). Shutdown (core/lifecycle.ts): an apply stops while its undo
 * still fits before the deadline, and rolls back.
 */
import type { Change } from '../../dns/types.js';
import { OvhError } from '../../ovh/errors.js';
import { describeOperation, operationSetKey, operationsByRecordSet, recordPath } from '../../ovh/ops.js';
import { withOvhFlow } from '../../ovh/ratelimit.js';
import type { OvhOperation, OvhRecord, OvhRecordBody } from '../../ovh/types.js';
import { refreshPath } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { dryRunApply } from './dry-run.js';
import { assessThreshold, maxChangePercent, thresholdRefusal } from '../guard.js';
import type pg from 'pg';
import { endpointKey } from '../../dns/endpoint.js';
import { ApplyFailedError, isDatabaseUnavailable, isRetryable, PermissionDeniedError, ShuttingDownError, StalePlanError, ZoneLockLostError } from '../errors.js';
import type { ZoneFence } from '../fence.js';
import { computeZonePlan, getPlan, planDigestSliced, routeInput, type PlanInput, type RoutedInput, type ZonePlan } from '../plan.js';
import { Slicer } from '../slices.js';
import type { Tenant } from '../tenants.js';
import { recordOwnership } from '../ownership.js';
import { ensureSynced, toRow, withZoneLockQueued, type ZoneQueueView } from '../zones.js';
import type { ApplyBatch, ApplyResult, CallRecord, ZoneApplyResult } from './result.js';
import { answered, journalPool, messageOf, nameKey, send, sendable, statusOf, touchedNames, type TouchedName } from './ops.js';
import { reconcileNames, recoverInFlight, scheduleRecovery } from './recovery.js';

export type { ApplyBatch, ApplyResult, CallRecord, ZoneApplyResult, ZoneApplyStatus } from './result.js';
export { NOT_SENT } from './dry-run.js';
export { recoverAll, recoverInFlight, waitForHolder } from './recovery.js';
/** force (with planId): apply even over the change threshold, as PlanInput.force does. */
export type ApplySource = { planId: string; force?: boolean } | { input: PlanInput };

/**
 * Applies a stored plan or an inline request. Zones are applied in parallel, each on its own, and the
 * result holds every zone's outcome, whatever happened to the others: an error inside one zone (OVH
 * refused, the lock was lost, the database went away) becomes that zone's `failed` result with its
 * error, so a zone that was applied and published is never hidden behind another zone's error.
 * Refused while dnsplane is shutting down (ShuttingDownError, nothing sent).
 */
export async function apply(ctx: CoreContext, tenant: Tenant, source: ApplySource): Promise<ApplyResult> {
  if (ctx.lifecycle?.stopping) throw new ShuttingDownError('dnsplane is shutting down; nothing was sent: retry (another replica, or this one once restarted)');
  const run = applySource(ctx, tenant, source);
  return ctx.lifecycle ? ctx.lifecycle.track(run) : run;
}

async function applySource(ctx: CoreContext, tenant: Tenant, source: ApplySource): Promise<ApplyResult> {
  if ('planId' in source) {
    const stored = await getPlan(ctx, tenant, source.planId);
    if (stored.tenantId !== tenant.id) throw new PermissionDeniedError('planId', `plan "${stored.id}" belongs to tenant "${stored.tenant}"; only it may apply the plan`);
    if (stored.status !== 'pending') throw new StalePlanError(`plan "${stored.id}" is ${stored.status}; make a new plan`);
    if (stored.expiresAt.getTime() < Date.now()) {
      await store.setPlanStatus(ctx.pool, stored.id, 'expired');
      throw new StalePlanError(`plan "${stored.id}" expired at ${stored.expiresAt.toISOString()}; make a new plan`);
    }
    const routed = await routeInput(ctx, tenant, stored.input);
    if (source.force) routed.force = true;
    const settled = await Promise.all(stored.zones.map((zp) => settle(zp.zone, applyZone(ctx, tenant, zp.zone, routed, zp))));
    const zones = settled.map((s) => s.result);
    // Every zone ended in an error before it did anything (a lock timeout, say): the plan stays pending.
    if (settled.every((s) => s.thrown) && zones.every((z) => z.calls.length === 0)) throw zones[0]!.error!;
    const ok = zones.every((z) => z.status === 'applied' || z.status === 'no_changes');
    // A dry run applied nothing: the plan stays pending.
    if (!zones.some((z) => z.status === 'dry_run')) await store.setPlanStatus(ctx.pool, stored.id, ok ? 'applied' : zones.some((z) => z.status === 'stale') ? 'stale' : 'failed', { appliedAt: new Date() });
    return { planId: stored.id, zones };
  }
  const routed = await routeInput(ctx, tenant, source.input);
  const zones = [...routed.byZone.keys()].sort();
  for (const zone of zones) await ensureSynced(ctx, zone);
  return { zones: (await Promise.all(zones.map((zone) => settle(zone, applyZone(ctx, tenant, zone, routed))))).map((s) => s.result) };
}

/** A zone's apply, its error (if it threw) turned into a `failed` result with that error. */
async function settle(zone: string, p: Promise<ZoneApplyResult>): Promise<{ result: ZoneApplyResult; thrown: boolean }> {
  try {
    return { result: await p, thrown: false };
  } catch (e) {
    const error = e instanceof Error ? e : new Error(String(e));
    const calls = error instanceof ApplyFailedError && error.calls ? [...error.calls] : [];
    return { result: { zone, status: 'failed', generation: 0n, calls, changes: [], conflicts: [], error }, thrown: true };
  }
}

/**
 * One zone's apply, in batches of at most DNSPLANE_APPLY_BATCH operations (core/context settings):
 * a request larger than that is applied as successive batches, each one a complete apply of its own —
 * under the zone lock, re-planned from the request against the zone as it is then (ownership and
 * conflicts re-checked), journalled, sent, published by its own refresh, recorded — and the lock is
 * released between batches, so that other applies of the zone interleave and wait at most about one
 * batch. A batch is whole record sets (a set's operations never straddle two batches); deletions go
 * in the first batches (a CNAME replacing an A at the same name). The result says which batches were
 * applied (`batches`); a batch that fails is rolled back alone, the earlier ones stay applied and
 * published, and the error says so: the caller (external-dns on its next loop) plans the rest again.
 * A stored plan is checked for staleness before its first batch only: the later ones re-plan the same
 * request, as the first one did under the lock.
 */
async function applyZone(ctx: CoreContext, tenant: Tenant, zone: string, routed: RoutedInput, stored?: ZonePlan): Promise<ZoneApplyResult> {
  const max = ctx.settings.applyBatch ?? DEFAULT_APPLY_BATCH;
  const batches: ApplyBatch[] = [];
  let merged: ZoneApplyResult | undefined;
  let carried: Carried | undefined;
  for (let index = 1; ; index++) {
    let step: Step;
    try {
      step = await applyZoneMeasured(ctx, tenant, zone, routed, index === 1 ? stored : undefined, { max, index }, carried);
    } catch (e) {
      if (!merged) throw e;
      // A later batch ended in an error (a lock timeout, the database gone): the earlier ones stay.
      const error = e instanceof Error ? e : new Error(String(e));
      return partial(zone, merged, batches, index, error, isRetryable(error));
    }
    const { result, more } = step;
    if (index === 1 && !more) return result; // the common case: one batch, the answer as it always was
    // What the next batch plans if nothing else changes the zone meanwhile: the rest of this plan.
    carried = result.status === 'applied' && step.rest ? { generation: result.generation, plan: step.rest } : undefined;
    if (result.status === 'applied') batches.push({ index, operations: result.calls.filter((c) => !c.path.endsWith('/refresh')).length, generation: result.generation, ...(result.journalId ? { journalId: result.journalId } : {}) });
    if (!merged) merged = { ...result, calls: [...result.calls], changes: [...result.changes] };
    else if (result.status === 'applied' || result.status === 'no_changes') {
      merged.calls.push(...result.calls);
      merged.changes.push(...result.changes);
      merged.generation = result.generation;
    }
    if (result.status !== 'applied' && result.status !== 'no_changes') {
      if (index === 1) return { ...result, batches: [] };
      return partial(zone, merged, batches, index, result.error ?? new Error(result.status), result.error ? isRetryable(result.error) : false, result.calls);
    }
    if (!more || result.status === 'no_changes') return { ...merged, status: 'applied', batches };
    if (ctx.lifecycle?.stopping) {
      return partial(zone, merged, batches, index + 1, new ShuttingDownError('dnsplane is shutting down, the batch was not started'), true);
    }
    if (index >= MAX_BATCHES) {
      return partial(zone, merged, batches, index + 1, new Error(`the request still plans operations after ${index} batches; stopped`), false);
    }
  }
}

/** DNSPLANE_APPLY_BATCH's default. */
export const DEFAULT_APPLY_BATCH = 100;
/** A bound on the batches of one request (5,000 endpoints per request, a few operations each). */
const MAX_BATCHES = 500;

/** The answer when batch `failedIndex` did not apply: the earlier batches stay applied and published. */
function partial(zone: string, merged: ZoneApplyResult, batches: ApplyBatch[], failedIndex: number, error: Error, transient: boolean, failedCalls: CallRecord[] = []): ZoneApplyResult {
  const ops = batches.reduce((n, b) => n + b.operations, 0);
  const head =
    batches.length === 0
      ? `apply to zone ${zone}: no batch was applied`
      : `apply to zone ${zone}: batch${batches.length > 1 ? `es 1-${batches.length}` : ' 1'} (${ops} operation(s)) applied and published, generation ${merged.generation}`;
  return {
    ...merged,
    status: 'failed',
    calls: [...merged.calls, ...failedCalls],
    batches,
    error: new ApplyFailedError(`${head}; batch ${failedIndex} was not applied (rolled back alone, nothing of it published): ${error.message}; the rest is planned again on the next try`, zone, transient, [...merged.calls, ...failedCalls]),
  };
}

/** applyZoneLocked, measured: duration and outcome per zone, lock wait (metrics). */
async function applyZoneMeasured(
  ctx: CoreContext,
  tenant: Tenant,
  zone: string,
  routed: RoutedInput,
  stored: ZonePlan | undefined,
  batch: { max: number; index: number },
  carried?: Carried,
): Promise<Step> {
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  try {
    // Its OVH calls take turns with other tenants' and zones' (ovh/ratelimit.ts).
    const step = await withOvhFlow({ tenant: tenant.name, zone }, () =>
      applyZoneLocked(ctx, tenant, zone, routed, stored, () => ctx.metrics?.lockWaited(zone, 'apply', seconds()), batch, carried),
    );
    ctx.metrics?.applyDone(zone, step.result.status, seconds());
    return step;
  } catch (e) {
    ctx.metrics?.applyDone(zone, 'error', seconds());
    if (isDatabaseUnavailable(e) && !(e instanceof ApplyFailedError)) {
      // The lock's session went at COMMIT (or the database was unreachable before anything was sent).
      scheduleRecovery(ctx, zone);
      throw new ApplyFailedError(
        `apply to zone ${zone}: the database became unavailable (${messageOf(e)}); if operations had been sent, the zone's next lock holder rolls back whatever was not recorded as applied: retry`,
        zone,
        true,
      );
    }
    throw e;
  }
}

/** What one apply (one batch of a request) answers under the lock: its result, and whether its request plans more. */
interface Step {
  result: ZoneApplyResult;
  more: boolean;
  /** Applied with more to do: the plan of the rest (this batch's changes and operations taken out). */
  rest?: ZonePlan;
}

/**
 * The rest of a request's plan after one of its batches, and the generation that batch committed. The
 * next batch plans from it instead of reading and diffing the whole zone again — what a zone holds at
 * a generation never changes, so if the zone is still at that generation, re-planning the request
 * would give exactly this — and plans again from the zone otherwise (another apply, a drift check or
 * an admin changed it in between).
 */
interface Carried {
  generation: bigint;
  plan: ZonePlan;
}

type Outcome = { step: Step } | { error: unknown };

/**
 * One apply of a zone waiting for (or holding) the zone lock in this process: what it asked for, and
 * where its answer goes when the lock's holder takes it into its batch (coalescing).
 */
interface Member {
  tenant: Tenant;
  routed: RoutedInput;
  stored: ZonePlan | undefined;
  batch: { max: number; index: number };
  /** The rest of its request's plan after its previous batch (batches after the first). */
  carried: Carried | undefined;
  /** It got the lock, or a holder took it (metrics: the wait ends). */
  locked: () => void;
  /** Its answer when a holder took it over, given once the holder's transaction has ended. */
  answer: Promise<Outcome>;
  answered: (o: Outcome) => void;
}

/**
 * Thrown inside the lock to end its transaction without COMMIT when a batch stops before it could be
 * recorded (the lock lost, an undo that failed, the database gone): `outcomes` holds what each apply
 * of the batch answers; those it does not name answer `cause`.
 */
class BatchStopped extends Error {
  constructor(
    readonly outcomes: Map<Member, Outcome>,
    override readonly cause: unknown,
  ) {
    super(messageOf(cause));
  }
}

async function applyZoneLocked(
  ctx: CoreContext,
  tenant: Tenant,
  zone: string,
  routed: RoutedInput,
  stored: ZonePlan | undefined,
  locked: () => void,
  batch: { max: number; index: number },
  carried?: Carried,
): Promise<Step> {
  let answered!: (o: Outcome) => void;
  const answer = new Promise<Outcome>((resolve) => (answered = resolve));
  const me: Member = { tenant, routed, stored, batch, carried, locked, answer, answered };
  const coalesce = (ctx.settings.applyCoalesceMs ?? 0) > 0 && !ctx.settings.dryRun;
  // The applies this one's batch took over: answered here, once the transaction has ended.
  const taken: Member[] = [];
  let outcomes: Map<Member, Outcome>;
  try {
    outcomes = await withZoneLockQueued<Map<Member, Outcome>, Member>(
      ctx,
      zone,
      (tx, fence, queue) => applyBatch(ctx, zone, tx, fence, me, coalesce ? { queue, taken } : undefined),
      coalesce ? { payload: me, taken: async () => new Map([[me, await answer]]) } : undefined,
    );
  } catch (e) {
    const stopped = e instanceof BatchStopped ? e : undefined;
    for (const m of taken) m.answered(stopped?.outcomes.get(m) ?? { error: stopped ? stopped.cause : e });
    const mine = stopped?.outcomes.get(me);
    if (mine && 'step' in mine) return mine.step;
    throw mine ? mine.error : stopped ? stopped.cause : e;
  }
  for (const m of taken) m.answered(outcomes.get(m) ?? { error: new Error('internal: a coalesced apply got no answer') });
  const mine = outcomes.get(me)!;
  if ('error' in mine) throw mine.error;
  return mine.step;
}

/**
 * The first batch of a zone plan: whole record sets, in the plan's order with the sets that only
 * delete first, until at least `max` operations (a set larger than `max` is a batch of its own).
 * The plan itself when it is no larger than `max` (or `max` is 0: batching off).
 */
export function firstBatch(zone: string, plan: ZonePlan, max: number): ZonePlan {
  if (max <= 0 || plan.operations.length <= max) return plan;
  const bySet = operationsByRecordSet(zone, plan.operations);
  const deleteOnly = (k: string) => bySet.get(k)?.every((op) => op.method === 'DELETE') === true;
  const changeKey = (c: Change) => endpointKey(c.after ?? c.before!);
  const ordered = [...plan.changes.filter((c) => deleteOnly(changeKey(c))), ...plan.changes.filter((c) => !deleteOnly(changeKey(c)))];
  const chosen = new Set<string>();
  const changes: Change[] = [];
  let n = 0;
  for (const c of ordered) {
    if (n >= max) break;
    const k = changeKey(c);
    changes.push(c);
    if (!chosen.has(k)) {
      chosen.add(k);
      n += bySet.get(k)?.length ?? 0;
    }
  }
  return { ...plan, changes, operations: plan.operations.filter((op) => chosen.has(operationSetKey(zone, op))) };
}

interface Done {
  op: OvhOperation;
  created?: OvhRecord;
}

/**
 * What the journal's intent holds (JSON). `operations` is for people (method, path, body as sent);
 * `ops` (with each record's state before) and `before` (the cached records of the touched names) are
 * what recovery needs to roll a dead apply back.
 */
interface Intent {
  /** Set for a request applied in batches (DNSPLANE_APPLY_BATCH): which batch this row is, from 1. */
  batch?: number;
  operations: Array<ReturnType<typeof describeOperation>>;
  ops: OvhOperation[];
  names: TouchedName[];
  before: store.RecordRow[];
}

/** Inside the zone lock's transaction: what the batch's recorded changes are undone to when its refresh fails. */
const BATCH_SAVEPOINT = 'coalesced_batch';
/** Around one apply's planning: an error there is that apply's alone. */
const PLAN_SAVEPOINT = 'coalesced_plan';

/** An apply of the batch planned under the lock: answered without sending (stale, refused, no changes, dry run), or to send. */
type Prepared =
  | { kind: 'answer'; step: Step }
  | { kind: 'send'; plan: ZonePlan; more: boolean; rest: ZonePlan; names: TouchedName[] }
  | { kind: 'error'; error: unknown };

/** An apply of the batch that sent its operations and recorded them in the transaction; published by the batch's refresh. */
interface Sent {
  member: Member;
  /** What it sent (its request's batch). */
  plan: ZonePlan;
  more: boolean;
  rest: ZonePlan;
  journalId: string;
  calls: CallRecord[];
  done: Done[];
  before: store.RecordRow[];
  generation: bigint;
}

/** An apply of the batch whose operation failed, rolled back alone; `replay` writes its outcome again after BATCH_SAVEPOINT was rolled back to. */
interface RolledBackAlone {
  result: ZoneApplyResult;
  replay: (tx: store.Queryable) => Promise<bigint>;
}

interface Batch {
  /** When the holder began (after recovery): the batch takes no apply once it has run DNSPLANE_APPLY_COALESCE. */
  started: number;
  /** The zone's generation when the batch began: what a stored plan's base generation is compared with. */
  base?: bigint;
  /** Record ids the cache holds under the names the batch's applies touch, and those they created (a lost POST is looked for among the others). */
  knownIds?: Set<string>;
  /** When its first operation was sent (shutdown: the time an undo of everything sent would take). */
  sendingSince?: number;
  /** Operations sent by the applies that succeeded (the refresh publishes them). */
  ops: number;
  /** The names ("sub type") every apply that sent something touched: a later apply touching one waits for the next batch. */
  names: Set<string>;
  sent: Sent[];
  failed: RolledBackAlone[];
  outcomes: Map<Member, Outcome>;
  savepoint: boolean;
}

/**
 * The holder of a zone's lock applies its own apply, then — coalescing — takes over the applies waiting
 * behind it in this process's queue, in arrival order, one at a time, while the batch allows
 * (DNSPLANE_APPLY_BATCH operations in all, DNSPLANE_APPLY_COALESCE of running time, not shutting down);
 * then one refresh publishes every apply of the batch that succeeded. Each apply keeps its own meaning:
 * - it is planned under the lock against the cache as the applies before it left it (their records and
 *   ownership are written into the transaction before it is planned), so ownership and conflicts are
 *   judged after them; a stored plan is stale unless the zone's generation at the batch's start is its
 *   base and the plan recomputed now is the stored one (digest);
 * - an apply that touches a record set (name, type) an earlier apply of the batch sent something for,
 *   or that would take the batch over DNSPLANE_APPLY_BATCH operations, is not taken: it stays first in
 *   the queue and begins the next batch. The applies of a batch thus touch disjoint record sets, and
 *   each one's undo is independent of the others';
 * - its own journal row (intent before its first call, `done` or `failed` after), its own generation
 *   (one bump each, in order, all committed at once), its own result;
 * - an apply whose operation fails is undone alone (undo, re-read of its names, journal failed) and
 *   the batch goes on; when the refresh fails, every apply that succeeded is rolled back as a lone
 *   apply would be (newest first), after the transaction is taken back to before the batch.
 * Without `coalescing` (DNSPLANE_APPLY_COALESCE=0, dry run) the batch is the holder's apply alone.
 */
async function applyBatch(
  ctx: CoreContext,
  zone: string,
  tx: pg.PoolClient,
  fence: ZoneFence,
  first: Member,
  coalescing: { queue: ZoneQueueView<Member>; taken: Member[] } | undefined,
): Promise<Map<Member, Outcome>> {
  first.locked();
  try {
    await recoverInFlight(ctx, tx, zone, fence);
  } catch (e) {
    // OVH refused or failed a compensating call: not this apply's doing, and nothing of it was sent.
    if (!(e instanceof OvhError)) throw e;
    throw new ApplyFailedError(`apply to zone ${zone}: rolling back the applies left in flight failed (${messageOf(e)}); nothing was sent for this apply, and the zone's next lock holder tries the rollback again: retry`, zone, true, []);
  }
  const b: Batch = { started: performance.now(), ops: 0, names: new Set(), sent: [], failed: [], outcomes: new Map(), savepoint: false };
  try {
    let m = first;
    let prepared = await prepareMember(ctx, tx, zone, m, b);
    for (;;) {
      if (prepared.kind === 'error') b.outcomes.set(m, { error: prepared.error });
      else if (prepared.kind === 'answer') b.outcomes.set(m, { step: prepared.step });
      else await withOvhFlow({ tenant: m.tenant.name, zone }, () => sendMember(ctx, tx, zone, fence, m, prepared as Extract<Prepared, { kind: 'send' }>, b));
      const next = coalescing ? await takeNext(ctx, tx, zone, fence, coalescing, b, first.batch.max) : undefined;
      if (!next) break;
      [m, prepared] = next;
    }
    await publish(ctx, tx, zone, fence, b);
  } catch (e) {
    if (e instanceof BatchStopped) throw e;
    throw await stopBatch(ctx, zone, fence, b, e);
  }
  return b.outcomes;
}

/** The next waiting apply, planned, if the batch may take it (it is then taken off the queue). */
async function takeNext(
  ctx: CoreContext,
  tx: pg.PoolClient,
  zone: string,
  fence: ZoneFence,
  c: { queue: ZoneQueueView<Member>; taken: Member[] },
  b: Batch,
  max: number,
): Promise<[Member, Prepared] | undefined> {
  for (;;) {
    if (ctx.lifecycle?.stopping || fence.lost) return undefined;
    if (performance.now() - b.started >= (ctx.settings.applyCoalesceMs ?? 0)) return undefined;
    if (max > 0 && b.ops >= max) return undefined;
    const candidate = c.queue.next();
    if (!candidate) return undefined;
    const prepared = await prepareMember(ctx, tx, zone, candidate, b);
    if (prepared.kind === 'send') {
      const overlaps = prepared.names.some((n) => b.names.has(nameKey(n)));
      if (overlaps || (max > 0 && b.ops + prepared.plan.operations.length > max)) return undefined; // it begins the next batch
    }
    if (!c.queue.take(candidate)) continue; // it left the queue (its lock timeout) while it was planned
    candidate.locked();
    c.taken.push(candidate);
    return [candidate, prepared];
  }
}

/**
 * Plans one apply under the lock (against the transaction: what the batch's earlier applies did
 * included) and decides what needs no call: a stale stored plan, an all-or-nothing request with
 * conflicts, the change threshold, nothing to change, dry run.
 */
async function prepareMember(ctx: CoreContext, tx: pg.PoolClient, zone: string, m: Member, b: Batch): Promise<Prepared> {
  let full: ZonePlan;
  try {
    await store.savepoint(tx, PLAN_SAVEPOINT);
    full = (await fromCarried(ctx, tx, zone, m, b)) ?? (await computeZonePlan(ctx, tx, m.tenant, zone, m.routed));
    await store.releaseSavepoint(tx, PLAN_SAVEPOINT);
  } catch (e) {
    // This apply's error alone, unless the transaction itself is gone (then the batch stops).
    await store.rollbackToSavepoint(tx, PLAN_SAVEPOINT).then(
      () => store.releaseSavepoint(tx, PLAN_SAVEPOINT),
      () => {
        throw e;
      },
    );
    return { kind: 'error', error: e };
  }
  const batchBase = (b.base ??= full.baseGeneration);
  const plan = m.batch.index === 1 ? full : { ...full, conflicts: [] }; // conflicts are reported once
  const piece = firstBatch(zone, plan, m.batch.max);
  const more = piece.operations.length < plan.operations.length;
  const rest = more ? without(plan, piece) : plan;
  const tenant = m.tenant;
  const routed = m.routed;
  const stored = m.stored;
  const answer = (result: ZoneApplyResult): Prepared => ({ kind: 'answer', step: { result, more } });
  const base = { zone, generation: plan.baseGeneration, calls: [], changes: plan.changes, conflicts: plan.conflicts };
  if (stored) {
    // The generation at the batch's start: the applies before this one in the batch moved it, and
    // what they changed is judged by the digest (the plan recomputed after them must be the one stored).
    if (batchBase !== stored.baseGeneration) {
      return answer({ ...base, status: 'stale', error: new StalePlanError(`zone ${zone} changed since the plan was made (generation ${stored.baseGeneration} -> ${batchBase}); nothing was sent, make a new plan`) });
    }
    // Both digests in slices: a stored plan may hold thousands of changes (megabytes of canonical JSON).
    const slicer = new Slicer();
    if ((await planDigestSliced([{ ...plan, baseGeneration: stored.baseGeneration }], slicer)) !== (await planDigestSliced([stored], slicer))) {
      const why = plan.baseGeneration !== batchBase ? `an apply just before it (coalesced with it) changed what the plan touches in zone ${zone}` : `ownership in zone ${zone} changed since the plan was made`;
      return answer({ ...base, status: 'stale', error: new StalePlanError(`${why}; nothing was sent, make a new plan`) });
    }
  }
  if (routed.kind === 'desired' && routed.allOrNothing && plan.conflicts.length > 0) {
    const what = plan.conflicts.map((c) => `${c.endpoint.dnsName} ${c.endpoint.recordType}`).join(', ');
    return answer({ ...base, status: 'refused', error: new PermissionDeniedError('endpoints', `${plan.conflicts.length} record set(s) in zone ${zone} conflict (${what}); the request is all or nothing, so nothing was sent`) });
  }
  // The change threshold, judged on the plan recomputed under the lock (core/guard.ts).
  const overThreshold = thresholdRefusal(ctx, tenant, zone, plan.threshold);
  if (overThreshold) return answer({ ...base, status: 'refused', error: overThreshold });
  if (plan.operations.length === 0) return answer({ ...base, status: 'no_changes' });
  if (ctx.settings.dryRun) return answer(dryRunApply(ctx, tenant, plan));
  return { kind: 'send', plan: piece, more, rest, names: touchedNames(piece.operations) };
}

/** A plan without a batch of it (the batch's changes and operations are some of the plan's own objects). */
function without(plan: ZonePlan, piece: ZonePlan): ZonePlan {
  const changes = new Set(piece.changes);
  const operations = new Set(piece.operations);
  return { ...plan, changes: plan.changes.filter((c) => !changes.has(c)), operations: plan.operations.filter((op) => !operations.has(op)), conflicts: [] };
}

/**
 * The plan of a later batch from the rest its previous batch left (Carried), when this apply is the
 * first of its transaction and the zone is still at the generation that batch committed; undefined
 * otherwise (then the zone is planned again). The change threshold is judged again, on the rest,
 * with the owned sets and the limit as they are now.
 */
async function fromCarried(ctx: CoreContext, tx: pg.PoolClient, zone: string, m: Member, b: Batch): Promise<ZonePlan | undefined> {
  const carried = m.carried;
  if (!carried || b.sent.length > 0 || b.failed.length > 0) return undefined;
  const now = await store.getZone(tx, zone);
  if (now?.generation !== carried.generation) return undefined;
  const owned = await store.countOwnedSets(tx, zone, m.tenant.id);
  const threshold = assessThreshold(carried.plan.changes, owned, await maxChangePercent(ctx, tx, m.tenant), m.routed.force ?? false);
  ctx.log.debug({ zone, tenant: m.tenant.name, batch: m.batch.index, generation: String(now.generation) }, 'batch planned from the rest of the previous one (zone unchanged since)');
  return { ...carried.plan, baseGeneration: now.generation, threshold };
}

/**
 * One apply of the batch: its intent journalled (autocommitted, fenced), its operations sent in order;
 * then either recorded in the transaction (cache, ownership, generation + 1: what the next apply plans
 * on) to be published by the batch's refresh, or — an operation failed — rolled back alone.
 * Throws (the batch stops) when its lock is lost, or when its rollback cannot be finished.
 */
async function sendMember(ctx: CoreContext, tx: pg.PoolClient, zone: string, fence: ZoneFence, m: Member, prepared: Extract<Prepared, { kind: 'send' }>, b: Batch): Promise<void> {
  const { plan, names } = prepared;
  const ops = plan.operations;
  if (!b.savepoint) {
    await store.savepoint(tx, BATCH_SAVEPOINT);
    b.savepoint = true;
  }
  const intent: Intent = { operations: ops.map(describeOperation), ops, names, before: await store.listRecordsForNames(tx, zone, names), ...(m.batch.index > 1 || ops.length >= (ctx.settings.applyBatch ?? DEFAULT_APPLY_BATCH) ? { batch: m.batch.index } : {}) };
  // In flight before the first OVH call, on its own autocommitted connection: it survives a crash of
  // this process and of this transaction, and tells the next holder of the lock what to roll back.
  // Fenced: written only while this apply's session holds the zone lock.
  let journalId: string;
  try {
    journalId = await store.insertIntent(journalPool(ctx), { zone, tenantId: m.tenant.id, intent, fence: fence.journalFence() });
  } catch (e) {
    if (!(e instanceof ZoneLockLostError) && !isDatabaseUnavailable(e)) throw e;
    throw new ApplyFailedError(`apply to zone ${zone} could not start: ${messageOf(e)}; nothing was sent: retry`, zone, true, []);
  }
  fence.lease(journalId);
  // The ids a lost POST's look-up must not take for the new record: it looks among the records of
  // the POST's own name and type only (OvhApi.createRecord), all of which are among the names this
  // apply touches, read above (`before`) — not the whole zone, which may hold 20,000 records.
  const knownIds = (b.knownIds ??= new Set<string>());
  for (const r of intent.before) knownIds.add(r.id);
  const calls: CallRecord[] = [];
  const done: Done[] = [];
  let failure: Failure | undefined;
  const sendingSince = (b.sendingSince ??= performance.now());
  const stopping = () => ctx.lifecycle?.shouldStop(performance.now() - sendingSince) === true;

  for (const [index, op] of ops.entries()) {
    if (stopping()) {
      failure = { index, op, error: new ShuttingDownError(`dnsplane is shutting down`), notSent: true };
      break;
    }
    const passed = fence.writesAllowed;
    try {
      const created = await send(ctx, zone, op, knownIds);
      if (created) knownIds.add(created.id);
      done.push({ op, created });
      calls.push({ ...describeOperation(op), status: 200 });
    } catch (error) {
      // Refused by the fence before any attempt of it left: not sent at all.
      const notSent = isFenceRefusal(error) && fence.writesAllowed === passed;
      if (!notSent) calls.push({ ...describeOperation(op), status: statusOf(error), error: messageOf(error) });
      failure = { index, op, error, notSent };
      break;
    }
  }
  for (const n of names) b.names.add(nameKey(n));
  if (failure) {
    if (failure.error instanceof ZoneLockLostError || (fence.lost && failure.error === fence.lost)) {
      try {
        lockLost(ctx, zone, ops, journalId, calls, done, failure);
      } catch (e) {
        throw await stopBatch(ctx, zone, fence, b, e, m);
      }
    }
    let rolled: RolledBackAlone;
    try {
      rolled = await rollBack(ctx, tx, m.tenant, plan, fence, { journalId, done, calls, failure, knownIds, before: intent.before });
    } catch (e) {
      throw await stopBatch(ctx, zone, fence, b, e, m);
    }
    b.failed.push(rolled);
    b.outcomes.set(m, { step: { result: rolled.result, more: prepared.more } });
    return;
  }
  // Recorded now, in the transaction, so that the next apply of the batch plans on it; undone with
  // the batch (BATCH_SAVEPOINT) if the refresh fails.
  await updateCache(tx, zone, done);
  await updateOwnership(tx, zone, m.tenant, plan.changes);
  const generation = await store.bumpGeneration(tx, zone);
  await store.notifyZoneChanged(tx, zone, generation);
  b.sent.push({ member: m, plan, more: prepared.more, rest: prepared.rest, journalId, calls, done, before: intent.before, generation });
  b.ops += ops.length;
}

/**
 * One refresh publishes every apply of the batch that succeeded; their journal rows become done. When
 * the refresh fails (or is not sent: shutdown), the transaction goes back to before the batch, the
 * applies rolled back alone are written again, and every apply that had succeeded is rolled back as a
 * lone apply would be, newest first. The lock lost: every one of them stops, for the next holder.
 */
async function publish(ctx: CoreContext, tx: pg.PoolClient, zone: string, fence: ZoneFence, b: Batch): Promise<void> {
  if (b.sent.length === 0) return;
  const ids = b.sent.map((s) => s.journalId);
  const stopping = () => ctx.lifecycle?.shouldStop(performance.now() - (b.sendingSince ?? performance.now())) === true;
  let error: unknown;
  let notSent = false;
  let refreshCall: CallRecord | undefined;
  if (stopping()) {
    error = new ShuttingDownError('dnsplane is shutting down');
    notSent = true;
  }
  if (error === undefined) {
    // Recovery must know whether these applies may have published: a dead apply that got this far is
    // rolled back and the zone published again. Fenced: never written once the lock is gone.
    const noted = await store.noteJournalProgressFenced(journalPool(ctx), ids, fence.session, { stage: 'refresh' }).catch((e: unknown) => {
      if (isDatabaseUnavailable(e)) return false;
      throw e;
    });
    if (!noted) {
      error = fence.lost ??= new ZoneLockLostError(zone, 'the database no longer shows its session holding it');
      notSent = true;
    }
  }
  if (error === undefined) {
    const passed = fence.writesAllowed;
    try {
      await ctx.ovh.refresh(zone);
      refreshCall = { method: 'POST', path: refreshPath(zone), body: '', status: 204 };
    } catch (e) {
      notSent = isFenceRefusal(e) && fence.writesAllowed === passed;
      if (!notSent) refreshCall = { method: 'POST', path: refreshPath(zone), body: '', status: statusOf(e), error: messageOf(e) };
      error = e;
    }
  }
  const callsOf = (s: Sent) => (refreshCall ? [...s.calls, refreshCall] : [...s.calls]);

  if (error === undefined) {
    ctx.metrics?.applyBatchPublished(zone, b.sent.length);
    const coalesced = b.sent.length > 1 ? { coalesced: { applies: b.sent.length, first: ids[0]! } } : {};
    try {
      for (const s of b.sent) {
        const calls = callsOf(s);
        fence.unlease(s.journalId);
        await store.finishJournal(tx, s.journalId, 'done', { calls, ...coalesced });
        ctx.log.info({ zone, tenant: s.member.tenant.name, operations: s.plan.operations.length, generation: String(s.generation), ...(b.sent.length > 1 ? { coalesced: b.sent.length } : {}), ...(s.member.batch.index > 1 || s.plan.operations.length >= (ctx.settings.applyBatch ?? DEFAULT_APPLY_BATCH) ? { batch: s.member.batch.index } : {}) }, 'applied');
        b.outcomes.set(s.member, { step: { result: { zone, status: 'applied', generation: s.generation, calls, changes: s.plan.changes, conflicts: s.plan.conflicts, journalId: s.journalId }, more: s.more, ...(s.more ? { rest: s.rest } : {}) } });
      }
    } catch (e) {
      if (!isDatabaseUnavailable(e)) throw e;
      // Published, but not recorded: the journal rows stay in flight at stage "refresh", and the
      // zone's next lock holder rolls the applies back and publishes again.
      scheduleRecovery(ctx, zone);
      for (const s of b.sent) {
        b.outcomes.set(s.member, {
          error: new ApplyFailedError(
            `apply to zone ${zone}: the ${s.plan.operations.length} operation(s) were sent and published, but the database became unavailable before the apply was recorded (${messageOf(e)}); the zone's next lock holder rolls them back and publishes the zone again (journal ${s.journalId}): retry`,
            zone,
            true,
            callsOf(s),
          ),
        });
      }
      throw new BatchStopped(b.outcomes, e);
    }
    return;
  }

  if (error instanceof ZoneLockLostError || (fence.lost && error === fence.lost)) {
    for (const s of b.sent) {
      try {
        lockLost(ctx, zone, s.plan.operations, s.journalId, callsOf(s), s.done, { index: s.plan.operations.length, error, notSent });
      } catch (e) {
        b.outcomes.set(s.member, { error: e });
      }
    }
    throw new BatchStopped(b.outcomes, error);
  }

  // Back to before the batch, then each apply's own outcome: the ones rolled back alone as they were
  // recorded, the others rolled back now, newest first (each undoes only its own record sets). One
  // whose undo fails answers that error and leaves its journal row in flight for the next holder, as
  // a lone apply would; the others' rollbacks are committed.
  await store.rollbackToSavepoint(tx, BATCH_SAVEPOINT);
  for (const f of b.failed) f.result.generation = await f.replay(tx);
  for (const s of [...b.sent].reverse()) {
    try {
      const rolled = await rollBack(ctx, tx, s.member.tenant, s.plan, fence, {
        journalId: s.journalId,
        done: s.done,
        calls: callsOf(s),
        failure: { index: s.plan.operations.length, error, notSent },
        knownIds: b.knownIds!,
        before: s.before,
      });
      b.outcomes.set(s.member, { step: { result: rolled.result, more: s.more } });
    } catch (e) {
      b.outcomes.set(s.member, { error: e });
    }
  }
}

/**
 * The batch stops before it could be published (an apply's lock lost, a rollback left unfinished, the
 * database gone): nothing of it is committed. The applies that had sent their operations answer that
 * those were not published and that the zone's next lock holder rolls them back (their journal rows
 * stay in flight, leases released when the lock is still ours); `culprit` answers `cause`.
 */
async function stopBatch(ctx: CoreContext, zone: string, fence: ZoneFence, b: Batch, cause: unknown, culprit?: Member): Promise<BatchStopped> {
  for (const s of b.sent) {
    if (b.outcomes.has(s.member)) continue;
    b.outcomes.set(s.member, {
      error: new ApplyFailedError(
        `apply to zone ${zone}: its ${s.plan.operations.length} operation(s) were sent, but the batch of applies it was coalesced into stopped before its refresh (${messageOf(cause)}); nothing of it was published, and the zone's next lock holder rolls them back (journal ${s.journalId}): retry`,
        zone,
        true,
        s.calls,
      ),
    });
  }
  if (culprit) b.outcomes.set(culprit, { error: cause });
  await releaseLeases(ctx, fence, b.sent.map((s) => s.journalId));
  return new BatchStopped(b.outcomes, cause);
}

/** This holder stopped sending for these rows: their leases end now (fenced: only while the lock is ours), the next holder need not wait. */
async function releaseLeases(ctx: CoreContext, fence: ZoneFence, ids: string[]): Promise<void> {
  for (const id of ids) fence.unlease(id);
  if (ids.length === 0 || fence.lost) return;
  await store.renewJournalLease(journalPool(ctx), ids, fence.session, 0).catch(() => 0);
}

/** The fence (or the shutdown deadline) refused a write: the error is ours, not OVH's. */
function isFenceRefusal(e: unknown): boolean {
  return e instanceof ZoneLockLostError || e instanceof ShuttingDownError;
}

interface Failure {
  /** Index of the operation that failed; ops.length for the refresh. */
  index: number;
  op?: OvhOperation;
  error: unknown;
  /** The operation (or the refresh) was not sent at all: stopped by shutdown or refused by the fence. */
  notSent?: boolean;
}

/** `DELETE …/record/1 (a A 192.0.2.1), PUT …` — what was sent, for people. */
function listOps(ops: readonly OvhOperation[]): string {
  const shown = ops.slice(0, 10).map(opLabel).join(', ');
  return ops.length > 10 ? `${shown} and ${ops.length - 10} more` : shown;
}

/**
 * The zone lock was lost while the apply ran: nothing more may be sent (no undo, no re-read, no
 * refresh), and nothing can be written through this transaction. The journal row stays in flight
 * with its lease: the zone's next lock holder waits until none of this apply's calls can still land,
 * then rolls back what it did (recoverInFlight). This process schedules that itself (scheduleRecovery)
 * so that a lone replica heals without waiting for the next apply or drift check.
 */
function lockLost(ctx: CoreContext, zone: string, ops: readonly OvhOperation[], journalId: string, calls: CallRecord[], done: Done[], failure: Failure): never {
  scheduleRecovery(ctx, zone);
  const sentOps = done.map((d) => d.op);
  const inDoubt = failure.notSent ? undefined : failure.op ?? (failure.index === ops.length ? undefined : ops[failure.index]);
  const refreshInDoubt = !failure.notSent && failure.index === ops.length;
  const sent =
    sentOps.length === 0 && !inDoubt
      ? 'before any operation was sent'
      : `after sending ${sentOps.length} of ${ops.length} operation(s)${sentOps.length ? ` (${listOps(sentOps)})` : ''}${inDoubt ? `; operation ${failure.index + 1} (${opLabel(inDoubt)}) was in flight and may have been done` : ''}`;
  const published = refreshInDoubt
    ? 'its refresh was in flight and may have published: the zone\'s next lock holder rolls the apply back and publishes the zone again'
    : `the refresh was not sent, nothing was published; the zone's next lock holder rolls back what was sent`;
  ctx.log.warn({ zone, journal: journalId, sent: sentOps.length, operations: ops.length, err: messageOf(failure.error) }, 'apply lost its zone lock and stopped');
  throw new ApplyFailedError(`apply to zone ${zone} stopped: ${messageOf(failure.error)}, ${sent}; ${published} (journal ${journalId}): retry`, zone, true, calls);
}

/**
 * An operation (or the refresh) failed: undo, newest first, what this apply did; publish nothing;
 * re-read the names of the operations that were sent (never the whole zone) and undo whatever of the
 * failed operation OVH shows done; generation + 1; journal failed with per-operation detail.
 *
 * When an undo operation fails too, or the re-read does, the rollback is left to the zone's next lock
 * holder: the journal row stays in_flight and this transaction is rolled back (ApplyFailedError,
 * transient). When the refresh failed in a way that may have published (5xx, no answer), the draft
 * and the cache are rolled back here, and the row stays in_flight at stage "refresh": the zone's next
 * lock holder (an apply, the drift check) publishes the rolled-back draft (recoverInFlight).
 * The undo stops as soon as the fence refuses a write (the lock lost, the shutdown deadline passed):
 * the rest is the next holder's.
 */
async function rollBack(
  ctx: CoreContext,
  tx: store.Queryable,
  tenant: Tenant,
  plan: ZonePlan,
  fence: ZoneFence,
  s: { journalId: string; done: Done[]; calls: CallRecord[]; failure: Failure; knownIds: Set<string>; before: store.RecordRow[] },
): Promise<RolledBackAlone> {
  const { zone, operations: ops } = plan;
  const { failure, calls, done, knownIds } = s;
  const undoOutcome = new Map<number, CallRecord>();
  let refused: unknown;
  for (let i = done.length - 1; i >= 0; i--) {
    const u = inverse(zone, done[i]!);
    if (refused) {
      undoOutcome.set(i, { ...describeOperation(u), status: 0, error: `not sent: ${messageOf(refused)}` });
      continue;
    }
    const passed = fence.writesAllowed;
    try {
      const created = await send(ctx, zone, u, knownIds);
      if (created) knownIds.add(created.id);
      undoOutcome.set(i, { ...describeOperation(u), status: 200 });
    } catch (error) {
      if (isFenceRefusal(error)) refused = error;
      const notSent = isFenceRefusal(error) && fence.writesAllowed === passed;
      undoOutcome.set(i, { ...describeOperation(u), status: statusOf(error), error: notSent ? `not sent: ${messageOf(error)}` : messageOf(error) });
      ctx.log.error({ zone, op: describeOperation(u), err: messageOf(error) }, 'undo of a failed apply failed');
    }
  }
  calls.push(...[...undoOutcome.entries()].sort(([a], [b]) => b - a).map(([, c]) => c).filter((c) => !c.error?.startsWith('not sent: ')));
  const undoFailed = [...undoOutcome.values()].filter((c) => c.error !== undefined).length;

  const failedWhat = failure.op ? `operation ${failure.index + 1} of ${ops.length}, ${opLabel(failure.op)}` : `the refresh after ${ops.length} operation(s), POST ${refreshPath(zone)}`;
  const head =
    failure.error instanceof ShuttingDownError && failure.notSent
      ? `apply to zone ${zone} stopped before ${failedWhat}: dnsplane is shutting down`
      : `apply to zone ${zone} failed at ${failedWhat}: ${messageOf(failure.error)}`;
  const transient = !(failure.error instanceof OvhError) || failure.error.transient;
  // Operations sent: up to the failed one, unless that one was not sent at all.
  const lastSent = failure.notSent ? failure.index - 1 : failure.index;
  const detail = {
    error: messageOf(failure.error),
    failedOperation: failure.op ? { index: failure.index + 1, ...describeOperation(failure.op), ...(failure.notSent ? { notSent: true } : {}) } : { index: failure.index + 1, method: 'POST', path: refreshPath(zone), body: '', ...(failure.notSent ? { notSent: true } : {}) },
    operations: ops.map((op, i) => {
      const sent = calls[i];
      const undo = undoOutcome.get(i);
      const outcome = i > lastSent ? 'not_sent' : i === failure.index ? 'failed' : undo?.error === undefined ? 'undone' : 'undo_failed';
      return { index: i + 1, ...describeOperation(op), outcome, ...(sent && i <= lastSent ? { status: sent.status } : {}), ...(i === failure.index && !failure.notSent ? { error: messageOf(failure.error) } : {}), ...(undo?.error ? { undoError: undo.error } : {}) };
    }),
    calls,
  };

  if (undoFailed > 0) {
    fence.unlease(s.journalId);
    // The holder stops here: its lease ends (if it still holds the lock), the next holder need not wait.
    await store.noteJournalProgressFenced(journalPool(ctx), s.journalId, fence.session, { stage: 'undo_failed', ...detail }, { release: true }).catch(() => false);
    if (fence.lost) scheduleRecovery(ctx, zone);
    const why = refused ? ` (${messageOf(refused)})` : '';
    throw new ApplyFailedError(
      `${head}; undoing the ${done.length} operation(s) that had succeeded failed for ${undoFailed} of them${why}; nothing was published, and the zone's next apply or drift check finishes the rollback (journal ${s.journalId} stays in flight)`,
      zone,
      true,
      calls,
    );
  }
  // Re-read the names of the operations that were sent, and undo what OVH shows of the failed one (its
  // answer may have been lost after it was done: a creation that timed out, say).
  const sent = ops.slice(0, lastSent + 1);
  const sentNames = touchedNames(sent);
  try {
    calls.push(...(await reconcileNames(ctx, tx, zone, sent, s.before, sentNames, knownIds)));
  } catch (error) {
    fence.unlease(s.journalId);
    await store.noteJournalProgressFenced(journalPool(ctx), s.journalId, fence.session, { stage: 'reread_failed', ...detail }, { release: true }).catch(() => false);
    if (fence.lost) scheduleRecovery(ctx, zone);
    throw new ApplyFailedError(
      `${head}; the ${done.length} operation(s) that had succeeded were undone and nothing was published, but re-reading the touched names failed (${messageOf(error)}); the zone's next apply or drift check re-reads them`,
      zone,
      true,
      calls,
    );
  }
  const mayHavePublished = !failure.op && !failure.notSent && !(failure.error instanceof OvhError && (failure.error.kind === 'rate_limited' || !failure.error.transient));
  // What this rollback wrote into the transaction, to write again if a coalesced batch's refresh
  // fails after it (the transaction then goes back to before the batch).
  const reread = await store.listRecordsForNames(tx, zone, sentNames);
  const record = async (q: store.Queryable): Promise<bigint> => {
    const generation = await store.bumpGeneration(q, zone);
    await store.notifyZoneChanged(q, zone, generation);
    if (!mayHavePublished) await store.finishJournal(q, s.journalId, 'failed', { ...detail, reread: sentNames });
    return generation;
  };
  fence.unlease(s.journalId);
  if (mayHavePublished) {
    await store.noteJournalProgressFenced(journalPool(ctx), s.journalId, fence.session, { stage: 'refresh', ...detail, reread: sentNames }, { release: true });
  }
  const generation = await record(tx);
  ctx.log.warn({ zone, tenant: tenant.name, failed: failedWhat, err: messageOf(failure.error) }, 'apply failed and was rolled back');
  return {
    result: {
      zone,
      status: 'failed',
      generation,
      calls,
      changes: plan.changes,
      conflicts: plan.conflicts,
      error: new ApplyFailedError(`${head}; the ${done.length} operation(s) that had succeeded were undone and nothing was published`, zone, transient, calls),
    },
    replay: async (q) => {
      await store.replaceRecordsForNames(q, zone, sentNames, reread);
      return record(q);
    },
  };
}

/** `POST /domain/zone/z/record (www A 192.0.2.1)`: the call and the record it is about. */
function opLabel(op: OvhOperation): string {
  const r = op.method === 'POST' ? op.body : op.method === 'PUT' ? { ...op.before, target: op.body.target } : op.before;
  return `${op.method} ${op.path} (${r.subDomain === '' ? '@' : r.subDomain} ${r.fieldType} ${r.target})`;
}

/** The operation that undoes one that succeeded. */
function inverse(zone: string, d: Done): OvhOperation {
  const { op } = d;
  switch (op.method) {
    case 'POST': {
      const r = d.created!;
      return { method: 'DELETE', path: recordPath(zone, r.id), id: r.id, before: r };
    }
    case 'PUT':
      return { method: 'PUT', path: op.path, id: op.id, body: { target: sendable(op.before.fieldType, op.before.target), ttl: op.before.ttl }, before: op.before };
    case 'DELETE': {
      const b = op.before;
      const body: OvhRecordBody = { fieldType: b.fieldType, subDomain: b.subDomain, target: sendable(b.fieldType, b.target), ttl: b.ttl };
      return { method: 'POST', path: recordPath(zone), body };
    }
  }
}

async function updateCache(tx: store.Queryable, zone: string, done: Done[]): Promise<void> {
  const upserts: store.RecordRow[] = [];
  const deletes: string[] = [];
  for (const { op, created } of done) {
    if (op.method === 'POST') upserts.push(toRow(created!));
    else if (op.method === 'PUT') upserts.push(toRow({ ...op.before, target: answered(op.before.fieldType, op.body.target), ttl: op.body.ttl }));
    else deletes.push(op.id);
  }
  if (deletes.length) await store.deleteRecords(tx, zone, deletes);
  if (upserts.length) await store.upsertRecords(tx, zone, upserts);
}

/** The ownership rules (exclusive and shared sets) live in ownership.ts. */
async function updateOwnership(tx: store.Queryable, zone: string, tenant: Tenant, changes: Change[]): Promise<void> {
  await recordOwnership(tx, zone, tenant, changes);
}
