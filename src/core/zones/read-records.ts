/**
 * Reading records from OVH, the one way every reader does it (first sync, the drift check, the
 * targeted re-read after a failed apply, recovery): a listing in OVH's expanded mode — full records, a
 * page per call — when OVH answers it, else the ids and one GET per id (the client decides and
 * remembers which: OvhApi.listRecordsOrIds, DNSPLANE_OVH_EXPANDED_LISTS). Through the client the
 * caller hands over: under a zone lock, its fence's (core/zones/fence.ts).
 */
import type { OvhApi } from '../../ovh/client.js';
import { OvhError } from '../../ovh/errors.js';
import type { OvhRecord } from '../../ovh/types.js';
import type { CoreContext } from '../context.js';

export interface RecordFilter {
  fieldType?: string;
  subDomain?: string;
}

export interface ReadOptions {
  /** One GET per id only: GETs in flight at once. Default settings.syncConcurrency. */
  concurrency?: number;
  /** One GET per id only: ids not worth a GET (the caller knows they are not what it reads). */
  skip?: (id: string) => boolean;
  /** One GET per id only: called after each GET with the count done and the number of ids. */
  progress?: (done: number, total: number) => void;
}

export interface ReadResult {
  records: OvhRecord[];
  /** OVH calls made (retries aside). */
  calls: number;
  /** How they were read. */
  mode: 'expanded' | 'per-id';
}

/**
 * The zone's records matching the filter, as OVH holds them now. A record deleted between the
 * listing and its GET (404 after the client's retries) is left out. Expanded answers hold every
 * record of the filter, `skip` or not: callers filter what they keep.
 */
export async function readRecords(ctx: CoreContext, ovh: OvhApi, zone: string, filter: RecordFilter = {}, opts: ReadOptions = {}): Promise<ReadResult> {
  const listing = await ovh.listRecordsOrIds(zone, filter);
  if ('records' in listing) return { records: listing.records, calls: listing.calls, mode: 'expanded' };
  const ids = opts.skip ? listing.ids.filter((id) => !opts.skip!(id)) : listing.ids;
  const got = await getEach(ctx, ovh, zone, ids, opts);
  return { records: got.records, calls: listing.calls + got.calls, mode: 'per-id' };
}

/** One GET per id (bounded concurrency), dropping ids that are gone. */
export async function getEach(
  ctx: CoreContext,
  ovh: OvhApi,
  zone: string,
  ids: readonly string[],
  opts: Pick<ReadOptions, 'concurrency' | 'progress'> = {},
): Promise<{ records: OvhRecord[]; calls: number; gone: string[] }> {
  const gone: string[] = [];
  const got = await mapLimit(
    [...ids],
    opts.concurrency ?? ctx.settings.syncConcurrency,
    async (id) => {
      try {
        return await ovh.getRecord(zone, id, 2);
      } catch (e) {
        if (e instanceof OvhError && e.kind === 'not_found') {
          gone.push(id); // deleted between the listing and the GET
          return undefined;
        }
        throw e;
      }
    },
    opts.progress ? (done) => opts.progress!(done, ids.length) : undefined,
  );
  return { records: got.filter((r): r is OvhRecord => r !== undefined), calls: ids.length, gone };
}

/** Maps with at most `limit` calls in flight, keeping the order. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>, progress?: (done: number) => void): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
      done++;
      progress?.(done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
