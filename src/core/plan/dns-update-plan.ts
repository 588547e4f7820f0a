/**
 * A DNS UPDATE (RFC 2136 §3) planned under the zone lock, against the cache as the apply's transaction
 * sees it (what earlier applies of its group did included): the prerequisites checked, then the
 * update section turned into the tenant's changes, which the apply then sends like any other — so
 * prerequisites and update are one atomic step, as §3.2 requires. In the RFC's order:
 *
 * 1. Prerequisites (§3.2), against every record of the zone, whoever owns it: name in use (else
 *    NXDOMAIN), name not in use (YXDOMAIN), RRset exists (NXRRSET), RRset does not exist (YXRRSET),
 *    RRset exists with exactly these values (NXRRSET).
 * 2. Prescan (§3.4.1): a malformed update section is FORMERR (NOTZONE for a name outside the zone);
 *    the DNS door read it, this step answers what it found.
 * 3. Permission (§3.3), as the key's tenant: names within its suffixes; an ACME-only key adds and
 *    deletes TXT records named _acme-challenge.* and nothing else; the apex SOA and NS are not
 *    writable; only the types dnsplane manages can be added; the same ownership as Apply — another
 *    tenant's record set, or one nobody owns, is REFUSED, all or nothing.
 * 4. The update (§3.4.2), in order: add (a value already there is a no-op; the set takes the TTL
 *    given), delete an RRset, delete every RRset at a name (never the apex SOA and NS), delete one
 *    record (absent: a no-op). A CNAME added beside other data, or data added beside a CNAME, is
 *    ignored (§3.4.2.2). TXT record sets an UPDATE creates are shared (core/ownership/ownership.ts): two
 *    tenants adding challenge values under one name both keep theirs, and deleting "the RRset"
 *    deletes the tenant's own values only — the others' stay. At a name that holds OVH's SPF, DKIM or
 *    DMARC records, the TXT record set is their union, as resolvers read it (dns/txt-family.ts): one
 *    set with one owner, each of its records kept in its own OVH type — a value already held is not
 *    added again, deleting a value deletes the record that holds it, deleting the RRset deletes them
 *    all, a new value takes the place of one a DKIM, SPF or DMARC record loses (one PUT).
 * The result is the tenant's change set, diffed like Apply's (dns/diff.ts): its changes, or a
 * refusal (DnsUpdateRefused) naming the RCODE, the reason, the name and type.
 */
import { diffChangeSetSteps, SHARED_LABEL } from '../../dns/diff.js';
import { normalizeEndpoint } from '../../dns/endpoint.js';
import { InvalidInputError } from '../../dns/errors.js';
import { drain, type Steps } from '../../dns/steps.js';
import { splitFamily, dnsViewSteps } from '../../dns/txt-family.js';
import { isRecordType, publishedType, recordSetKey, TXT_FAMILY, type Change, type Endpoint, type RecordType } from '../../dns/types.js';
import type { OwnerOf, OwnerView } from '../../dns/diff.js';
import { adjustEndpointForOvh, ovhRecordSetName } from '../../ovh/mapping.js';
import type { OvhRecord } from '../../ovh/types.js';
import { withinSuffixes, type Tenant } from '../tenants/tenants.js';

export type DnsPrerequisite =
  | { kind: 'name-in-use' | 'name-not-in-use'; name: string }
  | { kind: 'rrset-exists' | 'rrset-not-exists'; name: string; type: string }
  /** The RRset exists with exactly these values; null stands for a value dnsplane cannot hold. */
  | { kind: 'rrset-equals'; name: string; type: string; targets: Array<string | null> };

export type DnsUpdateOp =
  /** `target` canonical; `invalid` when the value cannot be held (why), `type` a wire type name when not managed. */
  | { kind: 'add'; name: string; type: string; target?: string; invalid?: string; ttl: number }
  | { kind: 'delete-rrset'; name: string; type: string }
  | { kind: 'delete-name'; name: string }
  /** `target` null: a value dnsplane cannot hold (so not there: a no-op). */
  | { kind: 'delete-record'; name: string; type: string; target: string | null };

export type DnsRcode = 'FORMERR' | 'SERVFAIL' | 'NXDOMAIN' | 'REFUSED' | 'YXDOMAIN' | 'YXRRSET' | 'NXRRSET' | 'NOTAUTH' | 'NOTZONE';

/** One UPDATE message, as the DNS door read it. */
export interface DnsUpdate {
  zone: string;
  prerequisites: DnsPrerequisite[];
  /** The update section, or what the door found malformed in it (answered after the prerequisites). */
  updates: DnsUpdateOp[] | { malformed: string; rcode: 'FORMERR' | 'NOTZONE'; name?: string; type?: string };
  /** The key may only add and delete TXT records named _acme-challenge.*. */
  acmeOnly: boolean;
}

/** An UPDATE that is not applied, and why (what the DNS door answers). */
export class DnsUpdateRefused extends Error {
  override readonly name = 'DnsUpdateRefused';
  constructor(
    readonly rcode: DnsRcode,
    readonly reason: string,
    readonly at: { name?: string; type?: string } = {},
  ) {
    super(`${rcode}: ${reason}`);
  }
}

export const ACME_PREFIX = '_acme-challenge.';

/** What the planning reads: the zone's records (every type OVH holds), its record sets, their owners as the tenant sees them. */
export interface UpdateContext {
  zone: string;
  tenant: Tenant;
  records: readonly OvhRecord[];
  current: readonly Endpoint[];
  ownerOf: OwnerOf;
}

/** OVH's field types that are TXT records on the wire. */
const TXT_LIKE = new Set(['SPF', 'DKIM', 'DMARC']);

/**
 * An UPDATE as a request that plans itself under the zone lock (core/plan/plan.ts OwnChanges): the names
 * it reads (the zone's apex, its prerequisites' and its updates' names) and its changes.
 */
export function dnsUpdateChanges(update: DnsUpdate): { names(): string[]; changes(c: UpdateContext): Steps<{ changes: Change[] }> } {
  return {
    names: () => [update.zone, ...update.prerequisites.map((p) => p.name), ...(Array.isArray(update.updates) ? update.updates.map((op) => op.name) : [])],
    changes: (c) => planDnsUpdateSteps(c, update),
  };
}

/** The tenant's changes for an UPDATE (DnsUpdateRefused when it is not applied). */
export function* planDnsUpdateSteps(c: UpdateContext, update: DnsUpdate): Steps<{ changes: Change[] }> {
  checkPrerequisites(c, update.prerequisites);
  yield;
  const u = update.updates;
  if (!Array.isArray(u)) throw new DnsUpdateRefused(u.rcode, u.malformed, { name: u.name, type: u.type });
  for (const op of u) checkPermission(c, op, update.acmeOnly);
  const sets = new WorkingSets(c);
  for (const op of u) sets.apply(op);
  yield;
  const { create, remove } = sets.changeSet();
  const { changes, conflicts } = yield* diffChangeSetSteps(c.current, { create, updateOld: [], updateNew: [], delete: remove }, c.ownerOf, { policy: 'sync' });
  const first = conflicts[0];
  if (first) throw new DnsUpdateRefused('REFUSED', first.reason, { name: first.endpoint.dnsName, type: first.endpoint.recordType });
  return { changes };
}

function checkPrerequisites(c: UpdateContext, prerequisites: readonly DnsPrerequisite[]): void {
  // What exists, by name and by "name TYPE" (wire types), from every record OVH holds.
  const names = new Set<string>([c.zone]);
  const rrsets = new Set<string>([recordSetKey(c.zone, 'SOA')]);
  for (const r of c.records) {
    const name = ovhRecordSetName(r.subDomain, c.zone);
    const type = r.fieldType.toUpperCase();
    names.add(name);
    rrsets.add(recordSetKey(name, TXT_LIKE.has(type) ? 'TXT' : type));
  }
  const setOf = new Map(drain(dnsViewSteps(c.current)).map((e) => [recordSetKey(e.dnsName, e.recordType), e] as const));
  for (const p of prerequisites) {
    const at = { name: p.name, ...('type' in p ? { type: p.type } : {}) };
    switch (p.kind) {
      case 'name-in-use':
        if (!names.has(p.name)) throw new DnsUpdateRefused('NXDOMAIN', `prerequisite: ${p.name} has no records`, at);
        break;
      case 'name-not-in-use':
        if (names.has(p.name)) throw new DnsUpdateRefused('YXDOMAIN', `prerequisite: ${p.name} has records`, at);
        break;
      case 'rrset-exists':
        if (!rrsets.has(recordSetKey(p.name, p.type))) throw new DnsUpdateRefused('NXRRSET', `prerequisite: ${p.name} has no ${p.type} records`, at);
        break;
      case 'rrset-not-exists':
        if (rrsets.has(recordSetKey(p.name, p.type))) throw new DnsUpdateRefused('YXRRSET', `prerequisite: ${p.name} has ${p.type} records`, at);
        break;
      case 'rrset-equals': {
        const set = setOf.get(recordSetKey(p.name, p.type));
        const wanted = new Set(p.targets);
        const equal = set !== undefined && !wanted.has(null) && wanted.size === set.targets.length && set.targets.every((t) => wanted.has(t));
        if (!equal)
          throw new DnsUpdateRefused('NXRRSET', `prerequisite: the ${p.type} records of ${p.name} are not exactly the ${p.targets.length} value(s) given`, at);
        break;
      }
    }
  }
}

function checkPermission(c: UpdateContext, op: DnsUpdateOp, acmeOnly: boolean): void {
  const type = op.kind === 'delete-name' ? 'ANY' : op.type;
  const at = { name: op.name, type };
  const refuse = (reason: string): never => {
    throw new DnsUpdateRefused('REFUSED', reason, at);
  };
  if (!withinSuffixes(op.name, c.tenant.suffixes))
    refuse(`"${op.name}" is outside tenant "${c.tenant.name}"'s allowed suffixes (${c.tenant.suffixes.join(', ')})`);
  if (acmeOnly && (op.kind === 'delete-name' || type !== 'TXT' || !op.name.startsWith(ACME_PREFIX))) {
    refuse(`the key is ACME-only: it may only add and delete TXT records named ${ACME_PREFIX}* (not ${type} at ${op.name})`);
  }
  if (type === 'SOA') refuse('the SOA record is not writable');
  if (type === 'NS' && op.name === c.zone) refuse('the apex NS records are not writable');
  if (op.kind === 'add') {
    if (!isRecordType(op.type)) refuse(`dnsplane does not manage ${op.type} records`);
    if (op.invalid !== undefined || op.target === undefined) refuse(op.invalid ?? 'the record has no value');
  }
}

interface SetState {
  name: string;
  type: RecordType;
  view: OwnerView;
  current: Endpoint | undefined;
  /** The tenant's targets now (its whole set, or its slice of a shared set), in order. */
  slice: string[];
  ttl: number | undefined;
  /** A name's TXT family (SPF, DKIM or DMARC records there): each member's targets now; the set is their union. */
  family?: Map<RecordType, string[]>;
}

/** The tenant's record sets as the update section changes them, in order. */
class WorkingSets {
  private readonly sets = new Map<string, SetState>();
  private readonly currentByKey: Map<string, Endpoint>;
  private readonly typesAt = new Map<string, Set<RecordType>>();

  constructor(private readonly c: UpdateContext) {
    this.currentByKey = new Map(c.current.map((e) => [recordSetKey(e.dnsName, e.recordType), e] as const));
    for (const e of c.current) this.typesAt.set(e.dnsName, (this.typesAt.get(e.dnsName) ?? new Set()).add(e.recordType));
  }

  private state(name: string, type: RecordType): SetState {
    const key = recordSetKey(name, type);
    let s = this.sets.get(key);
    if (!s && type === 'TXT') s = this.familyState(name);
    if (!s) {
      const current = this.currentByKey.get(key);
      const view = this.c.ownerOf(key);
      const slice =
        view.kind === 'self' ? [...(current?.targets ?? [])] : view.kind === 'shared' ? (current?.targets ?? []).filter((t) => view.mine.includes(t)) : [];
      s = { name, type, view, current, slice, ttl: view.kind === 'shared' ? (view.ttl ?? current?.ttl) : current?.ttl };
      this.sets.set(key, s);
    }
    return s;
  }

  /** The TXT set at a name where SPF, DKIM or DMARC records are: their union, owned as one (undefined: no such record there). */
  private familyState(name: string): SetState | undefined {
    const members = TXT_FAMILY.map((t) => [t, this.currentByKey.get(recordSetKey(name, t))] as const).filter(([, e]) => e !== undefined) as [
      RecordType,
      Endpoint,
    ][];
    if (!members.some(([t]) => t !== 'TXT')) return undefined;
    let view: OwnerView = { kind: 'self' };
    for (const [t] of members) {
      const v = this.c.ownerOf(recordSetKey(name, t));
      if (v.kind === 'other' || v.kind === 'none') view = v;
      else if (v.kind === 'shared' && v.others.size > 0) view = { kind: 'other', owner: [...v.others.values()][0]! };
      if (view.kind !== 'self') break;
    }
    const targets = [...new Set(members.flatMap(([, e]) => e.targets))].sort();
    const current: Endpoint = { dnsName: name, recordType: 'TXT', targets, ttl: Math.min(...members.map(([, e]) => e.ttl)) };
    const s: SetState = {
      name,
      type: 'TXT',
      view,
      current,
      slice: view.kind === 'self' ? [...targets] : [],
      ttl: current.ttl,
      family: new Map(members.map(([t, e]) => [t, [...e.targets]])),
    };
    this.sets.set(recordSetKey(name, 'TXT'), s);
    return s;
  }

  /** Whether a set of this type holds anything at the name now (anyone's targets). */
  private holds(name: string, type: RecordType): boolean {
    const s = this.sets.get(recordSetKey(name, type));
    if (!s) return this.typesAt.get(name)?.has(type) ?? false;
    const mineBefore = s.view.kind === 'self' ? (s.current?.targets ?? []) : s.view.kind === 'shared' ? s.view.mine : [];
    return s.slice.length > 0 || (s.current?.targets ?? []).some((t) => !mineBefore.includes(t));
  }

  /** A set the tenant may not change: another tenant's, or one that exists without an owner. */
  private guard(s: SetState, what: string): void {
    if (s.view.kind === 'other')
      throw new DnsUpdateRefused('REFUSED', `${what}: ${s.name} ${s.type} is owned by tenant "${s.view.owner}"`, { name: s.name, type: s.type });
    if (s.view.kind === 'none' && s.current)
      throw new DnsUpdateRefused('REFUSED', `${what}: ${s.name} ${s.type} exists in OVH without an owner; an admin must assign it`, {
        name: s.name,
        type: s.type,
      });
  }

  apply(op: DnsUpdateOp): void {
    switch (op.kind) {
      case 'add': {
        const type = op.type as RecordType;
        const others = [...(this.typesAt.get(op.name) ?? [])].filter((t) => t !== type && this.holds(op.name, t));
        if ((type === 'CNAME' && others.length > 0) || (type !== 'CNAME' && others.includes('CNAME'))) return; // §3.4.2.2: ignored
        const s = this.state(op.name, type);
        this.guard(s, 'add');
        if (type === 'CNAME') s.slice = [op.target!];
        else if (!s.slice.includes(op.target!)) s.slice.push(op.target!);
        s.ttl = op.ttl;
        this.typesAt.set(op.name, (this.typesAt.get(op.name) ?? new Set()).add(type));
        return;
      }
      case 'delete-rrset':
        if (isRecordType(op.type)) this.clear(op.name, op.type, `delete the ${op.type} records of ${op.name}`);
        return;
      case 'delete-name':
        // SPF, DKIM and DMARC are cleared with the TXT set they are part of.
        for (const type of new Set([...(this.typesAt.get(op.name) ?? [])].map(publishedType))) {
          if (type === 'NS' && op.name === this.c.zone) continue; // §3.4.2.3: never the apex NS
          this.clear(op.name, type, `delete every record of ${op.name}`);
        }
        return;
      case 'delete-record': {
        if (op.target === null || !isRecordType(op.type)) return;
        const s = this.state(op.name, op.type);
        if (s.slice.includes(op.target)) {
          s.slice = s.slice.filter((t) => t !== op.target);
          return;
        }
        if (!s.current?.targets.includes(op.target)) return; // absent: nothing to delete
        if (s.view.kind === 'shared') {
          const owner = s.view.others.get(op.target);
          throw new DnsUpdateRefused(
            'REFUSED',
            `delete ${op.target}: that value of shared set ${s.name} ${s.type} ${owner ? `is owned by tenant "${owner}"` : 'exists in OVH without an owner'}`,
            { name: s.name, type: s.type },
          );
        }
        this.guard(s, `delete ${op.target}`);
        return;
      }
    }
  }

  private clear(name: string, type: RecordType, what: string): void {
    const s = this.state(name, type);
    if (s.view.kind === 'shared')
      s.slice = []; // the tenant's own values; the others' stay
    else if (s.current || s.slice.length > 0) {
      this.guard(s, what);
      s.slice = [];
    }
  }

  /** The change set that makes the tenant's sets what the update section made them. */
  changeSet(): { create: Endpoint[]; remove: Endpoint[] } {
    const create: Endpoint[] = [];
    const remove: Endpoint[] = [];
    for (const s of this.sets.values()) {
      if (s.family) {
        this.familyChanges(s, create, remove);
        continue;
      }
      const field = `update ${s.name} ${s.type}`;
      const mine =
        s.view.kind === 'shared'
          ? (s.current?.targets ?? []).filter((t) => (s.view as { mine: readonly string[] }).mine.includes(t))
          : s.view.kind === 'self'
            ? (s.current?.targets ?? [])
            : [];
      if (s.slice.length === 0) {
        if (mine.length > 0) remove.push({ dnsName: s.name, recordType: s.type, targets: mine, ttl: s.ttl ?? 0 });
        continue;
      }
      const shared = s.type === 'TXT' && s.view.kind === 'none' && !s.current;
      try {
        const e = normalizeEndpoint(
          { dnsName: s.name, recordType: s.type, targets: s.slice, ttl: s.ttl ?? 0, ...(shared ? { labels: { [SHARED_LABEL]: 'true' } } : {}) },
          field,
          { zone: this.c.zone },
        );
        create.push(adjustEndpointForOvh(e).endpoint);
      } catch (e) {
        if (e instanceof InvalidInputError) throw new DnsUpdateRefused('REFUSED', e.message, { name: s.name, type: s.type });
        throw e;
      }
    }
    return { create, remove };
  }

  /** A TXT family's members after the update: each value in the type that holds it (dns/txt-family.ts splitFamily). */
  private familyChanges(s: SetState, create: Endpoint[], remove: Endpoint[]): void {
    const family = s.family as Map<RecordType, string[]>;
    const split = s.view.kind === 'self' ? splitFamily(family, s.slice) : new Map<RecordType, string[]>();
    for (const type of TXT_FAMILY) {
      const targets = split.get(type) ?? [];
      const before = family.get(type) ?? [];
      if (targets.length === 0) {
        if (before.length > 0 && s.view.kind === 'self') remove.push({ dnsName: s.name, recordType: type, targets: before, ttl: s.ttl ?? 0 });
        continue;
      }
      try {
        const e = normalizeEndpoint({ dnsName: s.name, recordType: type, targets, ttl: s.ttl ?? 0 }, `update ${s.name} TXT`, { zone: this.c.zone });
        create.push(adjustEndpointForOvh(e).endpoint);
      } catch (e) {
        if (e instanceof InvalidInputError) throw new DnsUpdateRefused('REFUSED', e.message, { name: s.name, type: 'TXT' });
        throw e;
      }
    }
  }
}
