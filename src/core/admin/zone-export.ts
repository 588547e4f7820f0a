/**
 * A zone as a file (`dnsplane zone export`, AdminService.ExportZone, the console's download): every
 * record of the cache at one generation — the records of every tenant, of nobody, and of the types
 * dnsplane does not manage —, as OVH stores them, written as an RFC 1035 zone file
 * (ovh/zonefile.ts). From the read cache's base of the current generation (core/reads/read-cache.ts, shared
 * with Records and the DNS door), or one snapshot of the cache: 0 OVH calls (a zone never synced is read once,
 * as every first reader reads it). The SOA is the one the DNS door serves (core/dns-door/dns-zone.ts: serial
 * = the generation). With `owners`, each record carries its owner as a comment: `; owner team1`,
 * `; owner team1 (shared)` for a target of a shared set, `; no owner`.
 */
import { recordSetKey } from '../../dns/types.js';
import { ovhTargetToCanonical, ovhRecordKey } from '../../ovh/mapping.js';
import { formatZoneFile, type ZoneFileEntry, zoneFileTarget } from '../../ovh/zonefile.js';
import { isRecordType, type RecordType } from '../../dns/types.js';
import type { OvhRecord } from '../../ovh/types.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { SOA_TIMERS, soaSerial } from '../dns-door/dns-zone.js';
import { readCacheOf } from '../reads/read-cache.js';
import { readZoneBase, type ZoneBase } from '../reads/zone-base.js';
import { Slicer } from '../slices.js';
import { ensureSynced } from '../zones/zones.js';
import { readIntent } from '../apply/undo.js';
import { InvalidInputError } from '../../dns/errors.js';

export interface ZoneExport {
  zone: string;
  generation: bigint;
  recordCount: number;
  /** The zone file's text. */
  text: string;
}

export interface ExportOptions {
  /** Write each record's owner as a comment (the zone as it is now only: past ownership is not kept). */
  owners?: boolean;
  /** When the export was made (the header says so). Default: now. */
  now?: Date;
  /**
   * The zone as it was at a past generation or time (`dnsplane zone at`), from the journal: the cache
   * now with every apply since undone, newest first, by what its intent says the touched names held.
   */
  at?: { generation: bigint } | { time: Date };
}

/**
 * The zone now: the read cache's base at its current generation (kept, or built once for every reader
 * at once, as Records and the DNS door take it), else one snapshot read.
 */
async function currentBase(ctx: CoreContext, zone: string, slicer: Slicer): Promise<ZoneBase> {
  const cache = readCacheOf(ctx);
  // baseAt answers undefined when the zone moved past the generation just read: read it again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const state = (await cache.zoneStates.get()).get(zone);
    if (state?.state !== 'synced') break;
    const base = await cache.baseExactlyAt(zone, state.generation);
    if (base) return base;
  }
  return store.withSnapshot(ctx.pool, (q) => readZoneBase(q, zone, slicer));
}

export async function exportZone(ctx: CoreContext, zone: string, options: ExportOptions = {}): Promise<ZoneExport> {
  await ensureSynced(ctx, zone);
  const slicer = new Slicer();
  // The zone as it was needs the records and the journal in one snapshot; the zone now, the cache's base.
  const { base, records, history } = options.at
    ? await store.withSnapshot(ctx.pool, async (q) => {
        const b = await readZoneBase(q, zone, slicer);
        const past = await recordsAt(q, zone, b.records, options.at!);
        return { base: b, records: past.records, history: past };
      })
    : await currentBase(ctx, zone, slicer).then((b) => ({ base: b, records: b.records, history: undefined }));
  if (history && options.owners)
    throw new InvalidInputError('include_owners', 'owners are known for the zone as it is now only; leave it out with a past generation or time');
  const ownerOf = options.owners ? ownerComments(base.ownership) : undefined;
  const entries = await slicer.map(
    records,
    (r): ZoneFileEntry => ({
      subDomain: r.subDomain,
      fieldType: r.fieldType,
      ttl: r.ttl,
      target: zoneFileTarget(r.fieldType, r.target, r.zone),
      ...(ownerOf ? { comment: ownerOf(r) } : {}),
    }),
    512,
  );
  const apexNs = base.endpoints.find((e) => e.dnsName === zone && e.recordType === 'NS');
  const now = options.now ?? new Date();
  const generation = history?.generation ?? base.generation;
  const comments = history
    ? [
        `${zone}: ${entries.length} records as they were at ${'generation' in options.at! ? `generation ${options.at.generation}` : options.at!.time.toISOString()}, from dnsplane's journal: the cache at generation ${base.generation} with ${history.undone.length} apply(s) since undone${history.undone.length ? ` (journal ${history.undone.join(', ')})` : ''} (${now.toISOString()})`,
        ...history.caveats,
      ]
    : [`${zone}: ${entries.length} records, exported by dnsplane from its cache at generation ${base.generation} (${now.toISOString()})`];
  // The OVH account the zone is in, when it is not the OVH_* variables' (core/accounts/).
  const account = ctx.accounts?.registry.accountOf(zone);
  const text = formatZoneFile(zone, entries, {
    comments: [
      ...comments,
      ...(account && account !== 'default' ? [`In OVH account ${account}.`] : []),
      'A record without a TTL is at the zone default (OVH: 3600).',
    ],
    soa: { mname: apexNs?.targets[0] ?? `ns.${zone}`, rname: `hostmaster.${zone}`, serial: soaSerial(generation), ...SOA_TIMERS },
  });
  return { zone, generation, recordCount: entries.length, text };
}

/**
 * The zone's records at a past point: `now` (the cache) with every apply done since undone, newest
 * first — the records of each name its intent touched put back to what the intent says they held just
 * before it. What no apply made (a re-read from OVH after a change outside dnsplane) is not undone:
 * named in `caveats`. `generation`: the one asked, or the generation before the oldest apply undone.
 */
async function recordsAt(
  q: store.Queryable,
  zone: string,
  now: readonly OvhRecord[],
  at: { generation: bigint } | { time: Date },
): Promise<{ records: OvhRecord[]; undone: string[]; caveats: string[]; generation: bigint | undefined }> {
  await refuseBeyondHorizon(q, zone, at);
  const { applies, rereads } = await store.listAppliesAfter(q, zone, at);
  const keyOf = (r: { subDomain: string; fieldType: string }) => `${r.subDomain.toLowerCase()} ${r.fieldType.toUpperCase()}`;
  const byName = new Map<string, OvhRecord[]>();
  for (const r of now) byName.set(keyOf(r), [...(byName.get(keyOf(r)) ?? []), r]);
  for (const row of applies) {
    const intent = readIntent(row.intent);
    for (const n of intent.names) {
      const before = intent.before.filter((r) => keyOf(r) === keyOf(n)).map((r): OvhRecord => ({ ...r, zone }));
      if (before.length) byName.set(keyOf(n), before);
      else byName.delete(keyOf(n));
    }
  }
  const caveats = rereads.map(
    (r) =>
      `the cache was re-read from OVH since (journal ${r.id}, ${r.finishedAt?.toISOString() ?? ''}): changes made outside dnsplane before it are in this file as they were then read`,
  );
  const records = [...byName.values()].flat().sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
  return { records, undone: applies.map((a) => a.id), caveats, generation: 'generation' in at ? at.generation : undefined };
}

/**
 * InvalidInputError when the zone's journal was pruned (core/journal/prune.ts) past the point asked:
 * an apply since it is gone, so undoing what is left would answer a zone that never was.
 */
async function refuseBeyondHorizon(q: store.Queryable, zone: string, at: { generation: bigint } | { time: Date }): Promise<void> {
  const h = await store.getJournalHorizon(q, zone);
  if (!h) return;
  const pruned = `the journal of ${zone} was pruned before ${h.prunedBefore.toISOString()} (dnsplane journal prune)`;
  if ('time' in at && at.time < h.prunedBefore)
    throw new InvalidInputError('at_time', `${pruned}: the zone can be shown as it was at that time or later, not at ${at.time.toISOString()}`);
  if ('generation' in at && h.generation !== null && at.generation < h.generation)
    throw new InvalidInputError(
      'at_generation',
      `${pruned}, up to generation ${h.generation}: the zone can be shown at that generation or later, not at ${at.generation}`,
    );
}

/** The owner comment of each record: the set's owner, or the target's in a shared set. */
function ownerComments(rows: readonly store.OwnershipRow[]): (r: OvhRecord) => string {
  const bySet = new Map<string, store.OwnershipRow>();
  const byTarget = new Map<string, store.OwnershipRow>();
  for (const row of rows) {
    const key = recordSetKey(row.dnsName, row.recordType as RecordType);
    if (row.target === '') bySet.set(key, row);
    else byTarget.set(`${key} ${row.target}`, row);
  }
  return (r) => {
    const type = r.fieldType.toUpperCase();
    if (!isRecordType(type)) return 'no owner (a type dnsplane does not manage)';
    const key = ovhRecordKey(r, r.zone);
    const canonical = ovhTargetToCanonical(type, r.target, r.zone);
    const shared = canonical !== undefined ? byTarget.get(`${key} ${canonical}`) : undefined;
    if (shared) return `owner ${shared.tenantName} (shared)`;
    const whole = bySet.get(key);
    return whole ? `owner ${whole.tenantName}` : 'no owner';
  };
}
