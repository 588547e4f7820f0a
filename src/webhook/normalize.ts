/**
 * What dnsplane does to external-dns's endpoints before planning, exposed so that external-dns plans
 * against the same forms it will read back (POST /adjustendpoints), and the split of a change set into
 * the entries to apply and the entries to reject (POST /records). Pure.
 *
 * Normalization (the same functions core runs, so that adjust and apply cannot disagree):
 * - name: lowercase ASCII (punycode), no trailing dot;
 * - type: uppercase;
 * - targets: canonical per type (lowercase hosts without the trailing dot, `10 mx.example.com` for MX,
 *   TXT unquoted: `"v=spf1 -all"` is `v=spf1 -all`, IPv6 compressed), de-duplicated, sorted;
 * - TTL: 0 stays 0 (the zone default; external-dns never plans a TTL update for 0), 1-59 become 60
 *   (what OVH stores), others as given;
 * - setIdentifier and providerSpecific are dropped: OVH has neither, the records dnsplane returns carry
 *   neither, and external-dns would otherwise plan an update on every loop — except the property
 *   `webhook/dnsplane-health-check` (the annotation
 *   `external-dns.alpha.kubernetes.io/webhook-dnsplane-health-check`, dns/health-check.ts): it becomes the
 *   label dnsplane/health-check core stores, and GET /records sends it back as the same property, so
 *   that external-dns's plan (which compares provider-specific properties) sees no change;
 * - labels are kept as sent (external-dns's TXT registry writes the `resource` label into its records).
 * An endpoint that breaks a rule is returned unchanged by adjust: dropping it would make external-dns
 * plan the deletion of the record it stands for. POST /records then rejects it and says why.
 */
import { MAX_ENDPOINTS, type RawChangeSet, type RawEndpoint } from '../core/plan/input.js';
import { drain, type Steps } from '../dns/steps.js';
import { withinSuffixes } from '../core/tenants/tenants.js';
import { InvalidInputError } from '../dns/errors.js';
import { normalizeEndpoint } from '../dns/endpoint.js';
import { isInZone } from '../dns/names.js';
import { recordSetKey, type Endpoint } from '../dns/types.js';
import { adjustEndpointForOvh } from '../ovh/mapping.js';
import { checkHealthCheck, healthCheckOf, HEALTH_CHECK_LABEL, HEALTH_CHECK_PROPERTY } from '../dns/health-check.js';
import type { ChangeList, ProviderSpecificProperty, WireChanges, WireEndpoint } from './protocol.js';

/** What a tenant may write: its zones, and when set, only names under its suffixes. */
export interface TenantScope {
  /** The tenant's name; '' when not known (the sidecar is told only its zones). */
  tenant: string;
  /** Normalized zone names. */
  zones: string[];
  /** Normalized suffixes; empty: any name of its zones. */
  suffixes: string[];
}

/**
 * The names external-dns should manage: the tenant's zones, narrowed to its suffixes when it has some
 * (a suffix above a zone keeps the zone, a suffix inside a zone replaces it). Sorted, unique.
 */
export function domainFilterOf(scope: TenantScope): string[] {
  if (scope.suffixes.length === 0) return [...new Set(scope.zones)].sort();
  const out = new Set<string>();
  for (const zone of scope.zones) {
    for (const s of scope.suffixes) {
      if (isInZone(zone, s)) out.add(zone);
      else if (isInZone(s, zone)) out.add(s);
    }
  }
  // Suffixes that meet none of its zones would leave an empty filter, which external-dns reads as
  // "everything": fall back to the zones (dnsplane refuses the names outside the suffixes anyway).
  return (out.size > 0 ? [...out] : [...new Set(scope.zones)]).sort();
}

/**
 * Normalizes one endpoint as core will, for this tenant. Throws InvalidInputError naming the field
 * (`create[2].targets[0]`) and the rule, or for a name outside the tenant's zones or suffixes.
 */
export function normalizeWire(e: WireEndpoint, scope: TenantScope, field: string): { endpoint: Endpoint; warnings: string[] } {
  if (e.dnsName === '') throw new InvalidInputError(`${field}.dnsName`, 'is required');
  if (e.recordType === '') throw new InvalidInputError(`${field}.recordType`, 'is required');
  const check = wireHealthCheck(e);
  const endpoint = normalizeEndpoint(
    {
      dnsName: e.dnsName,
      recordType: e.recordType,
      targets: e.targets,
      ttl: e.recordTTL,
      ...(check === undefined ? {} : { labels: { [HEALTH_CHECK_LABEL]: check } }),
    },
    field,
    { zones: scope.zones },
  );
  if (check !== undefined) checkHealthCheck(check, endpoint.recordType, `${field}.providerSpecific["${HEALTH_CHECK_PROPERTY}"]`);
  const name = endpoint.dnsName;
  if (!withinSuffixes(name, scope.suffixes)) {
    throw new InvalidInputError(
      `${field}.dnsName`,
      `"${name}" is outside ${scope.tenant ? `tenant "${scope.tenant}"'s` : "this tenant's"} allowed suffixes (${scope.suffixes.join(', ')})`,
    );
  }
  return adjustEndpointForOvh(endpoint);
}

/** The check an external-dns endpoint carries: its provider-specific property (the annotation), or the label itself. */
export function wireHealthCheck(e: Pick<WireEndpoint, 'providerSpecific' | 'labels'>): string | undefined {
  const property = e.providerSpecific.find((p) => p.name === HEALTH_CHECK_PROPERTY)?.value ?? e.labels[HEALTH_CHECK_LABEL];
  return property === undefined || property === '' ? undefined : property;
}

/** The provider-specific properties dnsplane sends back for a check (none without one). */
export function healthCheckProperties(check: string | undefined): ProviderSpecificProperty[] {
  return check === undefined ? [] : [{ name: HEALTH_CHECK_PROPERTY, value: check }];
}

export interface AdjustProblem {
  index: number;
  reason: string;
}

/** Endpoints normalized between two pause points of the *Steps forms. */
const ENDPOINTS_PER_STEP = 64;

/** POST /adjustendpoints. Endpoints that break a rule come back unchanged, listed in `problems`. */
export function adjustEndpoints(endpoints: readonly WireEndpoint[], scope: TenantScope): { endpoints: WireEndpoint[]; problems: AdjustProblem[] } {
  return drain(adjustEndpointsSteps(endpoints, scope));
}

/** adjustEndpoints with pause points (core/slices.ts). */
export function* adjustEndpointsSteps(endpoints: readonly WireEndpoint[], scope: TenantScope): Steps<{ endpoints: WireEndpoint[]; problems: AdjustProblem[] }> {
  const problems: AdjustProblem[] = [];
  const out = new Array<WireEndpoint>(endpoints.length);
  for (let index = 0; index < endpoints.length; index++) {
    if (index % ENDPOINTS_PER_STEP === 0 && index > 0) yield;
    const e = endpoints[index]!;
    try {
      const { endpoint } = normalizeWire(e, scope, `[${index}]`);
      out[index] = {
        dnsName: endpoint.dnsName,
        targets: endpoint.targets,
        recordType: endpoint.recordType,
        setIdentifier: '',
        recordTTL: endpoint.ttl,
        labels: e.labels,
        providerSpecific: healthCheckProperties(healthCheckOf(endpoint)),
      };
    } catch (err) {
      if (!(err instanceof InvalidInputError)) throw err;
      problems.push({ index, reason: err.message });
      out[index] = e;
    }
  }
  return { endpoints: out, problems };
}

/** A change-set entry that dnsplane will not apply, and why. */
export interface Rejection {
  list: ChangeList;
  index: number;
  dnsName: string;
  recordType: string;
  reason: string;
  /**
   * A delete of a record set the same change set writes (external-dns without adjust, where a set
   * identifier puts one set in two plan rows): the write is the end state it asked for, so nothing it
   * wanted is refused (the answer stays a success).
   */
  superseded?: boolean;
}

/** An entry kept for applying: where it came from and its normalized form. */
export interface Entry {
  list: ChangeList;
  index: number;
  endpoint: Endpoint;
}

/** An update: the new form and the old one (for its name and type only: core diffs against the cache). */
export interface UpdatePair {
  old: Entry;
  new: Entry;
}

export interface PreparedChanges {
  deletes: Entry[];
  updates: UpdatePair[];
  creates: Entry[];
  rejected: Rejection[];
  /** updateOld entries with no updateNew of the same name and type: nothing to do for them. */
  unpaired: Entry[];
}

function rejection(list: ChangeList, index: number, e: WireEndpoint, reason: string): Rejection {
  return { list, index, dnsName: e.dnsName, recordType: e.recordType, reason };
}

/**
 * Splits a change set into what to apply and what to reject: entries that break a rule, names outside
 * the tenant's zones or suffixes, and a record set named a second time (precedence: updateNew, then
 * create, then delete; within a list, the first).
 * updateOld/updateNew are paired by name and type, not by position; an update whose old entry is bad
 * still applies (core computes updates against the cache and uses the old entry for its name only).
 */
export function prepareChanges(changes: WireChanges, scope: TenantScope): PreparedChanges {
  return drain(prepareChangesSteps(changes, scope));
}

/** prepareChanges with pause points (core/slices.ts). */
export function* prepareChangesSteps(changes: WireChanges, scope: TenantScope): Steps<PreparedChanges> {
  const out: PreparedChanges = { deletes: [], updates: [], creates: [], rejected: [], unpaired: [] };
  const refused: Record<ChangeList, Rejection[]> = { create: [], delete: [], updateNew: [], updateOld: [] };
  const normalize = (list: ChangeList, index: number, e: WireEndpoint): Entry | undefined => {
    try {
      return { list, index, endpoint: { ...normalizeWire(e, scope, `${list}[${index}]`).endpoint } };
    } catch (err) {
      if (!(err instanceof InvalidInputError)) throw err;
      refused[list].push(rejection(list, index, e, err.message));
      return undefined;
    }
  };
  const keyOf = (e: Endpoint) => recordSetKey(e.dnsName, e.recordType);
  const claimed = new Map<string, string>();
  const claim = (entry: Entry, raw: WireEndpoint): boolean => {
    const key = keyOf(entry.endpoint);
    const first = claimed.get(key);
    if (first !== undefined) {
      const r = rejection(
        entry.list,
        entry.index,
        raw,
        `${entry.list}[${entry.index}]: record set ${key} appears more than once in the change set (also at ${first}, which is applied)`,
      );
      refused[entry.list].push(entry.list === 'delete' && !first.startsWith('delete') ? { ...r, superseded: true } : r);
      return false;
    }
    claimed.set(key, `${entry.list}[${entry.index}]`);
    return true;
  };

  // Old entries by record set, in order. A bad one is not reported: its new entry stands in for it (an
  // old entry may carry a raw target dnsplane read from OVH and could not parse), and a bad new entry is.
  const olds = new Map<string, { entries: Entry[]; taken: number }>();
  let n = 0;
  for (const w of changes.updateOld) {
    if (++n % ENDPOINTS_PER_STEP === 0) yield;
    try {
      const { endpoint } = normalizeWire(w.endpoint, scope, `updateOld[${w.index}]`);
      const key = keyOf(endpoint);
      const entry: Entry = { list: 'updateOld', index: w.index, endpoint };
      const same = olds.get(key);
      if (same) same.entries.push(entry);
      else olds.set(key, { entries: [entry], taken: 0 });
    } catch (err) {
      if (!(err instanceof InvalidInputError)) throw err;
    }
  }

  // Writes claim their record set before deletes: when a set is both written and deleted (external-dns
  // without adjust, where a set identifier puts the same set in two plan rows), the write is the end state.
  for (const w of changes.updateNew) {
    if (++n % ENDPOINTS_PER_STEP === 0) yield;
    const entry = normalize('updateNew', w.index, w.endpoint);
    if (!entry) continue;
    const key = keyOf(entry.endpoint);
    const same = olds.get(key);
    const old = same?.entries[same.taken++] ?? { list: 'updateNew', index: w.index, endpoint: entry.endpoint };
    if (claim(entry, w.endpoint)) out.updates.push({ old, new: entry });
  }
  for (const w of changes.create) {
    if (++n % ENDPOINTS_PER_STEP === 0) yield;
    const entry = normalize('create', w.index, w.endpoint);
    if (entry && claim(entry, w.endpoint)) out.creates.push(entry);
  }
  for (const w of changes.delete) {
    if (++n % ENDPOINTS_PER_STEP === 0) yield;
    const entry = normalize('delete', w.index, w.endpoint);
    if (entry && claim(entry, w.endpoint)) out.deletes.push(entry);
  }
  for (const { entries, taken } of olds.values()) for (let i = taken; i < entries.length; i++) out.unpaired.push(entries[i]!);
  // Sorted by list, then index. Each list's refusals are found in the order its entries were sent,
  // which is index order for a decoded body: then list by list is that order, with no sort of 50,000
  // entries in one go.
  const inOrder = (rs: Rejection[]) => (rs.every((r, i) => i === 0 || rs[i - 1]!.index <= r.index) ? rs : [...rs].sort((a, b) => a.index - b.index));
  out.rejected = (['create', 'delete', 'updateNew', 'updateOld'] as const).flatMap((list) => inOrder(refused[list]));
  return out;
}

/** One Apply's worth of entries, and for each position of the change set sent, the entry it came from. */
export interface Batch {
  deletes: Entry[];
  updates: UpdatePair[];
  creates: Entry[];
}

export function batchSize(b: Batch): number {
  return b.deletes.length + 2 * b.updates.length + b.creates.length;
}

/**
 * Cuts the prepared changes into batches core accepts (at most MAX_ENDPOINTS endpoints, a pair
 * counting two), deletes first, then updates, then creates, so that a name that changes type (a CNAME
 * replaced by an A record) frees the name before it is taken again. One batch in the usual case.
 */
export function batches(p: Pick<PreparedChanges, 'deletes' | 'updates' | 'creates'>, max: number = MAX_ENDPOINTS): Batch[] {
  const out: Batch[] = [];
  let cur: Batch = { deletes: [], updates: [], creates: [] };
  const room = (n: number) => {
    if (batchSize(cur) + n > max && batchSize(cur) > 0) {
      out.push(cur);
      cur = { deletes: [], updates: [], creates: [] };
    }
  };
  for (const d of p.deletes) {
    room(1);
    cur.deletes.push(d);
  }
  for (const u of p.updates) {
    room(2);
    cur.updates.push(u);
  }
  for (const c of p.creates) {
    room(1);
    cur.creates.push(c);
  }
  if (batchSize(cur) > 0) out.push(cur);
  return out;
}

function raw(e: Endpoint): RawEndpoint {
  const check = healthCheckOf(e);
  return {
    dnsName: e.dnsName,
    recordType: e.recordType,
    targets: [...e.targets],
    ttl: e.ttl,
    ...(check === undefined ? {} : { labels: { [HEALTH_CHECK_LABEL]: check } }),
  };
}

/** The change set core receives for a batch, and the entry behind each of its positions. */
export function toChangeSet(b: Batch): { changes: RawChangeSet; origin: (list: ChangeList, index: number) => Entry | UpdatePair | undefined } {
  const changes: RawChangeSet = {
    create: b.creates.map((e) => raw(e.endpoint)),
    updateOld: b.updates.map((u) => raw(u.old.endpoint)),
    updateNew: b.updates.map((u) => raw(u.new.endpoint)),
    delete: b.deletes.map((e) => raw(e.endpoint)),
  };
  return {
    changes,
    origin: (list, index) => {
      switch (list) {
        case 'create':
          return b.creates[index];
        case 'delete':
          return b.deletes[index];
        case 'updateOld':
        case 'updateNew':
          return b.updates[index];
      }
    },
  };
}

/** Removes one entry (or update pair) from a batch. */
export function without(b: Batch, item: Entry | UpdatePair): Batch {
  return {
    deletes: b.deletes.filter((x) => x !== item),
    updates: b.updates.filter((x) => x !== item),
    creates: b.creates.filter((x) => x !== item),
  };
}
