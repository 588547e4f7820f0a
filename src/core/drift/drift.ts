/**
 * Drift: records changed in OVH outside dnsplane (by hand in the control panel, by another tool) reach
 * the cache within one DNSPLANE_DRIFT_INTERVAL.
 *
 * One check of one zone runs under the zone's lock, taken only if free right now
 * (pg_try_advisory_xact_lock): a zone being applied or checked elsewhere is skipped this round. With
 * several replicas, the first one whose timer fires checks; the others find the zone verified less than
 * 0.8 interval ago (zones.last_sync, "the cache last known to match OVH") and skip it, so a zone costs
 * one check per interval whatever the number of replicas.
 *
 * Cost model (OVH has no change feed):
 * - Nothing changed: ONE call, GET …/soa. OVH bumps the SOA serial on every publish (refresh); the
 *   serial equals zones.soa_serial, so the cache still matches what is published.
 * - The serial moved (someone published — dnsplane's own applies included, see below), when OVH
 *   answers expanded record lists (OvhApi.listRecordsOrIds) and the zone fits in two pages (2 × the
 *   page size, 10,000 records by default): GET …/soa plus the pages of one full read, compared with
 *   the cache record by record — two calls for most zones.
 * - Otherwise three calls, GET …/record (every id), GET …/export (the zone file: every record, no
 *   ids), GET …/soa; plus one GET per id not in the cache (a new record) and one GET per cached record
 *   under an owner name whose lines in the zone file differ from the cache (a record edited in place
 *   keeps its id: only the export shows it). Ids gone from the list leave the cache. When those GETs
 *   would outnumber the pages of a full expanded read, the zone is read whole instead. Never one GET
 *   per record of the zone.
 * - Our own applies: an apply's refresh moves the serial, and the apply does not read the new one back
 *   (that would cost a call per apply, and a publish by someone else between our refresh and that read
 *   would then be taken for ours and missed). So the first check after applies costs the calls
 *   above (3, or 2 with expanded lists), finds nothing to change, and records the serial: at most 2
 *   extra calls per zone per interval, however many applies ran in it.
 * - The serial recorded is the one read BEFORE the ids and the export, so a change that lands during a
 *   check (or between the pages of a full read) is caught by the next one, never lost.
 * - Limits: a change made through the API and not published (no refresh) does not move the serial: it
 *   is seen with the next publish. Records of one owner name are re-read together.
 *
 * An apply that died in flight in this zone is rolled back first (recoverInFlight), as under every
 * holder of the zone lock.
 */
import type { RecordRow } from '../../store/index.js';
import * as store from '../../store/index.js';
import { differingOwners, parseZoneFile } from '../../ovh/zonefile.js';
import { recoverInFlight } from '../apply/index.js';
import type { CoreContext } from '../context.js';
import { getEach } from '../zones/read-records.js';
import { toRow } from '../zones/zones.js';
import { tryZoneLockFenced } from '../zones/lock-queue.js';
import { messageOf } from '../../lib/error-message.js';

export interface DriftResult {
  zone: string;
  /** busy: the zone lock was held; skipped: not synced yet, or checked recently (minAgeMs). */
  status: 'unchanged' | 'changed' | 'busy' | 'skipped';
  /** OVH calls the check made (each retry of a call counts once more in the OVH client's metrics, not here). */
  calls: number;
  added: number;
  removed: number;
  updated: number;
  /** Dead applies rolled back first. */
  recovered: number;
  generation?: bigint;
}

export interface DriftOptions {
  /** Skip the zone when it was synced or checked less than this long ago (another replica did it). */
  minAgeMs?: number;
}

const idle = (zone: string, status: DriftResult['status']): DriftResult => ({ zone, status, calls: 0, added: 0, removed: 0, updated: 0, recovered: 0 });

/** One drift check of one zone; see the module comment. Counted in the metrics (dnsplane_drift_*). */
export async function checkZoneDrift(ctx: CoreContext, zone: string, opts: DriftOptions = {}): Promise<DriftResult> {
  const out = await driftCheck(ctx, zone, opts);
  ctx.metrics?.driftChecked(out.zone, out.status, { added: out.added, removed: out.removed, updated: out.updated });
  return out;
}

async function driftCheck(ctx: CoreContext, zone: string, opts: DriftOptions): Promise<DriftResult> {
  // No tenant asked for it: its OVH calls (through the fence: fence.ovh) take turns as background work of this zone.
  const result = await tryZoneLockFenced(ctx, zone, async (tx, fence): Promise<DriftResult> => {
    const { ovh } = fence;
    const z = await store.getZone(tx, zone);
    if (z?.state !== 'synced') return idle(zone, 'skipped');
    if (opts.minAgeMs !== undefined && opts.minAgeMs > 0 && (await store.verifiedWithin(tx, zone, opts.minAgeMs))) return idle(zone, 'skipped');
    const recovered = await recoverInFlight(ctx, tx, zone, fence);

    const soa = await ovh.getSoa(zone);
    let calls = 1;
    if (recovered === 0 && z.soaSerial !== null && BigInt(soa.serial) === z.soaSerial) {
      await store.markVerified(tx, zone, { soaSerial: soa.serial });
      return { ...idle(zone, 'unchanged'), calls };
    }

    const cached = await store.listRecords(tx, zone);
    const cachedById = new Map(cached.map((r) => [r.id, r]));
    const cachedIds = new Set(cachedById.keys());
    // Calls one full read costs in OVH's expanded mode (a page per call), when that mode is usable.
    const pages = Math.max(1, Math.ceil(cached.length / ovh.expandedPageSize));
    const expanded = () => ovh.expandedLists !== 'no';
    let listedIds: string[] | undefined;

    /** The whole zone in expanded mode, compared with the cache; undefined when OVH answered ids (kept in listedIds). */
    const readWhole = async (): Promise<Delta | undefined> => {
      const listing = await ovh.listRecordsOrIds(zone);
      calls += listing.calls;
      if (!('records' in listing)) {
        listedIds = listing.ids;
        return undefined;
      }
      const current = listing.records.map(toRow);
      const listed = new Set(current.map((r) => r.id));
      return {
        removed: cached.filter((r) => !listed.has(r.id)).map((r) => r.id),
        added: current.filter((r) => !cachedById.has(r.id)),
        updated: current.filter((r) => cachedById.has(r.id) && !sameRow(r, cachedById.get(r.id)!)),
        gone: [],
      };
    };

    /**
     * The ids, the zone file, and a GET per new id and per record of an owner name whose lines differ;
     * a full expanded read instead as soon as those GETs would outnumber its pages.
     */
    const readByIds = async (): Promise<Delta> => {
      let ids = listedIds;
      if (!ids) {
        ids = await ovh.listRecordIds(zone);
        calls++;
      }
      const exported = await ovh.getExport(zone);
      calls++;
      const listed = new Set(ids);
      const removed = cached.filter((r) => !listed.has(r.id)).map((r) => r.id);
      const kept = cached.filter((r) => listed.has(r.id));
      const gone: string[] = [];
      const get = async (wanted: string[]): Promise<RecordRow[]> => {
        const got = await getEach(ctx, ovh, zone, wanted);
        calls += got.calls;
        gone.push(...got.gone);
        return got.records.map(toRow);
      };
      const newIds = ids.filter((id) => !cachedIds.has(id));
      const whole = expanded() && newIds.length > pages ? await readWhole() : undefined;
      if (whole) return whole;
      const added = await get(newIds);
      let suspects: RecordRow[];
      try {
        const owners = differingOwners(parseZoneFile(exported, zone), [...kept, ...added]);
        suspects = kept.filter((r) => owners.has(r.subDomain.toLowerCase()));
      } catch (e) {
        ctx.log.warn({ zone, err: messageOf(e) }, 'drift: the zone export could not be read; re-reading every cached record of the zone');
        suspects = kept;
      }
      const wholeAfter = expanded() && suspects.length > pages ? await readWhole() : undefined;
      if (wholeAfter) return wholeAfter;
      const updated = (await get(suspects.map((r) => r.id))).filter((cur) => !sameRow(cur, cachedById.get(cur.id)!));
      return { removed, added, updated, gone };
    };

    // One or two pages cost no more than the ids and the export: read everything and compare.
    const { removed, added, updated, gone } = (expanded() && pages <= 2 ? await readWhole() : undefined) ?? (await readByIds());

    const deletions = [...removed, ...gone.filter((id) => cachedIds.has(id))];
    const changed = deletions.length + added.length + updated.length > 0;
    let generation: bigint | undefined;
    if (deletions.length) await store.deleteRecords(tx, zone, deletions);
    if (added.length + updated.length) await store.upsertRecords(tx, zone, [...added, ...updated]);
    if (changed || recovered > 0) {
      generation = await store.bumpGeneration(tx, zone);
      await store.notifyZoneChanged(tx, zone, generation);
    }
    await store.markVerified(tx, zone, {
      soaSerial: soa.serial,
      ...(changed ? { found: { added: added.length, removed: deletions.length, updated: updated.length } } : {}),
    });
    const out: DriftResult = {
      zone,
      status: changed ? 'changed' : 'unchanged',
      calls,
      added: added.length,
      removed: deletions.length,
      updated: updated.length,
      recovered,
      ...(generation !== undefined ? { generation } : {}),
    };
    if (changed) ctx.log.info({ ...out, generation: generation?.toString() }, 'drift: records changed outside dnsplane were read into the cache');
    return out;
  });
  return result ?? idle(zone, 'busy');
}

export type DriftState = 'unchecked' | 'in_sync' | 'drift_found';

/**
 * A zone's drift state as ListZones shows it: no check yet, the last check found OVH as cached, or
 * the last check found (and read in) changes made outside dnsplane.
 */
export function driftState(d: store.ZoneDrift): DriftState {
  if (d.checkedAt === null) return 'unchecked';
  return d.foundAt !== null && d.foundAt.getTime() === d.checkedAt.getTime() ? 'drift_found' : 'in_sync';
}

/** What a check found: ids gone from OVH, records new, records changed, ids that vanished between the list and their GET. */
interface Delta {
  removed: string[];
  added: RecordRow[];
  updated: RecordRow[];
  gone: string[];
}

function sameRow(a: RecordRow, b: RecordRow): boolean {
  return a.subDomain === b.subDomain && a.fieldType === b.fieldType && a.target === b.target && a.ttl === b.ttl;
}

export interface DriftLoop {
  /** Stops the timer and waits for a check under way. */
  stop(): Promise<void>;
}

/**
 * Checks every synced zone about every `intervalMs` (±10% jitter, so replicas spread out), one zone
 * after the other. Errors are logged; the loop goes on.
 */
export function startDriftLoop(ctx: CoreContext, intervalMs: number): DriftLoop {
  if (!(intervalMs > 0)) throw new RangeError(`drift interval: expected a positive number of ms, got ${intervalMs}`);
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  const round = async (): Promise<void> => {
    for (const z of await store.listZones(ctx.pool)) {
      if (stopped) return;
      if (z.state !== 'synced') continue;
      try {
        await checkZoneDrift(ctx, z.name, { minAgeMs: intervalMs * 0.8 });
      } catch (e) {
        ctx.log.warn({ zone: z.name, err: messageOf(e) }, 'drift check failed; retried next interval');
      }
    }
  };
  const schedule = (): void => {
    if (stopped) return;
    timer = setTimeout(
      () => {
        running = round()
          .catch((e: unknown) => ctx.log.warn({ err: messageOf(e) }, 'drift round failed'))
          .finally(() => {
            running = undefined;
            schedule();
          });
      },
      Math.round(intervalMs * (0.9 + Math.random() * 0.2)),
    );
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
