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
 *
 * Here: the two diffs and applyChanges. What each policy allows: policy.ts (a value per policy, not
 * a branch per name); the outcome set by set: diff-outcome.ts; shared sets' label and views: shared-sets.ts.
 */
import { Outcome, type DiffResult } from './diff-outcome.js';
import { compareEndpoints, endpointKey, sortedUnique, validateEndpointSet } from './endpoint.js';
import { InvalidInputError } from './errors.js';
import { policyRules } from './policy.js';
import { isSharedChange, type OwnerOf } from './shared-sets.js';
import { drain, ITEMS_PER_STEP, type Steps } from './steps.js';
import type { Change, ChangeSet, Endpoint, Policy, RecordSetKey, RecordType } from './types.js';

export { REASON_UNOWNED, type DiffResult } from './diff-outcome.js';
export { REASON_CREATE_ONLY, policyRules, type PolicyRules } from './policy.js';
export { SHARED_LABEL, SHAREABLE_TYPES, isSharedChange, isSharedEndpoint, type OwnerOf, type OwnerView, type SharedOwnerView } from './shared-sets.js';

export interface DiffInput {
  /** Normalized record sets that exist now, in the zones in scope (at most one per name and type). */
  current: readonly Endpoint[];
  /** The desired state, normalized; validated here with validateEndpointSet unless `validated`. */
  desired: readonly Endpoint[];
  /** The caller validated `desired` already (core/plan/input.ts routeInput: the whole request, with its field names). */
  validated?: boolean;
  policy: Policy;
  ownerOf: OwnerOf;
  /** With 'sync': only current sets in scope (by name, and type) may be deleted. Default: all of them. */
  scope?: (dnsName: string, recordType: RecordType) => boolean;
}

export interface ChangeSetOptions {
  /** Default 'sync' (external-dns applies its own policy before sending a change set). */
  policy?: Policy;
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
  const rules = policyRules(input.policy);
  const outcome = new Outcome(current, input.ownerOf, rules);
  const wanted = new Set<RecordSetKey>();
  let n = 0;
  for (const d of input.desired) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    wanted.add(endpointKey(d));
    outcome.write(d);
  }
  if (!rules.refusesDelete) {
    for (const [key, e] of current) {
      if (++n % ITEMS_PER_STEP === 0) yield;
      if (wanted.has(key)) continue;
      if (input.scope !== undefined && !input.scope(e.dnsName, e.recordType)) continue;
      // Only own sets (or the own slice of a shared set): deleting what is not ours is never implied by
      // a desired state, so no conflict.
      const owner = input.ownerOf(key);
      if (owner.kind === 'self' || (owner.kind === 'shared' && owner.mine.length > 0)) outcome.remove(e, false);
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

  const outcome = new Outcome(yield* indexCurrent(current), ownerOf, policyRules(opts.policy ?? 'sync'));
  let n = 0;
  for (const e of changes.create) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    outcome.write(e);
  }
  for (const e of changes.updateNew) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    outcome.write(e);
  }
  for (const e of changes.delete) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    outcome.remove(e);
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
