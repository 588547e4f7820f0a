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
 * Output: changes sorted by name then type; conflicts by name, type, then action.
 */
import { compareEndpoints, endpointKey, sameRecords, validateEndpointSet } from './endpoint.js';
import { InvalidInputError } from './errors.js';
import type { Change, ChangeAction, ChangeSet, Conflict, Endpoint, Policy, RecordSetKey, RecordType } from './types.js';

/** Who owns a record set, as seen by the tenant the diff is computed for. */
export type OwnerView = { kind: 'self' } | { kind: 'none' } | { kind: 'other'; owner: string };
export type OwnerOf = (key: RecordSetKey) => OwnerView;

export interface DiffInput {
  /** Normalized record sets that exist now, in the zones in scope (at most one per name and type). */
  current: readonly Endpoint[];
  /** The desired state, normalized; validated here with validateEndpointSet. */
  desired: readonly Endpoint[];
  policy: Policy;
  ownerOf: OwnerOf;
  /** With 'sync': only current sets whose name is in scope may be deleted. Default: all of them. */
  scope?: (dnsName: string) => boolean;
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

function indexCurrent(current: readonly Endpoint[]): Map<RecordSetKey, Endpoint> {
  const map = new Map<RecordSetKey, Endpoint>();
  for (const e of current) {
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

  /** The tenant wants `after` to be the record set. */
  write(after: Endpoint, policy: Policy): void {
    const key = endpointKey(after);
    const before = this.current.get(key);
    const owner = this.ownerOf(key);
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

  /** The tenant wants the record set with this key gone (`asked` is what it named). */
  remove(asked: Endpoint, policy: Policy): void {
    const key = endpointKey(asked);
    const before = this.current.get(key);
    if (before === undefined) return;
    const owner = this.ownerOf(key);
    if (owner.kind === 'other') this.conflict('delete', before, owner.owner, ownedBy(before, owner.owner));
    else if (owner.kind === 'none') this.conflict('delete', before, '', REASON_UNOWNED);
    else if (policy !== 'sync') this.conflict('delete', before, '', `policy ${policy} never deletes`);
    else this.changes.push({ action: 'delete', before });
  }

  /** Turns creates that would make a CNAME coexist with another type into conflicts, then sorts. */
  finish(): DiffResult {
    const typesAt = new Map<string, Set<RecordType>>();
    const add = (e: Endpoint): void => {
      const set = typesAt.get(e.dnsName) ?? new Set<RecordType>();
      set.add(e.recordType);
      typesAt.set(e.dnsName, set);
    };
    const deleted = new Set(this.changes.filter((c) => c.action === 'delete').map((c) => endpointKey(c.before as Endpoint)));
    for (const [key, e] of this.current) if (!deleted.has(key)) add(e);
    for (const c of this.changes) if (c.action === 'create') add(c.after as Endpoint);

    const kept: Change[] = [];
    for (const c of this.changes) {
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
    kept.sort((a, b) => compareEndpoints(keyOf(a), keyOf(b)));
    this.conflicts.sort(
      (a, b) => compareEndpoints(a.endpoint, b.endpoint) || (a.action < b.action ? -1 : a.action > b.action ? 1 : 0),
    );
    return { changes: kept, conflicts: this.conflicts };
  }
}

/**
 * The changes that make the tenant's records equal `desired`, under `policy`. Throws
 * InvalidInputError (field `desired[i]`) when desired repeats a name+type or mixes a CNAME with
 * another type at one name.
 */
export function diffDesired(input: DiffInput): DiffResult {
  validateEndpointSet(input.desired, 'desired');
  const current = indexCurrent(input.current);
  const outcome = new Outcome(current, input.ownerOf);
  const wanted = new Set<RecordSetKey>();
  for (const d of input.desired) {
    wanted.add(endpointKey(d));
    outcome.write(d, input.policy);
  }
  if (input.policy === 'sync') {
    for (const [key, e] of current) {
      if (wanted.has(key)) continue;
      if (input.scope !== undefined && !input.scope(e.dnsName)) continue;
      // Only own sets: deleting what is not ours is never implied by a desired state, so no conflict.
      if (input.ownerOf(key).kind === 'self') outcome.remove(e, 'sync');
    }
  }
  return outcome.finish();
}

/**
 * The changes for an external-dns change set. updateOld[i]/updateNew[i] are pairs: same length, same
 * name and type, else InvalidInputError. An update is computed against the CURRENT set (updateOld is
 * only checked for its name and type): absent now -> treated as a create of updateNew. A record set
 * may appear only once in a change set (a pair counts once), else InvalidInputError.
 */
export function diffChangeSet(
  current: readonly Endpoint[],
  changes: ChangeSet,
  ownerOf: OwnerOf,
  opts: ChangeSetOptions = {},
): DiffResult {
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
  changes.create.forEach((e, i) => claim(e, `changes.create[${i}]`));
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
  changes.delete.forEach((e, i) => claim(e, `changes.delete[${i}]`));

  const outcome = new Outcome(indexCurrent(current), ownerOf);
  for (const e of changes.create) outcome.write(e, policy);
  for (const e of changes.updateNew) outcome.write(e, policy);
  for (const e of changes.delete) outcome.remove(e, policy);
  return outcome.finish();
}

/**
 * Applies changes to a list of record sets (pure): the state after the changes, sorted by name then
 * type. Throws when a change does not fit the state (create of an existing set, update or delete of
 * an absent one) — changes from a diff of the same state always fit.
 */
export function applyChanges(current: readonly Endpoint[], changes: readonly Change[]): Endpoint[] {
  const state = indexCurrent(current);
  for (const c of changes) {
    const key = endpointKey((c.after ?? c.before) as Endpoint);
    const exists = state.has(key);
    if (c.action === 'create' ? exists : !exists) throw new Error(`cannot ${c.action} record set ${key}`);
    if (c.action === 'delete') state.delete(key);
    else state.set(key, c.after as Endpoint);
  }
  return [...state.values()].sort(compareEndpoints);
}
