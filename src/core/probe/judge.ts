/**
 * What an authoritative server's answer says of a record set the prober checks: it answers the set as
 * published (`match`), it answers something else (`old`: older data, or someone else's), or it cannot
 * be trusted (an error: not authoritative, a refusal, a failure, an answer for another zone, records
 * that cannot be read). Only an authoritative answer (AA) with NOERROR or NXDOMAIN counts; a negative
 * one must carry the zone's own SOA. Created and updated sets must answer exactly their targets; a
 * deleted set must answer nothing of its type at its name (NXDOMAIN or NODATA). OVH's SPF, DKIM and
 * DMARC are TXT on the wire, one TXT set with the name's other TXT records: a set of those types
 * matches when the TXT answer holds its targets (created, updated), or no value of its type (deleted:
 * none the type's rules would take, mail-policy.ts). Pure.
 */
import { RCODE, TYPE, rcodeName, sameName, targetOfData, wireTypeOf, type ResourceRecord } from '../../dns/wire/index.js';
import { checkMailPolicy } from '../../dns/mail-policy.js';
import { isRecordType, isTxtFamily } from '../../dns/types.js';
import type { DnsAnswer } from '../../dnsclient/index.js';
import { messageOf } from '../../lib/error-message.js';

export type Verdict = 'match' | 'old' | { error: string };

/** The wire type of a probeable record type. */
export function wireType(type: string): number {
  if (!isRecordType(type)) throw new Error(`not a record type: ${type}`);
  return wireTypeOf(type);
}

/** The answer's trust: undefined when it is an authoritative answer for `zone`, else why not. */
function untrusted(zone: string, a: DnsAnswer): string | undefined {
  if (a.rcode !== RCODE.NOERROR && a.rcode !== RCODE.NXDOMAIN) return `answered ${rcodeName(a.rcode)}`;
  if (!a.aa) return 'answered without authority (AA unset): not an authoritative server of the zone';
  const negative = a.rcode === RCODE.NXDOMAIN || a.answers.length === 0;
  if (negative && !a.authorities.some((rr) => rr.type === TYPE.SOA && sameName(rr.name, zone))) {
    return `a negative answer without the SOA of ${zone} (an answer for another zone)`;
  }
  return undefined;
}

export function judge(zone: string, set: { name: string; type: string; targets: readonly string[] | null }, a: DnsAnswer): Verdict {
  const why = untrusted(zone, a);
  if (why) return { error: why };
  const type = wireType(set.type);
  const records = a.rcode === RCODE.NXDOMAIN ? [] : a.answers.filter((rr) => rr.type === type && sameName(rr.name, set.name));
  const member = set.type !== 'TXT' && isTxtFamily(set.type) ? (set.type as 'SPF' | 'DKIM' | 'DMARC') : undefined;
  if (set.targets === null && !member) return records.length === 0 ? 'match' : 'old';
  let got: string[];
  try {
    got = [...new Set(records.map((rr) => targetOf(rr)))].sort();
  } catch (e) {
    return { error: `records that cannot be read (${messageOf(e)})` };
  }
  if (member) {
    if (set.targets === null) return got.some((t) => holds(member, t)) ? 'old' : 'match';
    return set.targets.every((t) => got.includes(t)) ? 'match' : 'old';
  }
  const want = [...new Set(set.targets ?? [])].sort();
  return got.length === want.length && got.every((t, i) => t === want[i]) ? 'match' : 'old';
}

function targetOf(rr: ResourceRecord): string {
  if (!rr.data) throw new Error(`a ${rr.type} record without data`);
  return targetOfData(rr.data, 'answer').target;
}

/** The zone's SOA serial in an answer to its SOA question, or why there is none to trust. */
export function serialOf(zone: string, a: DnsAnswer): number | { error: string } {
  const why = untrusted(zone, a);
  if (why) return { error: why };
  const soa = a.answers.find((rr) => rr.type === TYPE.SOA && sameName(rr.name, zone));
  if (soa?.data?.kind !== 'SOA') return { error: `no SOA of ${zone} in the answer` };
  return soa.data.serial;
}

/** Whether a TXT value is one a record of this mail-policy type could hold. */
function holds(type: 'SPF' | 'DKIM' | 'DMARC', text: string): boolean {
  try {
    checkMailPolicy(type, text, 'answer');
    return true;
  } catch {
    return false;
  }
}
