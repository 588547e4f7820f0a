/**
 * Queries (opcode QUERY, one question): answered from dnsplane's cache, authoritative (AA), for the
 * zones dnsplane manages; anything else REFUSED (dnsplane is no resolver). The SOA of a zone answers
 * at its apex and goes in the authority section of every negative answer, so zone detection by SOA
 * queries (lego, cert-manager, certbot) finds the zone when pointed at dnsplane. ANY over UDP is
 * answered empty with TC (ask over TCP): no amplification.
 *
 * The SOA question at a managed zone's apex is always answered, with its answer section: when the
 * fresh read of the zone fails or takes longer than SOA_FROM_MEMORY_MS, from the SOA this process last
 * knew (core/dns-door/dns-zone.ts rememberedSoa) — external-dns's OVH provider reads the first answer
 * of that question without checking there is one, and a failure would crash it.
 */
import type { CoreContext } from '../core/context.js';
import { dnsZone, dnsZones, rememberedSoa, type DnsZone, type SoaFields } from '../core/dns-door/dns-zone.js';
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

/** How long an apex SOA question waits for the fresh read before it is answered from memory (miekg's clients wait 2 s). */
export const SOA_FROM_MEMORY_MS = 1_000;

export async function answerQuery(ctx: CoreContext, ex: Exchange): Promise<Message> {
  const q = ex.request.message.questions[0]!;
  const known = q.type === TYPE.SOA && (q.class === CLASS.IN || q.class === CLASS.ANY) ? rememberedSoa(ctx, foldCase(q.name)) : undefined;
  if (!known) return answerFresh(ctx, ex);
  const fromMemory = () => answerTo(ex, RCODE.NOERROR, { aa: true, answers: [soaRecordOf(foldCase(q.name), known)] });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Message>((resolve) => {
    timer = setTimeout(() => resolve(fromMemory()), SOA_FROM_MEMORY_MS);
  });
  try {
    return await Promise.race([answerFresh(ctx, ex).catch(fromMemory), late]);
  } finally {
    clearTimeout(timer);
  }
}

async function answerFresh(ctx: CoreContext, ex: Exchange): Promise<Message> {
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
  return soaRecordOf(z.zone, z.soa, negative);
}

function soaRecordOf(zone: string, s: SoaFields, negative = false): ResourceRecord {
  return {
    name: zone,
    type: TYPE.SOA,
    class: CLASS.IN,
    ttl: negative ? Math.min(s.ttl, s.minimum) : s.ttl,
    data: { kind: 'SOA', mname: s.mname, rname: s.rname, serial: s.serial, refresh: s.refresh, retry: s.retry, expire: s.expire, minimum: s.minimum },
  };
}
