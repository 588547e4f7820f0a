/**
 * Zone transfers (AXFR, RFC 5936; IXFR, RFC 1995, answered in full) over TCP, from dnsplane's cache at
 * zero OVH calls: the SOA, every record set of the zone (those Records serves), the SOA again, in
 * messages of at most 64 KiB, each signed (the first over the request's MAC, each later one over the
 * previous MAC: RFC 8945 §5.3.1). Only a key whose tenant is granted the zone may transfer it, and
 * not an ACME-only key. An IXFR whose SOA already has the current serial gets the SOA alone; over UDP
 * an IXFR gets the SOA alone too (ask over TCP), and an AXFR FORMERR (RFC 5936 §4.2: TCP only).
 */
import type { CoreContext } from '../core/context.js';
import { dnsZone, dnsZones } from '../core/dns-zone.js';
import { mayUseZone } from '../core/tenants.js';
import { MessageTooLargeError, RCODE, TYPE, Writer, foldCase, typeName, writeHeader, writeRecord, type ResourceRecord } from '../dns/wire/index.js';
import { answerTo, replyBytes, StreamSigner, type Exchange } from './exchange.js';
import { records, soaRecord } from './query.js';
import { notManaged, type Refusals } from './refusal.js';

/** The answers to a transfer request, each message's bytes in turn (signed when the request was). */
export async function* transfer(ctx: CoreContext, ex: Exchange, refusals: Refusals): AsyncGenerator<Buffer> {
  const q = ex.request.message.questions[0]!;
  const kind = typeName(q.type);
  const zone = foldCase(q.name);
  const refuse = async (rcode: number, reason: string, managed: boolean) => replyBytes(ex, answerTo(ex, await refusals.refuse(ex, { zone, managed, type: kind, name: zone, reason, rcode })));
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
  yield* messages(ex, [soa, ...z.endpoints.flatMap((e) => records(e.dnsName, e)), soa]);
}

/** Packs the records into messages (the question in the first only), each signed in turn. */
function* messages(ex: Exchange, all: ResourceRecord[]): Generator<Buffer> {
  const signer = new StreamSigner(ex);
  const limit = 0xffff - signer.reserve;
  const header = answerTo(ex, RCODE.NOERROR, { aa: true }).header;
  let i = 0;
  let first = true;
  while (i < all.length) {
    const w = new Writer(limit);
    const questions = first ? ex.request.message.questions : [];
    writeHeader(w, header, [questions.length, 0, 0, 0]);
    for (const q of questions) {
      w.name(q.name);
      w.u16(q.type);
      w.u16(q.class);
    }
    let count = 0;
    while (i < all.length) {
      const mark = w.pos;
      try {
        writeRecord(w, all[i]!);
      } catch (e) {
        if (!(e instanceof MessageTooLargeError) || count === 0) throw e;
        w.rewind(mark);
        break;
      }
      count++;
      i++;
    }
    w.patch16(6, count);
    first = false;
    yield signer.sign(w.done());
  }
}
