/**
 * The TXT family at one name — OVH's TXT, SPF, DKIM and DMARC records (dns/types.ts TXT_FAMILY) — as
 * the doors that speak DNS types see it: ONE TXT record set, the union of their values, as resolvers
 * read it. Pure.
 *
 * - dnsViewSteps: a zone's record sets with each name's family merged into one TXT set (its TTL the
 *   lowest of theirs), for the DNS door's queries and transfers.
 * - splitFamily: a TXT set written through such a door (its wanted values) spread over the family's
 *   sets as they are: a value a set already holds stays there; a new value takes the place of a value
 *   an SPF, DKIM or DMARC set loses when that type can hold it (one PUT of that record, never a
 *   delete and a create), else it goes to the TXT set. So a name's TXT family is one set with one
 *   writer: whoever owns it owns all four (core/ownership/ownership.ts).
 */
import { checkMailPolicy } from './mail-policy.js';
import { ITEMS_PER_STEP, type Steps } from './steps.js';
import { isTxtFamily, recordSetKey, TXT_FAMILY, type Endpoint, type RecordType } from './types.js';

/**
 * A zone's record sets (sorted by name) with each name's TXT family as one TXT set, where its first
 * member sat: the order by name is kept (within a name the types are then not in order, which neither
 * an answer nor a transfer needs). The input is never changed; without SPF, DKIM or DMARC sets it is
 * returned as it is.
 */
export function* dnsViewSteps(endpoints: readonly Endpoint[]): Steps<readonly Endpoint[]> {
  if (!endpoints.some((e) => isTxtFamily(e.recordType) && e.recordType !== 'TXT')) return endpoints;
  const out: Endpoint[] = [];
  let family: Endpoint | undefined;
  let n = 0;
  for (const e of endpoints) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    if (!isTxtFamily(e.recordType)) {
      out.push(e);
      continue;
    }
    if (family && family.dnsName === e.dnsName) {
      family.targets = [...new Set([...family.targets, ...e.targets])].sort();
      family.ttl = Math.min(family.ttl, e.ttl);
      continue;
    }
    family = { dnsName: e.dnsName, recordType: 'TXT', targets: [...e.targets], ttl: e.ttl, ...(e.labels ? { labels: e.labels } : {}) };
    out.push(family);
  }
  return out;
}

/** The TXT family's sets at one name, as they are now: type -> targets (canonical). */
export type FamilySets = ReadonlyMap<RecordType, readonly string[]>;

/** Whether a value can be a record of this member of the family. */
function holds(type: RecordType, value: string): boolean {
  if (type === 'TXT') return true;
  try {
    checkMailPolicy(type as 'SPF' | 'DKIM' | 'DMARC', value, 'value');
    return true;
  } catch {
    return false;
  }
}

/**
 * The family's sets after a write that wants exactly `wanted` (the TXT set resolvers will read) at the
 * name: type -> targets, every member present (an empty list: that set goes).
 */
export function splitFamily(current: FamilySets, wanted: readonly string[]): Map<RecordType, string[]> {
  const want = new Set(wanted);
  const out = new Map<RecordType, string[]>(TXT_FAMILY.map((t) => [t, (current.get(t) ?? []).filter((v) => want.has(v))]));
  const placed = new Set([...out.values()].flat());
  const fresh = [...want].filter((v) => !placed.has(v)).sort();
  for (const value of fresh) {
    // A member that lost values takes a new value it can hold, one for one: OVH keeps its record (a PUT).
    const member = TXT_FAMILY.find((t) => t !== 'TXT' && (out.get(t) as string[]).length < (current.get(t) ?? []).length && holds(t, value));
    (out.get(member ?? 'TXT') as string[]).push(value);
  }
  for (const list of out.values()) list.sort();
  return out;
}

/** An endpoint as a door sends it (its type a string; core/plan/input.ts normalizes it). */
export interface RawEndpoint {
  dnsName: string;
  recordType: string;
  targets: string[];
  ttl: number;
  setIdentifier?: string;
  labels?: Record<string, string>;
}

export interface RawChangeSet {
  create: RawEndpoint[];
  updateOld: RawEndpoint[];
  updateNew: RawEndpoint[];
  delete: RawEndpoint[];
}

/**
 * A change set written in DNS types (the webhook's: external-dns sees a name's TXT family as one TXT
 * set) made into changes of the family's members, against the tenant's sets as they are (`current`):
 * a TXT create, update or delete at a name where an SPF, DKIM or DMARC set is becomes each member's
 * change (splitFamily: values stay where they are, a new one takes a lost one's place, the rest go to
 * TXT). Any other entry, and a TXT at a name with no such set, passes as it is.
 */
export function familyChangeSet(changes: RawChangeSet, current: readonly Endpoint[]): RawChangeSet {
  const members = new Map<string, Map<RecordType, Endpoint>>();
  for (const e of current) {
    if (!isTxtFamily(e.recordType)) continue;
    const at = members.get(e.dnsName) ?? new Map<RecordType, Endpoint>();
    at.set(e.recordType, e);
    members.set(e.dnsName, at);
  }
  const familyAt = (e: RawEndpoint) => {
    const at = e.recordType === 'TXT' ? members.get(e.dnsName) : undefined;
    return at && [...at.keys()].some((t) => t !== 'TXT') ? at : undefined;
  };
  const out: RawChangeSet = { create: [], updateOld: [], updateNew: [], delete: [] };
  const toMembers = (e: RawEndpoint, at: Map<RecordType, Endpoint>, wanted: readonly string[]) => {
    const split = splitFamily(new Map([...at].map(([t, m]) => [t, m.targets])), wanted);
    for (const type of TXT_FAMILY) {
      const targets = split.get(type) ?? [];
      const before = at.get(type);
      if (targets.length === 0) {
        if (before) out.delete.push(before);
      } else if (before) {
        out.updateOld.push(before);
        out.updateNew.push({ ...before, targets, ttl: e.ttl, ...(e.labels ? { labels: e.labels } : {}) });
      } else out.create.push({ ...e, recordType: type, targets });
    }
  };
  const newByKey = new Map(changes.updateNew.map((e) => [recordSetKey(e.dnsName, e.recordType), e] as const));
  for (const e of changes.create) {
    const at = familyAt(e);
    if (at) toMembers(e, at, e.targets);
    else out.create.push(e);
  }
  for (const old of changes.updateOld) {
    const next = newByKey.get(recordSetKey(old.dnsName, old.recordType));
    const at = familyAt(old);
    if (at && next) {
      newByKey.delete(recordSetKey(old.dnsName, old.recordType));
      toMembers(next, at, next.targets);
    } else out.updateOld.push(old);
  }
  for (const e of changes.updateNew) if (newByKey.get(recordSetKey(e.dnsName, e.recordType)) === e) out.updateNew.push(e);
  for (const e of changes.delete) {
    const at = familyAt(e);
    if (at) out.delete.push(...at.values());
    else out.delete.push(e);
  }
  return out;
}
