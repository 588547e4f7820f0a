/**
 * UPDATE (opcode 5, RFC 2136) at the door: the message read as RFC 2136 §2 and §3 say, then handed to
 * core as one apply (core/dns-door/dns-update.ts), whose answer becomes the RCODE (update-outcome.ts). In the RFC's order:
 * - the zone section: exactly one SOA question, else FORMERR; a zone dnsplane does not manage (or
 *   another class): NOTAUTH;
 * - the key: an unsigned UPDATE is REFUSED; a tenant not granted the zone is REFUSED before anything
 *   of the zone is looked at (BIND's allow-update does the same ahead of the prerequisites);
 * - the prerequisite section, read here (NOTZONE, FORMERR) and checked in core, under the zone lock;
 * - the update section, read here; what is malformed in it is answered by core after the
 *   prerequisites (FORMERR, NOTZONE), permission and ownership are checked there.
 * Every answer other than NOERROR goes through the refusal path (refusal.ts).
 */
import type { CoreContext } from '../core/context.js';
import { applyDnsUpdate, type DnsPrerequisite, type DnsUpdate, type DnsUpdateOp } from '../core/dns-door/dns-update.js';
import { dnsZones } from '../core/dns-door/dns-zone.js';
import { mayUseZone } from '../core/tenants/tenants.js';
import { InvalidInputError } from '../dns/errors.js';
import { CLASS, RCODE, TYPE, foldCase, recordTypeOf, targetOfData, typeName, type Message, type ResourceRecord } from '../dns/wire/index.js';
import { answerTo, type Exchange } from './exchange.js';
import { notManaged, type Refusals } from './refusal.js';
import { outcomeOf, outcomeOfError } from './update-outcome.js';
import { hostOf } from '../net/address.js';
import type { TenantRateLimiter } from '../lib/token-bucket.js';

/** Types no update may name (RFC 2136 §3.4.1.2): meta types and queries. */
const META = new Set<number>([TYPE.ANY, TYPE.AXFR, TYPE.IXFR, TYPE.OPT, TYPE.TSIG, 253 /* MAILB */, 254 /* MAILA */]);

class Malformed extends Error {
  constructor(
    readonly rcode: 'FORMERR' | 'NOTZONE',
    message: string,
    readonly rr?: ResourceRecord,
  ) {
    super(message);
  }
}

/**
 * How long an UPDATE's NOERROR may wait for its change to be visible: DNSPLANE_DNS_UPDATE_WAIT
 * (maxMs, 0: not at all), and never past what the client waits for its answer
 * (DNSPLANE_DNS_CLIENT_TIMEOUT, less ANSWER_MARGIN_MS, counted from the message's arrival): an answer
 * after the client gave up is no answer — cert-manager's first Present and CleanUp failed that way.
 */
export interface UpdateWait {
  maxMs: number;
  clientTimeoutMs: number;
}

export const NO_WAIT: UpdateWait = { maxMs: 0, clientTimeoutMs: 2_000 };

/** What the answer leaves before the client's timeout: the network, signing, a busy event loop. */
export const ANSWER_MARGIN_MS = 500;

/**
 * `started`: the message's arrival (performance.now()), from which the client's timeout runs; `rate`:
 * the UPDATEs each tenant may send (DNSPLANE_DNS_UPDATE_RATE), keyed by tenant, whatever its address.
 */
export async function answerUpdate(
  ctx: CoreContext,
  ex: Exchange,
  refusals: Refusals,
  wait: UpdateWait = NO_WAIT,
  started = performance.now(),
  rate?: TenantRateLimiter,
): Promise<Message> {
  const m = ex.request.message;
  const q = m.questions[0];
  const zone = foldCase(q?.name ?? '');
  const zones = await dnsZones(ctx);
  const managed = zones.names.includes(zone);
  const refuse = async (rcode: number, reason: string, at: { name?: string; type?: string } = {}) =>
    answerTo(ex, await refusals.refuse(ex, { zone, managed, name: zone, ...at, reason, rcode }));

  if (m.questions.length !== 1 || q?.type !== TYPE.SOA)
    return refuse(
      RCODE.FORMERR,
      `the zone section must hold exactly one SOA question (it holds ${m.questions.length}${q ? `, type ${typeName(q.type)}` : ''})`,
    );
  if (q.class !== CLASS.IN) return refuse(RCODE.NOTAUTH, `class ${q.class}: dnsplane serves class IN only`);
  if (!managed) return refuse(RCODE.NOTAUTH, notManaged(zone, zones.names));
  const key = ex.key;
  if (!key) return refuse(RCODE.REFUSED, 'unsigned UPDATE (sign it with a TSIG key)');
  if (!mayUseZone(key.tenant, zone)) return refuse(RCODE.REFUSED, `zone "${zone}" is not one of tenant "${key.tenant.name}"'s zones`);
  const over = rate?.take(key.tenant.name);
  if (over !== undefined) {
    // Counted and summarized, not logged nor journaled one by one: a flood would write a row each.
    const reason = `tenant "${key.tenant.name}" is over ${rate!.perSecond} DNS UPDATEs per second (DNSPLANE_DNS_UPDATE_RATE); retry in ${over} s`;
    return answerTo(ex, await refusals.refuse(ex, { zone, managed, name: zone, reason, rcode: RCODE.REFUSED, quiet: true }));
  }

  let prerequisites: DnsPrerequisite[];
  try {
    prerequisites = readPrerequisites(zone, m.answers);
  } catch (e) {
    if (!(e instanceof Malformed)) throw e;
    return refuse(RCODE[e.rcode], `prerequisite: ${e.message}`, at(e.rr));
  }
  let updates: DnsUpdate['updates'];
  try {
    updates = m.authorities.map((rr) => readUpdate(zone, rr));
  } catch (e) {
    if (!(e instanceof Malformed)) throw e;
    updates = { malformed: `update: ${e.message}`, rcode: e.rcode, ...at(e.rr) };
  }
  const answerBy = started + wait.clientTimeoutMs - ANSWER_MARGIN_MS;
  const outcome = await applyDnsUpdate(
    ctx,
    key.tenant,
    { zone, prerequisites, updates, acmeOnly: key.acmeOnly },
    key.name,
    hostOf(ex.source),
    wait.maxMs > 0 ? () => Math.min(wait.maxMs, answerBy - performance.now()) : () => 0,
  ).then(outcomeOf, outcomeOfError);
  if (outcome.rcode === 'NOERROR') return answerTo(ex, RCODE.NOERROR);
  return refuse(RCODE[outcome.rcode], outcome.reason, { ...(outcome.name ? { name: outcome.name } : {}), ...(outcome.type ? { type: outcome.type } : {}) });
}

function at(rr: ResourceRecord | undefined): { name?: string; type?: string } {
  return rr ? { name: foldCase(rr.name), type: typeName(rr.type) } : {};
}

/** The name of a record of the message, which must be in the zone (NOTZONE). */
function nameIn(zone: string, rr: ResourceRecord): string {
  const name = foldCase(rr.name);
  // "a\.example.test" ends with ".example.test" in text but is no name of the zone: escapes are refused.
  if (name.includes('\\') || !(name === zone || name.endsWith(`.${zone}`))) throw new Malformed('NOTZONE', `${name} is not in zone ${zone}`, rr);
  return name;
}

function empty(rr: ResourceRecord): boolean {
  return rr.data === undefined && (rr.raw === undefined || rr.raw.length === 0);
}

/** A record's value as dnsplane's canonical target, or null when dnsplane cannot hold it. */
function targetOf(rr: ResourceRecord): string | null {
  if (!rr.data || recordTypeOf(rr.type) === undefined) return null;
  try {
    return targetOfData(rr.data, 'value').target;
  } catch (e) {
    if (e instanceof InvalidInputError) return null;
    throw e;
  }
}

/** RFC 2136 §2.4 and §3.2: the five forms; TTL 0; RDLENGTH 0 but for the value-dependent form. */
function readPrerequisites(zone: string, rrs: readonly ResourceRecord[]): DnsPrerequisite[] {
  const out: DnsPrerequisite[] = [];
  const valued = new Map<string, { name: string; type: string; targets: Array<string | null> }>();
  for (const rr of rrs) {
    const name = nameIn(zone, rr);
    if (rr.ttl !== 0) throw new Malformed('FORMERR', `${name}: a prerequisite's TTL must be 0`, rr);
    const type = typeName(rr.type);
    if (rr.class === CLASS.ANY || rr.class === CLASS.NONE) {
      if (!empty(rr)) throw new Malformed('FORMERR', `${name}: a class ${rr.class === CLASS.ANY ? 'ANY' : 'NONE'} prerequisite carries no data`, rr);
      const inUse = rr.class === CLASS.ANY;
      if (rr.type === TYPE.ANY) out.push({ kind: inUse ? 'name-in-use' : 'name-not-in-use', name });
      else if (META.has(rr.type)) throw new Malformed('FORMERR', `${name}: type ${type} in a prerequisite`, rr);
      else out.push({ kind: inUse ? 'rrset-exists' : 'rrset-not-exists', name, type });
      continue;
    }
    if (rr.class !== CLASS.IN || META.has(rr.type) || empty(rr)) throw new Malformed('FORMERR', `${name} ${type}: not a prerequisite form`, rr);
    const k = `${name} ${type}`;
    const group = valued.get(k) ?? { name, type, targets: [] };
    group.targets.push(targetOf(rr));
    valued.set(k, group);
  }
  for (const g of valued.values()) out.push({ kind: 'rrset-equals', ...g });
  return out;
}

/** RFC 2136 §2.5 and §3.4.1: add (class IN), delete RRset / name (class ANY), delete one record (class NONE). */
function readUpdate(zone: string, rr: ResourceRecord): DnsUpdateOp {
  const name = nameIn(zone, rr);
  const type = typeName(rr.type);
  if (rr.class === CLASS.IN) {
    if (META.has(rr.type) || empty(rr)) throw new Malformed('FORMERR', `${name} ${type}: not a record to add`, rr);
    if (!rr.data || recordTypeOf(rr.type) === undefined) return { kind: 'add', name, type, ttl: rr.ttl };
    try {
      return { kind: 'add', name, type, target: targetOfData(rr.data, `${name} ${type}`).target, ttl: rr.ttl };
    } catch (e) {
      if (e instanceof InvalidInputError) return { kind: 'add', name, type, invalid: e.message, ttl: rr.ttl };
      throw e;
    }
  }
  if (rr.ttl !== 0) throw new Malformed('FORMERR', `${name} ${type}: a deletion's TTL must be 0`, rr);
  if (rr.class === CLASS.ANY) {
    if (!empty(rr)) throw new Malformed('FORMERR', `${name} ${type}: a class ANY deletion carries no data`, rr);
    if (rr.type === TYPE.ANY) return { kind: 'delete-name', name };
    if (META.has(rr.type)) throw new Malformed('FORMERR', `${name}: type ${type} cannot be deleted`, rr);
    return { kind: 'delete-rrset', name, type };
  }
  if (rr.class === CLASS.NONE) {
    if (META.has(rr.type) || empty(rr)) throw new Malformed('FORMERR', `${name} ${type}: not a record to delete`, rr);
    return { kind: 'delete-record', name, type, target: targetOf(rr) };
  }
  throw new Malformed('FORMERR', `${name} ${type}: class ${rr.class} is no update form`, rr);
}
