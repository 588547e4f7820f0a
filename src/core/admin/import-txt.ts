/**
 * ImportTxtRegistry: adopts the ownership external-dns's TXT registry recorded in a zone, so that a
 * cluster moving from the in-tree OVH provider to dnsplane keeps exactly the records it had
 * (REFERENCE.md section 4).
 *
 * What external-dns wrote (registry/mapper and registry/txt in external-dns), and how it is read here:
 * - The value: `heritage=external-dns,external-dns/owner=<id>,external-dns/resource=<kind>/<ns>/<name>`,
 *   quoted in OVH's answers (the cache keeps it decoded; surrounding quotes are dropped either way).
 *   A value without `heritage=external-dns` is not a registry record (the encrypted form is not read:
 *   such records are reported as unreadable when their name is a typed registry name).
 * - The name, with --txt-prefix P or --txt-suffix S (exclusive; either may hold `%{record_type}`):
 *   new format `P<type>-<first label>S.<rest>` (types A, AAAA, CNAME, NS, MX, SRV, NAPTR), old
 *   format `P<first label>S.<rest>` without the type. Read back as external-dns's
 *   AffixNameMapper.ToEndpointName does: strip the affix, then a leading `<type>-`.
 * - A typed record owns that name and type; an old untyped one owns every type at the name except
 *   AAAA (external-dns's own lookup rule), where no typed record says otherwise.
 * - The registry TXT records themselves are adopted by the same tenant: its external-dns keeps (or
 *   deletes) them through dnsplane when it still runs with --registry=txt.
 *
 * Each record set gets an outcome: adopted (unowned before), already owned (by that tenant), conflict
 * (owned by someone else, or shared: left alone), unmapped owner, not allowed (outside the tenant's
 * zones or suffixes), judged in core/admin/import-judge.ts. A dry run computes the same and writes
 * nothing. Every pass over a zone's records, rows and outcomes runs in slices (core/slices.ts); what a
 * real import writes is one INSERT per batch of sets, one NOTIFY, one audit row of bounded size.
 */
import { InvalidInputError } from '../../dns/errors.js';
import { endpointKey, isInZone, normalizeName, recordSetKey, type Endpoint } from '../../dns/index.js';
import { drain, ITEMS_PER_STEP, type Steps } from '../../dns/steps.js';
import type { OvhRecord } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import type { Tenant } from '../tenants/tenants.js';
import { adoptedSteps, judgeSteps, type Adoption } from './import-judge.js';
import { readCacheOf } from '../reads/read-cache.js';
import { readSideRows, readZoneBase, type ZoneRows } from '../reads/zone-base.js';
import { Slicer } from '../slices.js';
import { ensureSynced } from '../zones/zones.js';

/** The record types external-dns names its typed registry records after (mapper.go supportedRecords). */
export const REGISTRY_TYPES = ['A', 'AAAA', 'CNAME', 'NS', 'MX', 'SRV', 'NAPTR'] as const;
const RECORD_TEMPLATE = '%{record_type}';
/** Explicit limit on the owner map of one import. */
export const MAX_OWNER_IDS = 1000;

export interface RegistryAffix {
  prefix: string;
  suffix: string;
}

/** A registry TXT name read back: the endpoint name it speaks for and its type ('' for the old format). */
export interface RegistryName {
  dnsName: string;
  recordType: string;
}

function extractTypeDefaultPosition(name: string): RegistryName {
  const first = name.split('-')[0] ?? '';
  const t = REGISTRY_TYPES.find((x) => x.toLowerCase() === first);
  return t === undefined ? { dnsName: name, recordType: '' } : { dnsName: name.slice(first.length + 1), recordType: t };
}

function dropAffixExtractType(name: string, affix: RegistryAffix): RegistryName | undefined {
  let { prefix, suffix } = affix;
  const isPrefix = suffix.length === 0;
  const isSuffix = prefix.length === 0 && suffix.length > 0;
  if (prefix.includes(RECORD_TEMPLATE) || suffix.includes(RECORD_TEMPLATE)) {
    for (const t of REGISTRY_TYPES) {
      const iPrefix = prefix.replaceAll(RECORD_TEMPLATE, t.toLowerCase());
      const iSuffix = suffix.replaceAll(RECORD_TEMPLATE, t.toLowerCase());
      if (isPrefix && name.startsWith(iPrefix)) return { dnsName: name.slice(iPrefix.length), recordType: t };
      if (isSuffix && name.endsWith(iSuffix)) return { dnsName: name.slice(0, name.length - iSuffix.length), recordType: t };
    }
    // Old (untyped) records written with the template removed.
    prefix = prefix.replaceAll(RECORD_TEMPLATE, '');
    suffix = suffix.replaceAll(RECORD_TEMPLATE, '');
  }
  if (isPrefix && name.startsWith(prefix)) return extractTypeDefaultPosition(name.slice(prefix.length));
  if (isSuffix && name.endsWith(suffix)) return extractTypeDefaultPosition(name.slice(0, name.length - suffix.length));
  return undefined;
}

/**
 * The endpoint a registry TXT record name speaks for, as external-dns reads it back, or undefined when
 * the name does not carry the affix. Names are lowercased; no trailing dot.
 */
export function parseRegistryName(txtName: string, affix: RegistryAffix): RegistryName | undefined {
  const name = txtName.toLowerCase().replace(/\.$/, '');
  const lower = { prefix: affix.prefix.toLowerCase(), suffix: affix.suffix.toLowerCase() };
  if (lower.suffix.length === 0) return dropAffixExtractType(name, lower);
  if (lower.prefix.length > 0) return undefined;
  // Suffix: it sits at the end of the first label(s), before the parent domain.
  const dots = lower.suffix.split('.').length - 1;
  const parts = name.split('.');
  if (parts.length < 1 + dots) return undefined;
  const head = parts.slice(0, 1 + dots).join('.');
  const rest = parts.slice(1 + dots).join('.');
  const r = dropAffixExtractType(head, lower);
  if (r === undefined) return undefined;
  return rest === '' ? r : { dnsName: `${r.dnsName}.${rest}`, recordType: r.recordType };
}

/**
 * The labels of a registry value (external-dns's NewLabelsFromString, plain form): undefined when it
 * is not one (no `heritage=external-dns`, or another heritage). Keys lose their `external-dns/`.
 */
export function parseRegistryValue(text: string): Record<string, string> | undefined {
  const value = text.replace(/^"+|"+$/g, '');
  const labels: Record<string, string> = {};
  let heritage = false;
  for (const token of value.split(',')) {
    const kv = token.split('=');
    if (kv.length !== 2) continue;
    const [key, val] = kv as [string, string];
    if (key === 'heritage') {
      if (val !== 'external-dns') return undefined;
      heritage = true;
    } else if (key.startsWith('external-dns/')) {
      labels[key.slice('external-dns/'.length)] = val;
    }
  }
  return heritage ? labels : undefined;
}

export type { Adoption, AdoptionOutcome } from './import-judge.js';

/** What a real import's audit row holds of the sets it adopted (core/admin/import-judge.ts AUDIT_SAMPLE). */
export interface AdoptedAudit {
  count: number;
  /** Tenant name -> sets adopted. */
  byTenant: Record<string, number>;
  /** The first AUDIT_SAMPLE adopted, in the answer's order. */
  sample: Adoption[];
}

export interface ImportInput {
  zone: string;
  /** external-dns owner id -> tenant name. */
  owners: Record<string, string>;
  txtPrefix: string;
  txtSuffix: string;
  dryRun: boolean;
}

export interface ImportResult {
  zone: string;
  dryRun: boolean;
  adoptions: Adoption[];
  generation: bigint;
  unreadable: string[];
}

interface Claim {
  ownerId: string;
  registryName: string;
}

/** registryClaims at once (tests, small zones). */
export function registryClaims(
  zone: string,
  endpoints: readonly Endpoint[],
  affix: RegistryAffix,
): { claims: Map<string, Claim & { endpoint: Pick<Endpoint, 'dnsName' | 'recordType'> }>; unreadable: string[] } {
  return drain(registryClaimsSteps(zone, endpoints, affix));
}

/** What the registry says, per record set of the zone (pure, over the cached endpoints). */
export function* registryClaimsSteps(
  zone: string,
  endpoints: readonly Endpoint[],
  affix: RegistryAffix,
): Steps<{ claims: Map<string, Claim & { endpoint: Pick<Endpoint, 'dnsName' | 'recordType'> }>; unreadable: string[] }> {
  const typed = new Map<string, Claim>();
  const untyped = new Map<string, Claim>();
  const registrySets = new Map<string, Claim[]>();
  const unreadable: string[] = [];
  let n = 0;
  for (const e of endpoints) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    if (e.recordType !== 'TXT') continue;
    const claims: Claim[] = [];
    for (const target of e.targets) {
      const labels = parseRegistryValue(target);
      const owner = labels?.['owner'];
      if (owner === undefined || owner === '') continue;
      claims.push({ ownerId: owner, registryName: e.dnsName });
    }
    const name = parseRegistryName(e.dnsName, affix);
    if (claims.length === 0) {
      if (name !== undefined && name.recordType !== '' && isInZone(name.dnsName, zone)) unreadable.push(e.dnsName);
      continue;
    }
    registrySets.set(e.dnsName, claims);
    if (name === undefined || name.dnsName === '' || !isInZone(name.dnsName, zone)) continue;
    const claim = claims[0]!;
    if (name.recordType === '') untyped.set(name.dnsName, claim);
    else typed.set(recordSetKey(name.dnsName, name.recordType), claim);
  }

  const out = new Map<string, Claim & { endpoint: Pick<Endpoint, 'dnsName' | 'recordType'> }>();
  for (const e of endpoints) {
    if (++n % ITEMS_PER_STEP === 0) yield;
    const key = endpointKey(e);
    const own = e.recordType === 'TXT' ? registrySets.get(e.dnsName) : undefined;
    if (own !== undefined) {
      // A registry record: owned with what it says (several owners in one set: the first, reported).
      out.set(key, { ...own[0]!, endpoint: e });
      continue;
    }
    const claim = typed.get(key) ?? (e.recordType !== 'AAAA' ? untyped.get(e.dnsName) : undefined);
    if (claim !== undefined) out.set(key, { ...claim, endpoint: e });
  }
  return { claims: out, unreadable: unreadable.sort() };
}

/** Adopts (or, with dryRun, shows) the ownership the zone's TXT registry records. */
export async function importTxtRegistry(
  ctx: CoreContext,
  actor: Tenant,
  input: ImportInput,
  audit: (tx: store.Queryable, summary: string, adopted: AdoptedAudit) => Promise<void>,
): Promise<ImportResult> {
  const slicer = new Slicer();
  const zone = normalizeName(input.zone, 'zone');
  if (!(await store.getZone(ctx.pool, zone))) throw new InvalidInputError('zone', `"${zone}" is not a zone dnsplane manages`);
  if (input.txtPrefix !== '' && input.txtSuffix !== '') {
    throw new InvalidInputError('txtSuffix', 'txt_prefix and txt_suffix are mutually exclusive (as in external-dns)');
  }
  const ownerIds = Object.keys(input.owners);
  if (ownerIds.length === 0) throw new InvalidInputError('owners', 'map at least one external-dns owner id to a tenant');
  if (ownerIds.length > MAX_OWNER_IDS) throw new InvalidInputError('owners', `at most ${MAX_OWNER_IDS} owner ids per import (got ${ownerIds.length})`);
  const tenants = new Map<string, Tenant>();
  for (const id of ownerIds) {
    const name = input.owners[id]!;
    if (id === '') throw new InvalidInputError('owners', 'an owner id must not be empty');
    const t = await store.getTenantByName(ctx.pool, name);
    if (!t) throw new InvalidInputError(`owners["${id}"]`, `tenant "${name}" does not exist`);
    tenants.set(id, t);
  }
  await ensureSynced(ctx, zone);

  // A zone of 50,000 records: read, claimed, judged and sorted in slices, its rows indexed by set once.
  const compute = async (q: store.Queryable): Promise<{ adoptions: Adoption[]; unreadable: string[]; records: OvhRecord[] }> => {
    // The read cache's base at the generation `q` sees, when it is built (an equal generation is an
    // equal zone: no second copy of the zone made); else the zone read from `q`.
    const generation = (await store.getZone(q, zone))?.generation;
    const cached = generation === undefined ? undefined : readCacheOf(ctx).baseIfBuilt(zone, generation);
    const { endpoints, ownership: rows, records } = cached ?? (await readZoneBase(q, zone, slicer));
    const { claims, unreadable } = await slicer.run(registryClaimsSteps(zone, endpoints, { prefix: input.txtPrefix, suffix: input.txtSuffix }));
    return { adoptions: await slicer.run(judgeSteps(zone, claims.values(), rows, tenants)), unreadable, records };
  };

  if (input.dryRun) {
    return store.withSnapshot(ctx.pool, async (tx) => {
      const { adoptions, unreadable } = await compute(tx);
      return { zone, dryRun: true, adoptions, unreadable, generation: (await store.getZone(tx, zone))!.generation };
    });
  }
  let adopt: ZoneRows | undefined;
  const result = await store.withZoneLock(ctx.pool, zone, { lockTimeoutMs: ctx.settings.lockTimeoutMs }, async (tx) => {
    const { adoptions, unreadable, records } = await compute(tx);
    const adopted = await slicer.run(adoptedSteps(adoptions, tenants));
    let generation = (await store.getZone(tx, zone))!.generation;
    if (adopted.sets.length > 0) {
      // Unowned sets (judged in this transaction, under the lock): inserted in batches, not a statement each.
      await store.adoptOwners(tx, zone, adopted.sets);
      generation = await store.bumpGeneration(tx, zone);
      // The sets adopted, named while they fit in a NOTIFY (store.notifyZoneChanged): replicas re-read them, not the zone.
      await store.notifyZoneChanged(tx, zone, generation, { ids: [], sets: adopted.sets });
      const summary = `adopted ${adopted.sets.length} record set(s) from the TXT registry by ${actor.name}: ${[...adopted.byTenant].map(([t, n]) => `${t} ${n}`).join(', ')}`;
      await audit(tx, summary, { count: adopted.sets.length, byTenant: Object.fromEntries(adopted.byTenant), sample: adopted.sample });
      // Only ownership moved: the records in hand are the new generation's (not read back whole by its next reader).
      adopt = { generation, records, ...(await readSideRows(tx, zone)) };
    }
    return { zone, dryRun: false, adoptions, unreadable, generation };
  });
  if (adopt) readCacheOf(ctx).adopt(zone, adopt);
  return result;
}
