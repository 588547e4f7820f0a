/**
 * Queries (opcode QUERY, one question): answered from dnsplane's cache, authoritative (AA), for the
 * zones dnsplane manages; anything else REFUSED (dnsplane is no resolver). The SOA of a zone answers
 * at its apex and goes in the authority section of every negative answer, so zone detection by SOA
 * queries (lego, cert-manager, certbot) finds the zone when pointed at dnsplane. ANY over UDP is
 * answered empty with TC (ask over TCP): no amplification.
 */
import type { CoreContext } from '../core/context.js';
import { dnsZone, dnsZones, type DnsZone } from '../core/dns-door/dns-zone.js';
import type { Endpoint } from '../dns/types.js';
import { resolve } from '../dns/zone-index.js';
import {
  CLASS,
  RCODE,
  TYPE,
  Writer,
  dataOfTarget,
  foldCase,
  typeName,
  wireTypeOf,
  writeRecordData,
  type Message,
  type ResourceRecord,
} from '../dns/wire/index.js';
import { answerTo, type Exchange } from './exchange.js';

/** The managed zone a query name (presentation text, maybe with escapes) is in, if any. */
export function zoneOfName(zoneOf: (name: string) => string | undefined, name: string): string | undefined {
  const zone = zoneOf(name);
  if (zone === undefined || zone === name) return zone;
  // "a\.example.test" is the one-label name "a.example" under "test", not a name in "example.test".
  const before = name.slice(0, -(zone.length + 1));
  const backslashes = /\\*$/.exec(before)![0].length;
  return backslashes % 2 === 0 ? zone : undefined;
}

export async function answerQuery(ctx: CoreContext, ex: Exchange): Promise<Message> {
  const q = ex.request.message.questions[0]!;
  if (q.class !== CLASS.IN && q.class !== CLASS.ANY) return answerTo(ex, RCODE.REFUSED);
  const name = foldCase(q.name);
  const zones = await dnsZones(ctx);
  const zone = zoneOfName(zones.zoneOf, name);
  if (zone === undefined) return answerTo(ex, RCODE.REFUSED);
  if (q.type === TYPE.ANY && ex.transport === 'udp') {
    const empty = answerTo(ex, RCODE.NOERROR, { aa: true });
    return { ...empty, header: { ...empty.header, tc: true } };
  }
  const z = await dnsZone(ctx, zone, zones.states);
  const res = resolve(z.index, name, typeName(q.type));
  const answers: ResourceRecord[] = [];
  if (res.soa) answers.push(soaRecord(z));
  for (const a of res.answers) answers.push(...records(a.owner, a.set));
  const authorities: ResourceRecord[] = res.referral ? records(res.referral.owner, res.referral.set) : res.negative ? [soaRecord(z, true)] : [];
  return answerTo(ex, res.rcode === 'NXDOMAIN' ? RCODE.NXDOMAIN : RCODE.NOERROR, { aa: res.aa, answers, authorities });
}

/**
 * The wire records of a record set, under `owner`. A target the cache keeps as OVH had it because it
 * is not valid for its type (a record made by hand) has no wire form: it is left out, not served wrong.
 */
export function records(owner: string, set: Endpoint): ResourceRecord[] {
  const ttl = set.ttl === 0 ? DEFAULT_TTL : set.ttl;
  const out: ResourceRecord[] = [];
  for (const t of set.targets) {
    try {
      const data = dataOfTarget(set.recordType, t);
      writeRecordData(new Writer(), data); // proves it has a wire form
      out.push({ name: owner, type: wireTypeOf(set.recordType), class: CLASS.IN, ttl, data });
    } catch {
      // not encodable: left out
    }
  }
  return out;
}

/** OVH serves TTL 0 ("the zone default") as 3600. */
const DEFAULT_TTL = 3600;

/** The zone's SOA record; in a negative answer its TTL is the negative-caching TTL (RFC 2308 §3). */
export function soaRecord(z: DnsZone, negative = false): ResourceRecord {
  const s = z.soa;
  return {
    name: z.zone,
    type: TYPE.SOA,
    class: CLASS.IN,
    ttl: negative ? Math.min(s.ttl, s.minimum) : s.ttl,
    data: { kind: 'SOA', mname: s.mname, rname: s.rname, serial: s.serial, refresh: s.refresh, retry: s.retry, expire: s.expire, minimum: s.minimum },
  };
}
