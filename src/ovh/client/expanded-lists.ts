/**
 * OVH's expanded list mode for GET …/record: pages of full records instead of ids, read with the
 * paging headers; and what this process has learnt of whether OVH answers it.
 *
 * Expanded mode (unless `off`, or OVH already refused it in this process): GET …/record with
 * `X-Pagination-Mode: CachedObjectList-Pages`, `X-Pagination-Size` (the page size),
 * `X-Pagination-Number` (1, 2, …) and `Pragma: no-cache` on every page (OVH caches the list on its
 * side; a page served from that cache could be older than our last write). The answer is a page of
 * full records and `X-Pagination-Elements` the total: the remaining pages are asked at once (each
 * under the rate limit), with the page size the server says it used. Pages read while the zone
 * changes may overlap or skip: the pages are read again once when their totals disagree or the ids
 * do not add up, and the ids are listed instead after a second mismatch.
 *
 * When the answer is not an array of records — an array of ids (the mode ignored), or a 4xx other
 * than 401/403/404/408/429 (the mode refused) — `auto` falls back: `{ ids }` (the ids answered, when
 * they are the whole list, else one plain listing), remembers it for the process and logs it once;
 * `on` throws. The caller then GETs the ids one by one. An empty answer proves nothing either way.
 * Errors that would fail a plain listing too (5xx after retries, auth, unknown zone) are thrown.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { EXPANDED_MODE } from '../../ovhwire/routes.js';
import { OvhError } from '../errors.js';
import type { OvhRecord } from '../types.js';
import { filterParams, toRecord, type RecordFilter } from './answers.js';
import type { OvhScope } from './scope.js';
import type { Exchange, OvhTransport } from './transport.js';

/**
 * auto: try OVH's expanded list mode, fall back to one GET per id when OVH does not answer it, and
 * remember which for the process; on: expanded only (an answer that is not records is an error);
 * off: one GET per id, as external-dns reads.
 */
export type ExpandedListsMode = 'auto' | 'on' | 'off';

/** What this process knows of the expanded list mode: untried, answered with records, or not. */
export type ExpandedListsState = 'unknown' | 'yes' | 'no';

/** A record listing: full records (expanded mode), or ids to GET one by one. `calls`: the OVH calls it took. */
export type RecordListing = { records: OvhRecord[]; calls: number } | { ids: string[]; calls: number };

/** Records asked per expanded page unless told otherwise (OVH's own console asks 5000 on such routes). */
export const DEFAULT_EXPANDED_PAGE_SIZE = 5000;

/** One expanded read: the whole list; or not records (with the ids when they were the whole list); or pages that did not add up. */
type ExpandedRead =
  | { records: OvhRecord[]; calls: number }
  | { refused: string; status: number; ids?: string[]; calls: number }
  | { inconsistent: true; calls: number };

export class ExpandedLists {
  readonly mode: ExpandedListsMode;
  readonly pageSize: number;
  private current: ExpandedListsState;

  constructor(
    private readonly transport: OvhTransport,
    private readonly opts: {
      mode?: ExpandedListsMode;
      pageSize?: number;
      /** Pages that did not add up; never given secrets. */
      warn?: (msg: string, fields?: Record<string, unknown>) => void;
      /** What the mode turned out to be, once per process; never given secrets. */
      info?: (msg: string, fields?: Record<string, unknown>) => void;
    },
  ) {
    this.mode = opts.mode ?? 'auto';
    if (!['auto', 'on', 'off'].includes(this.mode)) throw new RangeError(`expandedLists: expected auto, on or off, got ${String(this.mode)}`);
    this.pageSize = opts.pageSize ?? DEFAULT_EXPANDED_PAGE_SIZE;
    if (!(Number.isInteger(this.pageSize) && this.pageSize >= 1)) throw new RangeError(`expandedPageSize: expected an integer >= 1, got ${this.pageSize}`);
    this.current = this.mode === 'off' ? 'no' : this.mode === 'on' ? 'yes' : 'unknown';
  }

  get state(): ExpandedListsState {
    return this.current;
  }

  /** The zone's records matching the filter (see the module comment); `plainListing` lists the ids. */
  async list(scope: OvhScope, zone: string, filter: RecordFilter, plainListing: () => Promise<string[]>): Promise<RecordListing> {
    if (this.current === 'no') return { ids: await plainListing(), calls: 1 };
    let calls = 0;
    for (let round = 0; round < 2; round++) {
      const read = await this.read(scope, zone, filter);
      calls += read.calls;
      if ('refused' in read) {
        if (this.mode === 'on') {
          throw new OvhError(
            'GET',
            `/domain/zone/${zone}/record`,
            read.status,
            'unknown',
            `OVH did not answer an expanded record list (${read.refused}) and DNSPLANE_OVH_EXPANDED_LISTS is "on"; set it to "auto" to fall back to one GET per record`,
          );
        }
        this.note('no', read.refused);
        if (read.ids) return { ids: read.ids, calls };
        return { ids: await plainListing(), calls: calls + 1 };
      }
      if ('records' in read) {
        if (read.records.length > 0) this.note('yes');
        return { records: read.records, calls };
      }
      this.opts.warn?.('OVH record list pages did not add up (the zone changed while it was read)', { zone, ...filter, round: round + 1 });
    }
    return { ids: await plainListing(), calls: calls + 1 };
  }

  /** Every page of one expanded listing. */
  private async read(scope: OvhScope, zone: string, filter: RecordFilter): Promise<ExpandedRead> {
    const path = `/domain/zone/${zone}/record`;
    const params = filterParams(filter);
    const page = (number: number, size: number) =>
      this.transport.exchange(scope, 'GET', path, params, true, {
        headers: { 'X-Pagination-Mode': EXPANDED_MODE, 'X-Pagination-Size': String(size), 'X-Pagination-Number': String(number), Pragma: 'no-cache' },
      });

    let first: Exchange;
    try {
      first = await page(1, this.pageSize);
    } catch (e) {
      if (e instanceof OvhError && e.status >= 400 && e.status < 500 && ![401, 403, 404, 408, 429].includes(e.status)) {
        return { refused: `${e.status} ${e.message}`, status: e.status, calls: 1 };
      }
      throw e;
    }
    const total = headerInt(first.headers, 'x-pagination-elements');
    const parsed = parseRecordPage(first.body, zone);
    if (!parsed.ok) {
      // Ids with no paging header: the mode was ignored and this is the whole plain listing.
      const ids = parsed.ids && total === undefined ? parsed.ids : undefined;
      return { refused: parsed.why, status: 200, ...(ids ? { ids } : {}), calls: 1 };
    }
    const records = parsed.records;
    if (total === undefined || total <= records.length) return { records, calls: 1 };
    // The size the server used (it may serve smaller pages than asked).
    const size = headerInt(first.headers, 'x-pagination-size') ?? records.length;
    if (size < 1 || records.length !== Math.min(size, total)) return { inconsistent: true, calls: 1 };
    const count = Math.ceil(total / size);
    // Each page is read into records and checked for ids seen as it comes: 5,000 records at a time,
    // never 50,000 in one block of the event loop.
    const seen = new Set(records.map((r) => r.id));
    const rest = await Promise.all(
      Array.from({ length: count - 1 }, async (_, i) => {
        const answer = await page(i + 2, size);
        const p = parseRecordPage(answer.body, zone);
        if (!p.ok || headerInt(answer.headers, 'x-pagination-elements') !== total) return undefined;
        for (const r of p.records) {
          if (seen.has(r.id)) return undefined;
          seen.add(r.id);
        }
        return p.records;
      }),
    );
    if (rest.some((more) => more === undefined)) return { inconsistent: true, calls: count };
    const all = records.concat(...(rest as OvhRecord[][]));
    if (all.length !== total) return { inconsistent: true, calls: count };
    return { records: all, calls: count };
  }

  /** Remembers (auto) what OVH made of the expanded mode, and says so once. */
  private note(state: 'yes' | 'no', why?: string): void {
    if (this.mode !== 'auto' || this.current === state) return;
    this.current = state;
    if (state === 'yes') this.opts.info?.('OVH answers expanded record lists: zones are read a page of records per call', { pageSize: this.pageSize });
    else this.opts.info?.('OVH does not answer expanded record lists: records are read one GET per id for the rest of this process', { answer: why });
  }
}

function headerInt(headers: IncomingHttpHeaders, name: string): number | undefined {
  const v = headers[name];
  const text = Array.isArray(v) ? v[0] : v;
  if (text === undefined || !/^\s*\d+\s*$/.test(text)) return undefined;
  return Number(text);
}

/** An expanded page: records, or why not (with the ids when it is an array of ids). */
function parseRecordPage(body: unknown, zone: string): { ok: true; records: OvhRecord[] } | { ok: false; why: string; ids?: string[] } {
  if (!Array.isArray(body)) return { ok: false, why: `expected an array, got ${body === null ? 'null' : typeof body}` };
  if (body.length > 0 && body.every((x) => typeof x === 'number' || (typeof x === 'string' && /^\d+$/.test(x)))) {
    return { ok: false, why: 'an array of record ids', ids: body.map((x) => String(x)) };
  }
  const records: OvhRecord[] = [];
  for (const x of body) {
    if (x === null || typeof x !== 'object') return { ok: false, why: 'an array that is not of records' };
    const o = x as Record<string, unknown>;
    const id = o['id'];
    if (
      !((typeof id === 'number' && Number.isSafeInteger(id) && id > 0) || (typeof id === 'string' && /^\d+$/.test(id))) ||
      typeof o['fieldType'] !== 'string' ||
      typeof o['subDomain'] !== 'string' ||
      typeof o['target'] !== 'string'
    ) {
      return { ok: false, why: 'an array of objects that are not records (id, fieldType, subDomain, target)' };
    }
    records.push(toRecord(o, zone));
  }
  return { ok: true, records };
}
