/**
 * Answering a query from a zone's record sets, as an authoritative server does (RFC 1034 §4.3.2,
 * RFC 4592 for wildcards, RFC 2308 for negative answers). Pure: the DNS door serves dnsplane's cache
 * with it.
 *
 * - A name that exists (an owner, or an empty non-terminal above one) without the type: NODATA;
 *   a name that does not exist: NXDOMAIN, unless a wildcard at its closest encloser answers for it.
 *   Both negative answers carry the zone's SOA in the authority section (the caller writes it).
 * - A CNAME answers any other type at its name and is followed while its target stays in the zone
 *   (at most 8 links, never the same name twice).
 * - NS records below the apex delegate: a name at or below a delegation gets a referral (no AA).
 * - SOA is the caller's (`soa: true` when it belongs in the answer: an SOA or ANY query at the apex).
 */
import { drain, ITEMS_PER_STEP, type Steps } from './steps.js';
import type { Endpoint, RecordType } from './types.js';

export interface ZoneIndex {
  zone: string;
  /** Record sets by owner name, then type. */
  sets: Map<string, Map<RecordType, Endpoint>>;
  /** Every name that exists: the apex, the owners and the empty non-terminals between them. */
  exists: Set<string>;
}

export function indexZone(zone: string, endpoints: readonly Endpoint[]): ZoneIndex {
  return drain(indexZoneSteps(zone, endpoints));
}

/** indexZone as steps: a pause point every few dozen record sets (a zone may hold 50,000). */
export function* indexZoneSteps(zone: string, endpoints: readonly Endpoint[]): Steps<ZoneIndex> {
  const sets = new Map<string, Map<RecordType, Endpoint>>();
  const exists = new Set<string>([zone]);
  let n = 0;
  for (const e of endpoints) {
    let byType = sets.get(e.dnsName);
    if (!byType) sets.set(e.dnsName, (byType = new Map()));
    byType.set(e.recordType, e);
    for (let name = e.dnsName; name.length > zone.length && !exists.has(name); name = parentOf(name)) exists.add(name);
    if (++n % ITEMS_PER_STEP === 0) yield;
  }
  return { zone, sets, exists };
}

function parentOf(name: string): string {
  const dot = name.indexOf('.');
  return dot < 0 ? '' : name.slice(dot + 1);
}

/** One record set of an answer, under the owner name it is answered for (a wildcard's is the query name). */
export interface AnsweredSet {
  owner: string;
  set: Endpoint;
}

export interface Resolution {
  rcode: 'NOERROR' | 'NXDOMAIN';
  /** Authoritative (false only for a referral). */
  aa: boolean;
  answers: AnsweredSet[];
  /** The zone's SOA belongs in the answer (SOA or ANY at the apex). */
  soa: boolean;
  /** A negative answer (NODATA or NXDOMAIN): the zone's SOA goes in the authority section. */
  negative: boolean;
  /** A delegation: its NS set goes in the authority section. */
  referral?: AnsweredSet;
}

/** `qtype`: a record type dnsplane manages, 'SOA', 'ANY', or any other type name (answered NODATA). */
export function resolve(index: ZoneIndex, qname: string, qtype: string): Resolution {
  const out: Resolution = { rcode: 'NOERROR', aa: true, answers: [], soa: false, negative: false };
  const seen = new Set<string>();
  let name = qname;
  for (let link = 0; link <= 8; link++) {
    seen.add(name);
    const cut = delegation(index, name, qtype);
    if (cut) {
      if (out.answers.length === 0) out.aa = false;
      out.referral = cut;
      return out;
    }
    let owner = name;
    let byType = index.sets.get(name);
    if (!byType && !index.exists.has(name)) {
      const wildcard = wildcardFor(index, name);
      if (!wildcard) {
        out.rcode = 'NXDOMAIN';
        out.negative = true;
        return out;
      }
      byType = wildcard;
      owner = name;
    }
    if (name === index.zone && (qtype === 'SOA' || qtype === 'ANY')) out.soa = true;
    if (qtype === 'ANY') {
      for (const set of byType?.values() ?? []) out.answers.push({ owner, set });
      if (out.answers.length === 0 && !out.soa) out.negative = true;
      return out;
    }
    const exact = byType?.get(qtype as RecordType);
    if (exact) {
      out.answers.push({ owner, set: exact });
      return out;
    }
    const cname = qtype === 'CNAME' ? undefined : byType?.get('CNAME');
    if (!cname) {
      if (!out.soa) out.negative = true;
      return out;
    }
    out.answers.push({ owner, set: cname });
    const target = cname.targets[0];
    if (target === undefined || seen.has(target) || !(target === index.zone || target.endsWith(`.${index.zone}`))) return out;
    name = target;
  }
  return out;
}

/** The NS set of a delegation between the apex (excluded) and `name` (included; not for DS at the cut). */
function delegation(index: ZoneIndex, name: string, qtype: string): AnsweredSet | undefined {
  if (name === index.zone) return undefined;
  const cuts: string[] = [];
  for (let n = name; n.length > index.zone.length; n = parentOf(n)) cuts.push(n);
  for (let i = cuts.length - 1; i >= 0; i--) {
    const cut = cuts[i]!;
    if (cut === name && qtype === 'DS') continue;
    const ns = index.sets.get(cut)?.get('NS');
    if (ns) return { owner: cut, set: ns };
  }
  return undefined;
}

/** RFC 4592: the wildcard at the closest encloser of a name that does not exist. */
function wildcardFor(index: ZoneIndex, name: string): Map<RecordType, Endpoint> | undefined {
  let encloser = parentOf(name);
  while (encloser.length > index.zone.length && !index.exists.has(encloser)) encloser = parentOf(encloser);
  if (encloser.length < index.zone.length) return undefined;
  return index.sets.get(`*.${encloser}`);
}
