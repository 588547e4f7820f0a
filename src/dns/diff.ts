/**
 * The diff: (current record sets, what a tenant asks for, who owns what) -> changes and conflicts.
 * Pure and deterministic. All endpoints are normalized (normalizeEndpoint); current sets come from
 * the zones in scope.
 *
 * Decision table for one record set the tenant wants (`desired`, a ChangeSet create, or the
 * updateNew of an update pair), against the CURRENT set with the same name and type:
 *
 * | current             | owner  | result                                                          |
 * |---------------------|--------|-----------------------------------------------------------------|
 * | absent              | none   | create                                                          |
 * | absent              | self   | create (an owned but empty set)                                 |
 * | absent              | other  | conflict: owned by that tenant                                  |
 * | equal (targets+TTL) | any    | nothing                                                         |
 * | different           | self   | update; with create-only: conflict "exists; policy create-only" |
 * | different           | other  | conflict: owned by that tenant                                  |
 * | different           | none   | conflict: exists in OVH without an owner; an admin must assign it |
 *
 * Deletes: a set is deleted only when it exists and self owns it. For a desired state that means
 * policy sync, absent from desired and in scope; for a ChangeSet, an explicit delete (under
 * upsert-only or create-only an explicit delete of an own set is a conflict naming the policy; a
 * delete of a set owned by someone else, or by no one, is a conflict; of an absent set, nothing).
 *
 * Finally, a create that would put a CNAME beside another type at one name (the other set being one
 * that stays) is turned into a conflict: OVH would refuse it, and refusing it here keeps the
 * tenant's other changes going. Conflicts never abort the rest of the diff.
 *
 * Shared record sets (owner view `shared`; types SHAREABLE_TYPES, never CNAME): each tenant owns its
 * own targets, OVH holds the union. For the tenant the diff works on its SLICE of the set — the
 * targets it owns that exist now, with the TTL of its own records — and never on anyone else's:
 *
 * - write: a desired target another tenant owns, or one that exists in the set without an owner, is
 *   a conflict (per owner, naming the targets); the other desired targets become the tenant's slice:
 *   no slice yet -> create (even under create-only: it adds the tenant's own records), a different
 *   slice -> update (create-only: conflict), equal -> nothing. No target left -> nothing.
 * - delete (explicit, or implied by sync): removes the tenant's slice only; targets of others named in
 *   an explicit delete are conflicts. The set disappears with the last target.
 * - A change of a shared set carries the label SHARED_LABEL=true on its before/after, which hold the
 *   slice (not the union); core builds the OVH operations over the tenant's own records only.
 * - A tenant creates a shared set by sending SHARED_LABEL=true on a set that is absent and owned by
 *   nobody; on any other set the label is dropped (an existing set is made shared by an admin).
 *
 * Output: changes sorted by name then type; conflicts by name, type, then action.
 */
import { compareEndpoints, endpointKey, sameRecords, sortedUnique, validateEndpointSet } from './endpoint.js';
import { InvalidInputError } from './errors.js';
import { drain, ITEMS_PER_STEP, sortSteps, type Steps } from './steps.js';
import type { Change, ChangeAction, ChangeSet, Conflict, Endpoint, Policy, RecordSetKey, RecordType } from './types.js';

/**
 * The label that marks a record set shared: sent by a tenant (value "true") to create a shared set,
 * and carried by the before/after of every change of a shared set.
 */
export const SHARED_LABEL = 'dnsplane/shared';
/** The record types a set may be shared in (several owners' targets under one name make sense). */
export const SHAREABLE_TYPES: readonly RecordType[] = ['A', 'AAAA', 'TXT', 'MX', 'SRV'];

/** A shared set as seen by one tenant. Targets are canonical. */
export interface SharedOwnerView {
  kind: 'shared';
  /** The targets this tenant owns in the set (whether or not OVH holds them now). */
  mine: readonly string[];
  /** The TTL of this tenant's records in OVH now (their minimum); absent when it holds none. */
  ttl?: number;
  /** The targets other tenants own -> the owner's name. */
  others: ReadonlyMap<string, string>;
}

/** Who owns a record set, as seen by the tenant the diff is computed for. */
export type OwnerView = { kind: 'self' } | { kind: 'none' } | { kind: 'other'; owner: string } | SharedOwnerView;
export type OwnerOf = (key: RecordSetKey) => OwnerView;

/** Whether an endpoint carries SHARED_LABEL=true. */
export function isSharedEndpoint(e: Pick<Endpoint, 'labels'> | undefined): boolean {
  return e?.labels?.[SHARED_LABEL] === 'true';
}

/** Whether a change is a change of the tenant's slice of a shared set (see the module comment). */
export function isSharedChange(c: Pick<Change, 'before' | 'after'>): boolean {
  return isSharedEndpoint(c.after ?? c.before);
}

function withSharedLabel(e: Endpoint): Endpoint {
  return { ...e, labels: { ...e.labels, [SHARED_LABEL]: 'true' } };
}

function withoutSharedLabel(e: Endpoint): Endpoint {
  if (e.labels === undefined || !(SHARED_LABEL in e.labels)) return e;
  const { [SHARED_LABEL]: _dropped, ...labels } = e.labels;
  const out: Endpoint = { ...e };
  if (Object.keys(labels).length > 0) out.labels = labels;
  else delete out.labels;
  return out;
}

function listTargets(targets: readonly string[]): string {
  return targets.length === 1 ? `target ${targets[0]}` : `targets ${targets.join(', ')}`;
}

export interface DiffInput {
  /** Normalized record sets that exist now, in the zones in scope (at most one per name and type). */
  current: readonly Endpoint[];
  /** The desired state, normalized; validated here with validateEndpointSet unless `validated`. */
  desired: readonly Endpoint[];
  /** The caller validated `desired` already (core/plan.ts routeInput: the whole request, with its field names). */
  validated?: boolean;
  policy: Policy;
  ownerOf: OwnerOf;
  /** With 'sync': only current sets in scope (by name, and type) may be deleted. Default: all of them. */
  scope?: (dnsName: string, recordType: RecordType) => boolean;
}

export interface DiffResult {
  changes: Change[];
  conflicts: Conflict[];
}

export interface ChangeSetOptions {
  /** Default 'sync' (external-dns applies its own policy before sending a change set). */
  policy?: Policy;
}

export const REASON_UNOWNED = 'exists in OVH without an owner; an admin must assign it';
export const REASON_CREATE_ONLY = 'exists; policy create-only';

function ownedBy(e: Endpoint, owner: string): string {
  return `${e.dnsName} ${e.recordType} is owned by tenant ${JSON.stringify(owner)}`;
}

function* indexCurrent(current: readonly Endpoint[]): Steps<Map<RecordSetKey, Endpoint>> {
  const map = new Map<RecordSetKey, Endpoint>();
  let n = 0;
  for (const e of current) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    const key = endpointKey(e);
    if (map.has(key)) throw new Error(`current state lists record set ${key} twice`);
    map.set(key, e);
  }
  return map;
}

/** Accumulates the outcome; shared by both diffs. */
class Outcome {
  readonly changes: Change[] = [];
  readonly conflicts: Conflict[] = [];

  constructor(
    private readonly current: Map<RecordSetKey, Endpoint>,
    private readonly ownerOf: OwnerOf,
  ) {}

  conflict(action: ChangeAction, endpoint: Endpoint, owner: string, reason: string): void {
    this.conflicts.push({ action, endpoint, owner, reason });
  }

  /** The tenant wants `after` to be the record set (its slice of it, for a shared set). */
  write(wanted: Endpoint, policy: Policy): void {
    const key = endpointKey(wanted);
    const before = this.current.get(key);
    const owner = this.ownerOf(key);
    if (owner.kind === 'shared') {
      this.writeShared(wanted, owner, policy);
      return;
    }
    // The shared flag creates a shared set only where nothing exists and nobody owns the name.
    const createsShared = before === undefined && owner.kind === 'none' && isSharedEndpoint(wanted) && SHAREABLE_TYPES.includes(wanted.recordType);
    const after = createsShared ? wanted : withoutSharedLabel(wanted);
    if (before === undefined) {
      if (owner.kind === 'other') this.conflict('create', after, owner.owner, `${ownedBy(after, owner.owner)} (the set is empty)`);
      else this.changes.push({ action: 'create', after });
      return;
    }
    if (sameRecords(before, after)) return;
    if (owner.kind === 'other') this.conflict('update', after, owner.owner, ownedBy(after, owner.owner));
    else if (owner.kind === 'none') this.conflict('update', after, '', REASON_UNOWNED);
    else if (policy === 'create-only') this.conflict('update', after, '', REASON_CREATE_ONLY);
    else this.changes.push({ action: 'update', before, after });
  }

  /** The tenant's slice of a shared set as it is now, or undefined when it holds no target of it. */
  private slice(key: RecordSetKey, view: SharedOwnerView): Endpoint | undefined {
    const current = this.current.get(key);
    if (current === undefined) return undefined;
    const mine = new Set(view.mine);
    const targets = current.targets.filter((t) => mine.has(t));
    if (targets.length === 0) return undefined;
    return withSharedLabel({ dnsName: current.dnsName, recordType: current.recordType, targets, ttl: view.ttl ?? current.ttl });
  }

  /** Targets of the current set owned by others (by owner) or by nobody (owner ''), among `targets`. */
  private foreignTargets(key: RecordSetKey, view: SharedOwnerView, targets: readonly string[]): Map<string, string[]> {
    const present = new Set(this.current.get(key)?.targets ?? []);
    const mine = new Set(view.mine);
    const out = new Map<string, string[]>();
    for (const t of targets) {
      const owner = view.others.get(t) ?? (present.has(t) && !mine.has(t) ? '' : undefined);
      if (owner === undefined) continue;
      out.set(owner, [...(out.get(owner) ?? []), t]);
    }
    return out;
  }

  private foreignConflicts(action: ChangeAction, e: Endpoint, foreign: Map<string, string[]>): void {
    for (const [owner, targets] of [...foreign].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const what = `${listTargets(targets)} of shared set ${e.dnsName} ${e.recordType}`;
      const reason =
        owner === ''
          ? `${what} ${targets.length === 1 ? 'exists' : 'exist'} in OVH without an owner; an admin must assign ${targets.length === 1 ? 'it' : 'them'}`
          : `${what} ${targets.length === 1 ? 'is' : 'are'} owned by tenant ${JSON.stringify(owner)}`;
      this.conflict(action, withSharedLabel({ ...e, targets }), owner, reason);
    }
  }

  private writeShared(wanted: Endpoint, view: SharedOwnerView, policy: Policy): void {
    const key = endpointKey(wanted);
    const before = this.slice(key, view);
    const foreign = this.foreignTargets(key, view, wanted.targets);
    this.foreignConflicts(before === undefined ? 'create' : 'update', wanted, foreign);
    const taken = new Set([...foreign.values()].flat());
    const targets = wanted.targets.filter((t) => !taken.has(t));
    if (targets.length === 0) return;
    const after = withSharedLabel({ ...wanted, targets });
    if (before === undefined) this.changes.push({ action: 'create', after });
    else if (sameRecords(before, after)) return;
    else if (policy === 'create-only') this.conflict('update', after, '', REASON_CREATE_ONLY);
    else this.changes.push({ action: 'update', before, after });
  }

  private removeShared(asked: Endpoint, view: SharedOwnerView, policy: Policy, explicit: boolean): void {
    const key = endpointKey(asked);
    if (explicit) this.foreignConflicts('delete', asked, this.foreignTargets(key, view, asked.targets));
    const before = this.slice(key, view);
    if (before === undefined) return;
    if (policy !== 'sync') this.conflict('delete', before, '', `policy ${policy} never deletes`);
    else this.changes.push({ action: 'delete', before });
  }

  /** The tenant wants the record set with this key gone (`asked` is what it named; `explicit`: it named it). */
  remove(asked: Endpoint, policy: Policy, explicit = true): void {
    const key = endpointKey(asked);
    const owner = this.ownerOf(key);
    if (owner.kind === 'shared') {
      this.removeShared(asked, owner, policy, explicit);
      return;
    }
    const before = this.current.get(key);
    if (before === undefined) return;
    if (owner.kind === 'other') this.conflict('delete', before, owner.owner, ownedBy(before, owner.owner));
    else if (owner.kind === 'none') this.conflict('delete', before, '', REASON_UNOWNED);
    else if (policy !== 'sync') this.conflict('delete', before, '', `policy ${policy} never deletes`);
    else this.changes.push({ action: 'delete', before });
  }

  /** Turns creates that would make a CNAME coexist with another type into conflicts, then sorts. */
  *finish(): Steps<DiffResult> {
    let n = 0;
    const typesAt = new Map<string, Set<RecordType>>();
    const add = (e: Endpoint): void => {
      const set = typesAt.get(e.dnsName) ?? new Set<RecordType>();
      set.add(e.recordType);
      typesAt.set(e.dnsName, set);
    };
    // A set goes away with a delete, unless the delete is of one tenant's slice and other targets stay.
    const emptied = (c: Change): boolean => {
      if (!isSharedChange(c)) return true;
      const gone = new Set((c.before as Endpoint).targets);
      return (this.current.get(endpointKey(c.before as Endpoint))?.targets ?? []).every((t) => gone.has(t));
    };
    const deleted = new Set(this.changes.filter((c) => c.action === 'delete' && emptied(c)).map((c) => endpointKey(c.before as Endpoint)));
    for (const [key, e] of this.current) {
      if (++n % ITEMS_PER_STEP === 0) yield;
      if (!deleted.has(key)) add(e);
    }
    for (const c of this.changes) if (c.action === 'create') add(c.after as Endpoint);

    const kept: Change[] = [];
    for (const c of this.changes) {
      if (++n % ITEMS_PER_STEP === 0) yield;
      if (c.action !== 'create') {
        kept.push(c);
        continue;
      }
      const after = c.after as Endpoint;
      const others = [...(typesAt.get(after.dnsName) ?? [])].filter((t) => t !== after.recordType).sort();
      const clash = after.recordType === 'CNAME' ? others : others.filter((t) => t === 'CNAME');
      if (clash.length === 0) {
        kept.push(c);
        continue;
      }
      // Name the owner of the set in the way when it is an existing set owned by another tenant.
      const blocking = this.current.get(endpointKey({ dnsName: after.dnsName, recordType: clash[0] as RecordType }));
      const view = blocking === undefined ? undefined : this.ownerOf(endpointKey(blocking));
      const owner = view?.kind === 'other' ? view.owner : '';
      const reason =
        after.recordType === 'CNAME'
          ? `a CNAME cannot coexist with other record types; ${after.dnsName} keeps ${clash.join(', ')}`
          : `${after.dnsName} keeps a CNAME; no other record type can be added beside it`;
      this.conflict('create', after, owner, reason);
    }
    const keyOf = (c: Change): Endpoint => (c.after ?? c.before) as Endpoint;
    yield* sortSteps(kept, (a, b) => compareEndpoints(keyOf(a), keyOf(b)));
    yield* sortSteps(this.conflicts, (a, b) => compareEndpoints(a.endpoint, b.endpoint) || (a.action < b.action ? -1 : a.action > b.action ? 1 : 0));
    return { changes: kept, conflicts: this.conflicts };
  }
}

/**
 * The changes that make the tenant's records equal `desired`, under `policy`. Throws
 * InvalidInputError (field `desired[i]`) when desired repeats a name+type or mixes a CNAME with
 * another type at one name.
 */
export function diffDesired(input: DiffInput): DiffResult {
  return drain(diffDesiredSteps(input));
}

/** diffDesired with pause points (dns/steps.ts): linear in the zone and the request, in slices. */
export function* diffDesiredSteps(input: DiffInput): Steps<DiffResult> {
  if (!input.validated) validateEndpointSet(input.desired, 'desired');
  const current = yield* indexCurrent(input.current);
  const outcome = new Outcome(current, input.ownerOf);
  const wanted = new Set<RecordSetKey>();
  let n = 0;
  for (const d of input.desired) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    wanted.add(endpointKey(d));
    outcome.write(d, input.policy);
  }
  if (input.policy === 'sync') {
    for (const [key, e] of current) {
      if (++n % ITEMS_PER_STEP === 0) yield;
      if (wanted.has(key)) continue;
      if (input.scope !== undefined && !input.scope(e.dnsName, e.recordType)) continue;
      // Only own sets (or the own slice of a shared set): deleting what is not ours is never implied by
      // a desired state, so no conflict.
      const owner = input.ownerOf(key);
      if (owner.kind === 'self' || (owner.kind === 'shared' && owner.mine.length > 0)) outcome.remove(e, 'sync', false);
    }
  }
  return yield* outcome.finish();
}

/**
 * The changes for an external-dns change set. updateOld[i]/updateNew[i] are pairs: same length, same
 * name and type, else InvalidInputError. An update is computed against the CURRENT set (updateOld is
 * only checked for its name and type): absent now -> treated as a create of updateNew. A record set
 * may appear only once in a change set (a pair counts once), else InvalidInputError.
 */
export function diffChangeSet(current: readonly Endpoint[], changes: ChangeSet, ownerOf: OwnerOf, opts: ChangeSetOptions = {}): DiffResult {
  return drain(diffChangeSetSteps(current, changes, ownerOf, opts));
}

/** diffChangeSet with pause points (dns/steps.ts). */
export function* diffChangeSetSteps(current: readonly Endpoint[], changes: ChangeSet, ownerOf: OwnerOf, opts: ChangeSetOptions = {}): Steps<DiffResult> {
  const policy = opts.policy ?? 'sync';
  if (changes.updateOld.length !== changes.updateNew.length) {
    throw new InvalidInputError(
      'changes.updateNew',
      `updateOld and updateNew must have the same length (got ${changes.updateOld.length} and ${changes.updateNew.length})`,
    );
  }
  const seen = new Map<RecordSetKey, string>();
  const claim = (e: Endpoint, field: string): void => {
    const key = endpointKey(e);
    const other = seen.get(key);
    if (other !== undefined) {
      throw new InvalidInputError(field, `record set ${key} appears more than once in the change set (also ${other})`);
    }
    seen.set(key, field);
  };
  for (const [i, e] of changes.create.entries()) claim(e, `changes.create[${i}]`);
  changes.updateNew.forEach((e, i) => {
    const old = changes.updateOld[i] as Endpoint;
    if (endpointKey(old) !== endpointKey(e)) {
      throw new InvalidInputError(
        `changes.updateNew[${i}]`,
        `must have the same name and type as updateOld[${i}] (${endpointKey(old)}), got ${endpointKey(e)}`,
      );
    }
    claim(e, `changes.updateNew[${i}]`);
  });
  for (const [i, e] of changes.delete.entries()) claim(e, `changes.delete[${i}]`);

  const outcome = new Outcome(yield* indexCurrent(current), ownerOf);
  let n = 0;
  for (const e of changes.create) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    outcome.write(e, policy);
  }
  for (const e of changes.updateNew) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    outcome.write(e, policy);
  }
  for (const e of changes.delete) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    outcome.remove(e, policy);
  }
  return yield* outcome.finish();
}

/**
 * Applies changes to a list of record sets (pure): the state after the changes, sorted by name then
 * type. Throws when a change does not fit the state (create of an existing set, update or delete of
 * an absent one) — changes from a diff of the same state always fit. A change of a shared set's
 * slice replaces the slice's targets within the union (the set goes with its last target); the TTL
 * of the union is then the minimum, as the OVH mapping reports a set with mixed TTLs.
 */
export function applyChanges(current: readonly Endpoint[], changes: readonly Change[]): Endpoint[] {
  const state = drain(indexCurrent(current));
  for (const c of changes) {
    const key = endpointKey((c.after ?? c.before) as Endpoint);
    if (isSharedChange(c)) {
      const now = state.get(key);
      const gone = new Set(c.before?.targets ?? []);
      if (now === undefined && c.before !== undefined) throw new Error(`cannot ${c.action} a slice of absent record set ${key}`);
      const kept = (now?.targets ?? []).filter((t) => !gone.has(t));
      const targets = sortedUnique([...kept, ...(c.after?.targets ?? [])]);
      if (targets.length === 0) {
        state.delete(key);
        continue;
      }
      const base = (c.after ?? now) as Endpoint;
      const ttls = [...(kept.length > 0 && now ? [now.ttl] : []), ...(c.after ? [c.after.ttl] : [])];
      state.set(key, { dnsName: base.dnsName, recordType: base.recordType, targets, ttl: Math.min(...ttls) });
      continue;
    }
    const exists = state.has(key);
    if (c.action === 'create' ? exists : !exists) throw new Error(`cannot ${c.action} record set ${key}`);
    if (c.action === 'delete') state.delete(key);
    else state.set(key, c.after as Endpoint);
  }
  return [...state.values()].sort(compareEndpoints);
}
