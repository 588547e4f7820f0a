/**
 * The answers of the simulator's authoritative DNS server (dns-server.ts listens), from the PUBLISHED
 * records only (what the last /refresh copied).
 *
 * - Names outside every zone: REFUSED (no AA).
 * - Inside a zone (AA set): the records of the asked type; a CNAME when the name has one (followed while
 *   its target stays in the zone); NXDOMAIN when the name does not exist (neither records nor names below
 *   it), NODATA (NOERROR, empty answer) when it exists without that type — both with the SOA in the
 *   authority section, TTL min(SOA ttl, nxDomainTtl). Wildcards (`*` subDomains) answer for names that do
 *   not exist (RFC 4592 closest encloser). NS records below the apex delegate: referral without AA.
 * - Types served: A, AAAA, CNAME, TXT (OVH's SPF, DKIM and DMARC field types are TXT records), MX, SRV,
 *   CAA, NS, PTR, DNAME, NAPTR, TLSA, SSHFP, LOC, SOA, and ANY (everything). HTTPS and SVCB records make
 *   their name exist but are not served (NODATA).
 * - Record TTL 0 is served as the zone default (3600). Targets of CNAME/MX/SRV/NS/PTR without a trailing
 *   dot are relative to the zone (BIND rule). In-zone A/AAAA of MX/SRV/NS targets go to additional.
 * - UDP answers larger than 512 bytes (or the EDNS size asked, at most 4096) are truncated (TC set, no
 *   records) so that the client retries over TCP. TCP uses 2-byte length framing.
 */
import dnsPacket from 'dns-packet';
import type { Answer, CaaData, DecodedPacket, Packet, Question } from 'dns-packet';
import { parseCaa, parseMx, parseSrv } from '../ovhwire/records.js';
import { naptrFields } from '../ovhwire/record-targets.js';
import { parseLoc } from '../dns/loc.js';
import { TXT_LIKE, absoluteName, numbersAndHex, ownerName, txtWireStrings } from './records.js';
import type { StoredRecord } from './state.js';
import type { SimSoaSettings } from './types.js';

/** What the DNS server needs of a zone. */
export interface DnsZoneView {
  name: string;
  serial: number;
  /** The published records. The array is replaced (not mutated) on publish; indexes are cached by identity. */
  published: readonly StoredRecord[];
}

export interface DnsSource {
  /** The zone names served. */
  zoneNames(): string[];
  zone(name: string): DnsZoneView | undefined;
  defaultTtl: number;
  nameServers: readonly string[];
  soa: SimSoaSettings;
}

const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;
type Rcode = keyof typeof RCODE;

interface Resolution {
  rcode: Rcode;
  aa: boolean;
  answers: Answer[];
  authorities: Answer[];
  additionals: Answer[];
}

/** Records of a published zone by relative owner name, plus every name that exists (empty non-terminals included). */
interface ZoneIndex {
  byName: Map<string, StoredRecord[]>;
  exists: Set<string>;
}

const indexCache = new WeakMap<readonly StoredRecord[], ZoneIndex>();

function indexOf(published: readonly StoredRecord[]): ZoneIndex {
  const cached = indexCache.get(published);
  if (cached) return cached;
  const byName = new Map<string, StoredRecord[]>();
  const exists = new Set<string>(['']);
  for (const r of published) {
    const list = byName.get(r.subDomain);
    if (list) list.push(r);
    else byName.set(r.subDomain, [r]);
    let name = r.subDomain;
    while (name !== '') {
      exists.add(name);
      const dot = name.indexOf('.');
      name = dot < 0 ? '' : name.slice(dot + 1);
    }
  }
  const index = { byName, exists };
  indexCache.set(published, index);
  return index;
}

function parentOf(rel: string): string {
  const dot = rel.indexOf('.');
  return dot < 0 ? '' : rel.slice(dot + 1);
}

/** The wire type of an OVH field type. */
function rrTypeOf(fieldType: string): string {
  return TXT_LIKE.has(fieldType) ? 'TXT' : fieldType;
}

function toAnswer(owner: string, r: StoredRecord, zone: string, defaultTtl: number): Answer | null {
  const ttl = r.ttl === 0 ? defaultTtl : r.ttl;
  const base = { name: owner, ttl, class: 'IN' as const };
  if (TXT_LIKE.has(r.fieldType)) return { ...base, type: 'TXT', data: txtWireStrings(r.target) };
  switch (r.fieldType) {
    case 'A':
    case 'AAAA':
      return { ...base, type: r.fieldType, data: r.target };
    case 'CNAME':
    case 'NS':
    case 'PTR':
    case 'DNAME':
      return { ...base, type: r.fieldType, data: absoluteName(r.target, zone) };
    case 'MX': {
      const mx = parseMx(r.target);
      return mx ? { ...base, type: 'MX', data: { preference: mx.preference, exchange: absoluteName(mx.exchange, zone) } } : null;
    }
    case 'SRV': {
      const srv = parseSrv(r.target);
      return srv
        ? { ...base, type: 'SRV', data: { priority: srv.priority, weight: srv.weight, port: srv.port, target: absoluteName(srv.target, zone) } }
        : null;
    }
    case 'CAA': {
      const caa = parseCaa(r.target);
      // dns-packet's type lists three tags; any tag encodes the same way.
      return caa ? { ...base, type: 'CAA', data: { flags: caa.flags, tag: caa.tag as CaaData['tag'], value: caa.value } } : null;
    }
    default:
      return otherAnswer(base, r, zone);
  }
}

/** NAPTR, TLSA, SSHFP and LOC; null for a target that is not one (or a type not served). */
function otherAnswer(base: { name: string; ttl: number; class: 'IN' }, r: StoredRecord, zone: string): Answer | null {
  switch (r.fieldType) {
    case 'NAPTR': {
      const n = naptrFields(r.target);
      return n ? { ...base, type: 'NAPTR', data: { ...n, replacement: absoluteName(n.replacement, zone) } } : null;
    }
    case 'TLSA': {
      const t = numbersAndHex(r.target, 3);
      return t
        ? { ...base, type: 'TLSA', data: { usage: t.values[0]!, selector: t.values[1]!, matchingType: t.values[2]!, certificate: Buffer.from(t.hex, 'hex') } }
        : null;
    }
    case 'SSHFP': {
      const f = numbersAndHex(r.target, 2);
      return f ? { ...base, type: 'SSHFP', data: { algorithm: f.values[0]!, hash: f.values[1]!, fingerprint: f.hex } } : null;
    }
    case 'LOC': {
      try {
        const v = parseLoc(r.target, 'target');
        const data = Buffer.alloc(16);
        data.writeUInt8(0, 0);
        data.writeUInt8(v.size, 1);
        data.writeUInt8(v.horizontal, 2);
        data.writeUInt8(v.vertical, 3);
        data.writeUInt32BE(v.latitude, 4);
        data.writeUInt32BE(v.longitude, 8);
        data.writeUInt32BE(v.altitude, 12);
        return { ...base, type: 'LOC', data };
      } catch {
        return null;
      }
    }
    default:
      return null;
  }
}

function dotted(host: string): string {
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

export class DnsResolver {
  constructor(private readonly source: DnsSource) {}

  /** The zone a name belongs to: the longest zone name it ends with. */
  private zoneFor(name: string): DnsZoneView | undefined {
    let best: string | undefined;
    for (const z of this.source.zoneNames()) {
      if ((name === z || name.endsWith(`.${z}`)) && (best === undefined || z.length > best.length)) best = z;
    }
    return best === undefined ? undefined : this.source.zone(best);
  }

  private soaAnswer(zone: DnsZoneView, negative: boolean): Answer {
    const s = this.source.soa;
    return {
      name: zone.name,
      type: 'SOA',
      class: 'IN',
      ttl: negative ? Math.min(s.ttl, s.nxDomainTtl) : s.ttl,
      data: {
        mname: dotted(this.source.nameServers[0] ?? `ns.${zone.name}`),
        rname: s.email.replace('@', '.'),
        serial: zone.serial,
        refresh: s.refresh,
        retry: s.retry,
        expire: s.expire,
        minimum: s.nxDomainTtl,
      },
    };
  }

  resolve(qname: string, qtype: string): Resolution {
    const name = qname.toLowerCase().replace(/\.$/, '');
    const zone = this.zoneFor(name);
    if (!zone) return { rcode: 'REFUSED', aa: false, answers: [], authorities: [], additionals: [] };
    const index = indexOf(zone.published);
    const res: Resolution = { rcode: 'NOERROR', aa: true, answers: [], authorities: [], additionals: [] };
    const seen = new Set<string>();
    let current = name;
    for (let hop = 0; hop < 16; hop++) {
      seen.add(current);
      const step = this.lookup(zone, index, current, qtype);
      if (step.kind === 'answer') {
        res.answers.push(...step.answers);
        this.addGlue(zone, index, step.answers, res);
        return res;
      }
      if (step.kind === 'cname') {
        res.answers.push(step.answer);
        const target = step.answer.type === 'CNAME' ? step.answer.data : '';
        const inZone = target === zone.name || target.endsWith(`.${zone.name}`);
        if (!inZone || seen.has(target)) return res;
        current = target;
        continue;
      }
      if (step.kind === 'referral') {
        if (res.answers.length === 0) res.aa = false;
        res.authorities.push(...step.ns);
        this.addGlue(zone, index, step.ns, res);
        return res;
      }
      res.rcode = step.kind === 'nxdomain' ? 'NXDOMAIN' : 'NOERROR';
      res.authorities.push(this.soaAnswer(zone, true));
      return res;
    }
    return res;
  }

  private lookup(
    zone: DnsZoneView,
    index: ZoneIndex,
    name: string,
    qtype: string,
  ):
    | { kind: 'answer'; answers: Answer[] }
    | { kind: 'cname'; answer: Answer }
    | { kind: 'referral'; ns: Answer[] }
    | { kind: 'nodata' }
    | { kind: 'nxdomain' } {
    const rel = name === zone.name ? '' : name.slice(0, -(zone.name.length + 1));
    const defaultTtl = this.source.defaultTtl;
    // Delegations: NS records at a name between the apex (excluded) and the name (included).
    const labels = rel === '' ? [] : rel.split('.');
    for (let i = labels.length - 1; i >= 0; i--) {
      const cut = labels.slice(i).join('.');
      if (cut === rel && qtype === 'DS') continue;
      const ns = (index.byName.get(cut) ?? []).filter((r) => r.fieldType === 'NS');
      if (ns.length > 0) {
        const owner = ownerName(cut, zone.name);
        return { kind: 'referral', ns: ns.map((r) => toAnswer(owner, r, zone.name, defaultTtl)).filter((a): a is Answer => a !== null) };
      }
    }
    let records = index.byName.get(rel);
    if (!records) {
      if (index.exists.has(rel)) return rel === '' ? this.apexOnly(zone, qtype) : { kind: 'nodata' };
      // RFC 4592: the wildcard at the closest encloser answers for names that do not exist.
      let encloser = parentOf(rel);
      while (!index.exists.has(encloser)) encloser = parentOf(encloser);
      records = index.byName.get(encloser === '' ? '*' : `*.${encloser}`);
      if (!records) return { kind: 'nxdomain' };
    }
    const convert = (list: StoredRecord[]): Answer[] => list.map((r) => toAnswer(name, r, zone.name, defaultTtl)).filter((a): a is Answer => a !== null);
    const soa = rel === '' && (qtype === 'SOA' || qtype === 'ANY') ? [this.soaAnswer(zone, false)] : [];
    if (qtype === 'ANY') {
      const all = [...soa, ...convert(records)];
      return all.length > 0 ? { kind: 'answer', answers: all } : { kind: 'nodata' };
    }
    const answers = [...soa, ...convert(records.filter((r) => rrTypeOf(r.fieldType) === qtype))];
    if (answers.length > 0) return { kind: 'answer', answers };
    const cname = records.find((r) => r.fieldType === 'CNAME');
    if (cname && qtype !== 'CNAME') {
      const answer = toAnswer(name, cname, zone.name, defaultTtl);
      if (answer) return { kind: 'cname', answer };
    }
    return { kind: 'nodata' };
  }

  /** The apex when it holds no record of its own (only the SOA, which OVH keeps outside the records). */
  private apexOnly(zone: DnsZoneView, qtype: string): { kind: 'answer'; answers: Answer[] } | { kind: 'nodata' } {
    return qtype === 'SOA' || qtype === 'ANY' ? { kind: 'answer', answers: [this.soaAnswer(zone, false)] } : { kind: 'nodata' };
  }

  /** In-zone A/AAAA of MX, SRV and NS targets go to the additional section. */
  private addGlue(zone: DnsZoneView, index: ZoneIndex, rrs: readonly Answer[], res: Resolution): void {
    const hosts = new Set<string>();
    for (const rr of rrs) {
      if (rr.type === 'MX') hosts.add(rr.data.exchange);
      else if (rr.type === 'SRV') hosts.add(rr.data.target);
      else if (rr.type === 'NS') hosts.add(rr.data);
    }
    for (const host of hosts) {
      if (host !== zone.name && !host.endsWith(`.${zone.name}`)) continue;
      const rel = host === zone.name ? '' : host.slice(0, -(zone.name.length + 1));
      for (const r of index.byName.get(rel) ?? []) {
        if (r.fieldType !== 'A' && r.fieldType !== 'AAAA') continue;
        const a = toAnswer(host, r, zone.name, this.source.defaultTtl);
        if (a) res.additionals.push(a);
      }
    }
  }

  /**
   * The answer to one DNS message (bytes in, bytes out); null when nothing must be sent back (not even a
   * header could be read, or the message is a response). Over UDP, answers are truncated to the size limit.
   */
  answer(message: Buffer, transport: 'udp' | 'tcp'): { reply: Buffer; question?: Question; rcode: Rcode } | null {
    let query: DecodedPacket;
    try {
      query = dnsPacket.decode(message);
    } catch {
      if (message.length < 12 || (message.readUInt16BE(2) & 0x8000) !== 0) return null;
      const echoed = message.readUInt16BE(2) & (0x7800 | dnsPacket.RECURSION_DESIRED); // opcode and RD
      return { reply: this.encode({ id: message.readUInt16BE(0), type: 'response', flags: echoed | RCODE.FORMERR, questions: [] }), rcode: 'FORMERR' };
    }
    if (query.type === 'response') return null;
    const queryFlags = query.flags ?? 0;
    const opcodeBits = queryFlags & 0x7800;
    const rd = queryFlags & dnsPacket.RECURSION_DESIRED;
    const opt = (query.additionals ?? []).find((a) => a.type === 'OPT');
    const edns: Answer[] = opt
      ? [{ type: 'OPT', name: '.', udpPayloadSize: 1232, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] }]
      : [];
    const questions = query.questions ?? [];
    const question = questions[0];
    const reply = (rcode: Rcode, res?: Resolution): Packet => ({
      id: query.id ?? 0,
      type: 'response',
      flags: opcodeBits | rd | (res?.aa ? dnsPacket.AUTHORITATIVE_ANSWER : 0) | RCODE[rcode],
      questions,
      answers: res?.answers ?? [],
      authorities: res?.authorities ?? [],
      additionals: [...(res?.additionals ?? []), ...edns],
    });
    let packet: Packet;
    let rcode: Rcode;
    if (opcodeBits !== 0) {
      rcode = 'NOTIMP';
      packet = reply(rcode);
    } else if (questions.length !== 1 || !question) {
      rcode = 'FORMERR';
      packet = reply(rcode);
    } else if (question.class !== undefined && question.class !== 'IN' && question.class !== 'ANY') {
      rcode = 'REFUSED';
      packet = reply(rcode);
    } else {
      const res = this.resolve(question.name, question.type);
      rcode = res.rcode;
      packet = reply(rcode, res);
    }
    let bytes = this.encode(packet);
    if (transport === 'udp') {
      const limit = opt && opt.type === 'OPT' ? Math.min(Math.max(opt.udpPayloadSize, 512), 4096) : 512;
      if (bytes.length > limit) {
        bytes = this.encode({ ...packet, flags: (packet.flags ?? 0) | dnsPacket.TRUNCATED_RESPONSE, answers: [], authorities: [], additionals: edns });
      }
    }
    return question ? { reply: bytes, question, rcode } : { reply: bytes, rcode };
  }

  private encode(packet: Packet): Buffer {
    try {
      return dnsPacket.encode(packet);
    } catch {
      // A record that cannot be encoded: SERVFAIL rather than a crash.
      return dnsPacket.encode({ ...packet, flags: ((packet.flags ?? 0) & ~0xf) | RCODE.SERVFAIL, answers: [], authorities: [], additionals: [] });
    }
  }
}
