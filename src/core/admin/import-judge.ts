/**
 * A TXT-registry import judged (core/admin/import-txt.ts reads the registry): each claimed record set
 * gets its outcome against the zone's ownership rows, the outcomes sorted by name and type, and what a
 * real import writes gathered from them (the sets adopted, the counts per tenant, the audit's sample).
 *
 * A zone of 50,000 records makes 50,000 outcomes: every pass here is a Steps generator (dns/steps.ts)
 * with a pause point every ITEMS_PER_STEP items, run by the import in slices (core/slices.ts), so that
 * no pass — indexing the rows, judging, sorting, gathering — holds the event loop in one block.
 */
import { recordSetKey, type RecordSetKey } from '../../dns/types.js';
import { ITEMS_PER_STEP, sortSteps, type Steps } from '../../dns/steps.js';
import type * as store from '../../store/index.js';
import { PermissionDeniedError } from '../errors.js';
import { groupRowsSteps } from '../ownership/ownership.js';
import { checkNameAllowed, type Tenant } from '../tenants/tenants.js';

export type AdoptionOutcome = 'adopted' | 'already_owned' | 'conflict' | 'unmapped_owner' | 'not_allowed';

export interface Adoption {
  dnsName: string;
  recordType: string;
  registryName: string;
  ownerId: string;
  /** '' when the owner id is not mapped. */
  tenant: string;
  outcome: AdoptionOutcome;
  reason: string;
}

/** What the registry says of one record set: its owner id, the TXT record that says it, the set. */
export interface Claim {
  ownerId: string;
  registryName: string;
  endpoint: { dnsName: string; recordType: string };
}

/**
 * The adopted sets an import's audit row names (the first ones, in the answer's order); the row
 * always holds their count and the count per tenant. 100 sets are ~9 KB of JSON: the row of an import
 * of 25,000 sets would otherwise be ~2.5 MB, written and read back (ListJournal) in one block each.
 */
export const AUDIT_SAMPLE = 100;

/** By name, then type (the answer's order). */
export function compareAdoptions(a: Adoption, b: Adoption): number {
  return a.dnsName < b.dnsName ? -1 : a.dnsName > b.dnsName ? 1 : a.recordType < b.recordType ? -1 : a.recordType > b.recordType ? 1 : 0;
}

/** Each claim's outcome against the zone's ownership rows, sorted by name and type. */
export function* judgeSteps(
  zone: string,
  claims: Iterable<Claim>,
  rows: readonly store.OwnershipRow[],
  tenants: ReadonlyMap<string, Tenant>,
): Steps<Adoption[]> {
  const rowsOf = yield* groupRowsSteps(rows);
  let n = 0;
  const adoptions: Adoption[] = [];
  for (const c of claims) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    adoptions.push(judge(zone, c, rowsOf, tenants));
  }
  return yield* sortSteps(adoptions, compareAdoptions);
}

/** A claim's outcome: one object per set, made once (50,000 of them: every object more is more for the young generation's collections). */
function outcome(c: Claim, tenant: string, o: AdoptionOutcome, reason: string): Adoption {
  return { dnsName: c.endpoint.dnsName, recordType: c.endpoint.recordType, registryName: c.registryName, ownerId: c.ownerId, tenant, outcome: o, reason };
}

function judge(zone: string, c: Claim, rowsOf: ReadonlyMap<RecordSetKey, store.OwnershipRow[]>, tenants: ReadonlyMap<string, Tenant>): Adoption {
  const { dnsName, recordType } = c.endpoint;
  const tenant = tenants.get(c.ownerId);
  if (!tenant) return outcome(c, '', 'unmapped_owner', `owner id "${c.ownerId}" is not mapped to a tenant`);
  try {
    checkNameAllowed(tenant, zone, dnsName, 'dnsName');
  } catch (e) {
    if (!(e instanceof PermissionDeniedError)) throw e;
    return outcome(c, tenant.name, 'not_allowed', e.rule);
  }
  const owners = rowsOf.get(recordSetKey(dnsName, recordType)) ?? [];
  if (owners.length === 0) return outcome(c, tenant.name, 'adopted', 'no owner in dnsplane');
  if (owners.length === 1 && !owners[0]!.shared && owners[0]!.tenantId === tenant.id) {
    return outcome(c, tenant.name, 'already_owned', `already owned by ${tenant.name}`);
  }
  const who = [...new Set(owners.map((o) => o.tenantName))].join(', ');
  const reason = owners.some((o) => o.shared)
    ? `a shared set (owners: ${who}); use AssignOwnership`
    : `owned by tenant "${who}"; use AssignOwnership to move it`;
  return outcome(c, tenant.name, 'conflict', reason);
}

/** What a real import writes: the sets adopted (with their tenant's id), how many per tenant, the audit's sample. */
export interface Adopted {
  sets: Array<{ dnsName: string; recordType: string; tenantId: string }>;
  /** Tenant name -> sets adopted, in the order of first adoption. */
  byTenant: Map<string, number>;
  /** The first AUDIT_SAMPLE adopted. */
  sample: Adoption[];
}

/** The adopted outcomes of `adoptions` gathered for the writes (tenants: owner id -> tenant). */
export function* adoptedSteps(adoptions: readonly Adoption[], tenants: ReadonlyMap<string, Tenant>): Steps<Adopted> {
  const out: Adopted = { sets: [], byTenant: new Map(), sample: [] };
  let n = 0;
  for (const a of adoptions) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    if (a.outcome !== 'adopted') continue;
    out.sets.push({ dnsName: a.dnsName, recordType: a.recordType, tenantId: tenants.get(a.ownerId)!.id });
    out.byTenant.set(a.tenant, (out.byTenant.get(a.tenant) ?? 0) + 1);
    if (out.sample.length < AUDIT_SAMPLE) out.sample.push(a);
  }
  return out;
}
