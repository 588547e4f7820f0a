/**
 * Zone transfers (AXFR, RFC 5936; IXFR, RFC 1995, answered in full) over TCP, from dnsplane's cache at
 * zero OVH calls: the SOA, every record set of the zone (those Records serves), the SOA again, in
 * messages of at most 64 KiB, each signed (the first over the request's MAC, each later one over the
 * previous MAC: RFC 8945 §5.3.1). Only a key whose tenant is granted the zone may transfer it, and
 * not an ACME-only key. An IXFR whose SOA already has the current serial gets the SOA alone; over UDP
 * an IXFR gets the SOA alone too (ask over TCP), and an AXFR FORMERR (RFC 5936 §4.2: TCP only).
 *
 * Nothing holds the event loop: the messages are packed in slices and kept with the zone's
 * generation (transferMessages), and each request only copies them, sets its id and flags, and signs.
 */
import type { CoreContext } from '../core/context.js';
import { dnsZone, dnsZones, type DnsZone } from '../core/dns-door/dns-zone.js';
import { Slicer } from '../core/slices.js';
import { mayUseZone } from '../core/tenants/tenants.js';
import {
  MAX_MESSAGE_BYTES,
  OPCODE,
  RCODE,
  TYPE,
  encodeMessage,
  foldCase,
  packMessagesSteps,
  typeName,
  type Header,
  type Question,
  type ResourceRecord,
} from '../dns/wire/index.js';
import { answerTo, replyBytes, StreamSigner, type Exchange } from './exchange.js';
import { records, soaRecord } from './query.js';
import { notManaged, type Refusals } from './refusal.js';

/** The answers to a transfer request, each message's bytes in turn (signed when the request was). */
export async function* transfer(ctx: CoreContext, ex: Exchange, refusals: Refusals): AsyncGenerator<Buffer> {
  const q = ex.request.message.questions[0]!;
  const kind = typeName(q.type);
  const zone = foldCase(q.name);
  const refuse = async (rcode: number, reason: string, managed: boolean) =>
    replyBytes(ex, answerTo(ex, await refusals.refuse(ex, { zone, managed, type: kind, name: zone, reason, rcode })));
  if (ex.transport === 'udp' && q.type === TYPE.AXFR) {
    yield replyBytes(ex, answerTo(ex, RCODE.FORMERR));
    return;
  }
  const zones = await dnsZones(ctx);
  const managed = zones.names.includes(zone);
  if (!ex.key) {
    yield await refuse(RCODE.REFUSED, 'unsigned zone transfer (sign it with a TSIG key)', managed);
    return;
  }
  if (!managed) {
    yield await refuse(RCODE.NOTAUTH, notManaged(zone, zones.names), false);
    return;
  }
  if (ex.key.acmeOnly) {
    yield await refuse(RCODE.REFUSED, `key "${ex.key.name}" is ACME-only: it may not read the zone`, true);
    return;
  }
  if (!mayUseZone(ex.key.tenant, zone)) {
    yield await refuse(RCODE.REFUSED, `zone "${zone}" is not one of tenant "${ex.key.tenant.name}"'s zones`, true);
    return;
  }
  const z = await dnsZone(ctx, zone, zones.states);
  const soa = soaRecord(z);
  const clientSerial = ex.request.message.authorities.find((r) => r.type === TYPE.SOA && r.data?.kind === 'SOA');
  if (q.type === TYPE.IXFR && (ex.transport === 'udp' || (clientSerial?.data?.kind === 'SOA' && clientSerial.data.serial === z.soa.serial))) {
    yield replyBytes(ex, answerTo(ex, RCODE.NOERROR, { aa: true, answers: [soa] }));
    return;
  }
  const signer = new StreamSigner(ex);
  const packed = await transferMessages(z, ex.request.message.questions, MAX_MESSAGE_BYTES - signer.reserve);
  // The packed messages are shared; this request's id and flags go over a copy of each.
  const head = encodeMessage({ ...answerTo(ex, RCODE.NOERROR, { aa: true }), additionals: [] }).subarray(0, 4);
  const slicer = new Slicer();
  for (const unsigned of packed) {
    const m = Buffer.from(unsigned);
    head.copy(m, 0);
    yield signer.sign(m);
    await slicer.check();
  }
}

/** The header the packed messages are written with: a transfer's (opcode QUERY, AA); id, RD and the rest are each request's. */
const PACKED_HEADER: Header = { id: 0, qr: true, opcode: OPCODE.QUERY, aa: true, tc: false, rd: false, ra: false, z: 0, rcode: RCODE.NOERROR };

/** Distinct (question, size) forms of one generation's transfer kept at once: a few clients' keys. */
const PACKED_FORMS = 4;
const packedByZone = new WeakMap<DnsZone, Map<string, Promise<Buffer[]>>>();

/**
 * The unsigned messages of a transfer of `z` (the SOA, every record set, the SOA again), packed in
 * slices (dns/wire/pack.ts run by core/slices.ts) and kept with the generation (`z` lives as long
 * as the read cache keeps its base): a second transfer of an unchanged zone, or one asked while the
 * first is being packed, shares the work and the bytes. Kept per question as asked (the first
 * message echoes it, and compression points into it) and per size (the room the key's TSIG takes).
 */
export function transferMessages(z: DnsZone, questions: readonly Question[], limit: number, slicer = new Slicer()): Promise<Buffer[]> {
  let forms = packedByZone.get(z);
  if (!forms) packedByZone.set(z, (forms = new Map()));
  const key = `${limit}|${questions.map((q) => `${q.name}/${q.type}/${q.class}`).join(',')}`;
  let packed = forms.get(key);
  if (!packed) {
    if (forms.size >= PACKED_FORMS) forms.delete(forms.keys().next().value!);
    const kept = forms;
    packed = slicer.run(packMessagesSteps(PACKED_HEADER, questions, zoneRecords(z), limit));
    packed.catch(() => kept.delete(key));
    forms.set(key, packed);
  }
  return packed;
}

/** The records of a transfer, made as they are packed. */
function* zoneRecords(z: DnsZone): Generator<ResourceRecord> {
  const soa = soaRecord(z);
  yield soa;
  for (const e of z.endpoints) yield* records(e.dnsName, e);
  yield soa;
}
