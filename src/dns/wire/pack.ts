/**
 * Records packed into as many messages as they need (a zone transfer's answer, RFC 5936 §2.2): each
 * message as full as `limit` allows, the question in the first only, each one's bytes exactly what
 * encodeMessage writes for the same header, question and records. As steps (dns/steps.ts): a zone of
 * 50,000 records is run in slices by the caller, never encoded in one block.
 */
import { ITEMS_PER_STEP, type Steps } from '../steps.js';
import { writeHeader, writeRecord, type Header, type Question, type ResourceRecord } from './message.js';
import { MessageTooLargeError, Writer } from './writer.js';

/**
 * The unsigned messages holding `records` in order, each at most `limit` bytes, under `header` (its
 * counts set per message). A record too large for a message of its own throws MessageTooLargeError.
 */
export function* packMessagesSteps(header: Header, questions: readonly Question[], records: Iterable<ResourceRecord>, limit: number): Steps<Buffer[]> {
  const out: Buffer[] = [];
  const next = records[Symbol.iterator]();
  let pending = next.next();
  let steps = 0;
  let first = true;
  while (!pending.done) {
    const w = new Writer(limit);
    const qs = first ? questions : [];
    writeHeader(w, header, [qs.length, 0, 0, 0]);
    for (const q of qs) {
      w.name(q.name);
      w.u16(q.type);
      w.u16(q.class);
    }
    let count = 0;
    while (!pending.done) {
      const mark = w.pos;
      try {
        writeRecord(w, pending.value);
      } catch (e) {
        if (!(e instanceof MessageTooLargeError) || count === 0) throw e;
        w.rewind(mark);
        break;
      }
      count++;
      pending = next.next();
      if (++steps % ITEMS_PER_STEP === 0) yield;
    }
    w.patch16(6, count);
    first = false;
    out.push(w.done());
  }
  return out;
}
