/**
 * Creating one record, never two: a POST …/record whose answer is lost may have been done, so it is
 * looked up before it is sent again (the lost-POST look-up).
 *
 * A POST is not safe to repeat: when its answer is lost (timeout, dropped connection, 5xx, 408) it may
 * have been done. So after such a failure the client waits (backoff, or Retry-After), then looks the
 * record up — by subDomain and fieldType (one listing), then the ids that are not in `knownIds`, newest
 * first, until one has the target sent — and only sends the POST again when nothing is found. A 429 is
 * a refusal (nothing was done): retried after its Retry-After without a look-up. An answer with id 0
 * (OVH's known bug: the record was created) is resolved by the same look-up. Anything else (400, 403,
 * 404) fails at once.
 *
 * `knownIds`: the ids the caller already knows in this zone (its cache, plus what it created), so that
 * an identical record that existed before is not taken for the new one.
 */
import { decodeTxt } from '../../dns/index.js';
import { OvhError } from '../errors.js';
import { joinOvhSplitTxt } from '../mapping.js';
import type { OvhRecord, OvhRecordBody } from '../types.js';
import { toRecord, type RecordFilter } from './answers.js';
import type { RecordListing } from './expanded-lists.js';
import type { OvhScope } from './scope.js';
import type { OvhTransport } from './transport.js';

/** The reads the look-up makes (OvhApi's own). */
export interface RecordReader {
  listRecordsOrIds(zone: string, filter: RecordFilter): Promise<RecordListing>;
  getRecord(zone: string, id: string, retryNotFound?: number): Promise<OvhRecord>;
}

export async function createRecordOnce(
  transport: OvhTransport,
  reader: RecordReader,
  warn: ((msg: string, fields?: Record<string, unknown>) => void) | undefined,
  zone: string,
  body: OvhRecordBody,
  knownIds: ReadonlySet<string>,
  scope: OvhScope,
): Promise<OvhRecord> {
  const path = `/domain/zone/${zone}/record`;
  for (let attempt = 0; ; attempt++) {
    let failure: OvhError | undefined;
    try {
      const created = toRecord(await transport.call(scope, 'POST', path, { ...body }, false), zone);
      if (created.id !== '0') return created;
      warn?.('OVH answered id 0 to a record creation; looking the record up', { zone, subDomain: body.subDomain, fieldType: body.fieldType });
    } catch (e) {
      if (!(e instanceof OvhError) || !e.transient) throw e;
      failure = e;
    }
    const last = attempt + 1 >= transport.retry.attempts;
    if (failure) {
      if (failure.kind === 'rate_limited' && last) throw failure;
      const delay = transport.retryDelay(failure, attempt);
      if (delay === undefined) throw failure;
      warn?.('OVH record creation failed; looking it up before sending it again', {
        zone,
        subDomain: body.subDomain,
        fieldType: body.fieldType,
        status: failure.status,
        attempt: attempt + 1,
        delayMs: delay,
      });
      await transport.sleep(delay);
      if (failure.kind === 'rate_limited') continue;
    }
    const found = await findCreated(reader, zone, body, knownIds);
    if (found) return found;
    if (!failure) throw new OvhError('POST', path, 200, 'unknown', 'OVH answered id 0 and no matching record could be found');
    if (last) throw failure;
  }
}

/** The record `body` describes among those not in `knownIds`, newest first; undefined when none. */
async function findCreated(reader: RecordReader, zone: string, body: OvhRecordBody, knownIds: ReadonlySet<string>): Promise<OvhRecord | undefined> {
  const matches = (r: OvhRecord) =>
    r.subDomain === body.subDomain.toLowerCase() && r.fieldType === body.fieldType && sameTarget(body.fieldType, body.target, r.target);
  const listing = await reader.listRecordsOrIds(zone, { fieldType: body.fieldType, subDomain: body.subDomain });
  if ('records' in listing) {
    return listing.records
      .filter((r) => !knownIds.has(r.id))
      .sort((a, b) => compareIdsDescending(a.id, b.id))
      .find(matches);
  }
  const candidates = listing.ids.filter((id) => !knownIds.has(id)).sort(compareIdsDescending);
  for (const id of candidates) {
    let r: OvhRecord;
    try {
      r = await reader.getRecord(zone, id, 2);
    } catch (e) {
      if (e instanceof OvhError && e.kind === 'not_found') continue; // deleted meanwhile
      throw e;
    }
    if (matches(r)) return r;
  }
  return undefined;
}

function compareIdsDescending(a: string, b: string): number {
  const x = /^[0-9]+$/.test(a) ? BigInt(a) : -1n;
  const y = /^[0-9]+$/.test(b) ? BigInt(b) : -1n;
  return x > y ? -1 : x < y ? 1 : 0;
}

/** Whether a record OVH answered has the target we sent (OVH quotes TXT in its answers). */
function sameTarget(fieldType: string, sent: string, answered: string): boolean {
  // A long TXT comes back split in pieces of 255 with its own quotes unescaped: joinOvhSplitTxt first.
  if (fieldType === 'TXT') return (joinOvhSplitTxt(answered) ?? decodeTxt(answered)) === decodeTxt(sent);
  return sent.trim().replace(/\s+/g, ' ').toLowerCase() === answered.trim().replace(/\s+/g, ' ').toLowerCase();
}
