/**
 * The outcome of a diff (dns/diff.ts), record set by record set: what the tenant asks written or
 * removed becomes a change, or a conflict naming why not (the owner, the policy: dns/policy.ts, a
 * shared set's other owners), then CNAME clashes, then the order. The rules are in diff.ts's header.
 */
import { compareEndpoints, endpointKey, sameRecords } from './endpoint.js';
import type { PolicyRules } from './policy.js';
import { isSharedChange, isSharedEndpoint, SHAREABLE_TYPES, withoutSharedLabel, withSharedLabel, type OwnerOf, type SharedOwnerView } from './shared-sets.js';
import { ITEMS_PER_STEP, sortSteps, type Steps } from './steps.js';
import type { Change, ChangeAction, Conflict, Endpoint, RecordSetKey, RecordType } from './types.js';

export interface DiffResult {
  changes: Change[];
  conflicts: Conflict[];
}

export const REASON_UNOWNED = 'exists in OVH without an owner; an admin must assign it';

function ownedBy(e: Endpoint, owner: string): string {
  return `${e.dnsName} ${e.recordType} is owned by tenant ${JSON.stringify(owner)}`;
}

function listTargets(targets: readonly string[]): string {
  return targets.length === 1 ? `target ${targets[0]}` : `targets ${targets.join(', ')}`;
}

/** Accumulates the outcome of a diff under one policy; shared by both diffs. */
export class Outcome {
  readonly changes: Change[] = [];
  readonly conflicts: Conflict[] = [];

  constructor(
    private readonly current: Map<RecordSetKey, Endpoint>,
    private readonly ownerOf: OwnerOf,
    private readonly rules: PolicyRules,
  ) {}

  conflict(action: ChangeAction, endpoint: Endpoint, owner: string, reason: string): void {
    this.conflicts.push({ action, endpoint, owner, reason });
  }

  /** The tenant wants `after` to be the record set (its slice of it, for a shared set). */
  write(wanted: Endpoint): void {
    const key = endpointKey(wanted);
    const before = this.current.get(key);
    const owner = this.ownerOf(key);
    if (owner.kind === 'shared') {
      this.writeShared(wanted, owner);
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
    else if (this.rules.refusesUpdate) this.conflict('update', after, '', this.rules.refusesUpdate);
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

  private writeShared(wanted: Endpoint, view: SharedOwnerView): void {
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
    else if (this.rules.refusesUpdate) this.conflict('update', after, '', this.rules.refusesUpdate);
    else this.changes.push({ action: 'update', before, after });
  }

  private removeShared(asked: Endpoint, view: SharedOwnerView, explicit: boolean): void {
    const key = endpointKey(asked);
    if (explicit) this.foreignConflicts('delete', asked, this.foreignTargets(key, view, asked.targets));
    const before = this.slice(key, view);
    if (before === undefined) return;
    if (this.rules.refusesDelete) this.conflict('delete', before, '', this.rules.refusesDelete);
    else this.changes.push({ action: 'delete', before });
  }

  /** The tenant wants the record set with this key gone (`asked` is what it named; `explicit`: it named it). */
  remove(asked: Endpoint, explicit = true): void {
    const key = endpointKey(asked);
    const owner = this.ownerOf(key);
    if (owner.kind === 'shared') {
      this.removeShared(asked, owner, explicit);
      return;
    }
    const before = this.current.get(key);
    if (before === undefined) return;
    if (owner.kind === 'other') this.conflict('delete', before, owner.owner, ownedBy(before, owner.owner));
    else if (owner.kind === 'none') this.conflict('delete', before, '', REASON_UNOWNED);
    else if (this.rules.refusesDelete) this.conflict('delete', before, '', this.rules.refusesDelete);
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
