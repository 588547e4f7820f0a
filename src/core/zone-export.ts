/**
 * A zone as a file (`dnsplane zone export`, AdminService.ExportZone, the console's download): every
 * record of the cache at one generation — the records of every tenant, of nobody, and of the types
 * dnsplane does not manage —, as OVH stores them, written as an RFC 1035 zone file
 * (ovh/zonefile.ts). From one snapshot of the cache: 0 OVH calls (a zone never synced is read once,
 * as every first reader reads it). The SOA is the one the DNS door serves (core/dns-zone.ts: serial
 * = the generation). With `owners`, each record carries its owner as a comment: `; owner team1`,
 * `; owner team1 (shared)` for a target of a shared set, `; no owner`.
 */
import { formatTxtPresentation } from '../dns/txt.js';
import { recordSetKey } from '../dns/types.js';
import { ovhTargetToCanonical, ovhRecordKey } from '../ovh/mapping.js';
import { formatZoneFile, type ZoneFileEntry } from '../ovh/zonefile.js';
import { isRecordType, type RecordType } from '../dns/types.js';
import type { OvhRecord } from '../ovh/types.js';
import * as store from '../store/index.js';
import type { CoreContext } from './context.js';
import { SOA_TIMERS, soaSerial } from './dns-zone.js';
import { readZoneBase } from './read-cache.js';
import { Slicer } from './slices.js';
import { ensureSynced } from './zones.js';

export interface ZoneExport {
  zone: string;
  generation: bigint;
  recordCount: number;
  /** The zone file's text. */
  text: string;
}

export interface ExportOptions {
  /** Write each record's owner as a comment. */
  owners?: boolean;
  /** When the export was made (the header says so). Default: now. */
  now?: Date;
}

export async function exportZone(ctx: CoreContext, zone: string, options: ExportOptions = {}): Promise<ZoneExport> {
  await ensureSynced(ctx, zone);
  const slicer = new Slicer();
  const base = await store.withSnapshot(ctx.pool, (q) => readZoneBase(q, zone, slicer));
  const ownerOf = options.owners ? ownerComments(base.ownership) : undefined;
  const entries = await slicer.map(
    base.records,
    (r): ZoneFileEntry => ({ subDomain: r.subDomain, fieldType: r.fieldType, ttl: r.ttl, target: presentation(r), ...(ownerOf ? { comment: ownerOf(r) } : {}) }),
    512,
  );
  const apexNs = base.endpoints.find((e) => e.dnsName === zone && e.recordType === 'NS');
  const now = options.now ?? new Date();
  const text = formatZoneFile(zone, entries, {
    comments: [
      `${zone}: ${entries.length} records, exported by dnsplane from its cache at generation ${base.generation} (${now.toISOString()})`,
      'A record without a TTL is at the zone default (OVH: 3600).',
    ],
    soa: { mname: apexNs?.targets[0] ?? `ns.${zone}`, rname: `hostmaster.${zone}`, serial: soaSerial(base.generation), ...SOA_TIMERS },
  });
  return { zone, generation: base.generation, recordCount: entries.length, text };
}

/**
 * A record's target as a zone file writes it: as OVH stores it, but TXT in RFC 1035's presentation
 * form (OVH keeps the quotes inside a value unescaped: `"say "hi""`, which a zone file reader splits).
 */
function presentation(r: OvhRecord): string {
  if (r.fieldType.toUpperCase() !== 'TXT') return r.target;
  const text = ovhTargetToCanonical('TXT', r.target, r.zone);
  return text === undefined ? r.target : formatTxtPresentation(text);
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
