/**
 * The OVH client's expanded record lists (DNSPLANE_OVH_EXPANDED_LISTS) against the simulator over real
 * HTTPS: the exact calls and their paging headers for each mode and each behaviour of OVH, the
 * fallback taken once and remembered, paging, filters, pages that do not add up, and the look-up of a
 * lost POST through one listing.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { OvhApi } from '../../src/ovh/client.js';
import type { ExpandedListsMode } from '../../src/ovh/client/expanded-lists.js';
import { OvhError } from '../../src/ovh/errors.js';
import { OvhSimulator, type SimBehavior } from '../../src/ovhsim/index.js';
import { ovhApiFor, simCalls } from '../helpers/ovh-api.js';

const ZONE = 'lists.test';
let sim: OvhSimulator;
let infos: Array<[string, Record<string, unknown> | undefined]>;
let warnings: string[];

function api(expandedLists: ExpandedListsMode, expandedPageSize?: number, onCall?: () => void): OvhApi {
  return ovhApiFor(sim, {
    expandedLists,
    ...(expandedPageSize !== undefined ? { expandedPageSize } : {}),
    sleep: async () => undefined,
    info: (msg, fields) => infos.push([msg, fields]),
    warn: (msg) => warnings.push(msg),
    ...(onCall ? { onCall } : {}),
  });
}

/** The simulator's log: "GET path?query [page n/size, no-cache]" for expanded requests, /auth/time left out. */
function calls(): string[] {
  return simCalls(sim, ({ headers: h }) =>
    h['x-pagination-mode']
      ? ` [${h['x-pagination-mode']} page ${h['x-pagination-number']}/${h['x-pagination-size']}${h['pragma'] ? `, ${h['pragma']}` : ''}]`
      : '',
  );
}

const LIST = `GET /domain/zone/${ZONE}/record`;
const byId = (a: { id: string }, b: { id: string }) => Number(a.id) - Number(b.id);

/** What a read should give: the simulator's records as the API shows them (TXT quoted). */
function expected(filter: (r: { subDomain: string; fieldType: string }) => boolean = () => true) {
  return sim
    .draftRecords(ZONE)
    .filter(filter)
    .map((r) => ({ ...r, target: r.fieldType === 'TXT' ? `"${r.target}"` : r.target }))
    .sort(byId);
}

function behave(b: Partial<SimBehavior>): void {
  sim.setBehavior({ expandedRecordLists: 'ignored', expandedListMaxPageSize: null, expandedListCacheSeconds: 60, ...b });
}

beforeAll(async () => {
  sim = await OvhSimulator.start({
    zones: {
      [ZONE]: [
        ...Array.from({ length: 10 }, (_, i) => ({ subDomain: `h${i}`, fieldType: 'A', target: `192.0.2.${i + 1}`, ttl: 300 })),
        { subDomain: 'h1', fieldType: 'TXT', target: 'v=spf1 -all' },
      ],
    },
  });
});

afterAll(async () => {
  await sim?.stop();
});

beforeEach(() => {
  infos = [];
  warnings = [];
  behave({});
});

describe('expanded record lists: the modes', () => {
  it('auto, honoured: one call answers every record, with Pragma: no-cache; remembered and said once', async () => {
    behave({ expandedRecordLists: 'honoured' });
    const client = api('auto');
    await client.getSoa(ZONE);
    sim.clearCalls();
    expect(client.expandedLists).toBe('unknown');
    const listing = await client.listRecordsOrIds(ZONE);
    expect(listing).toEqual({ records: expected(), calls: 1 });
    expect(calls()).toEqual([`${LIST} 200 [CachedObjectList-Pages page 1/5000, no-cache]`]);
    expect(client.expandedLists).toBe('yes');
    await client.listRecordsOrIds(ZONE);
    expect(infos.map(([m]) => m)).toEqual(['OVH answers expanded record lists: zones are read a page of records per call']);
  });

  it('auto, ignored (ids answered): the ids are used as they are, no second listing; the fallback is remembered and said once', async () => {
    const client = api('auto');
    await client.getSoa(ZONE);
    sim.clearCalls();
    const first = await client.listRecordsOrIds(ZONE);
    expect(first).toEqual({ ids: expected().map((r) => r.id), calls: 1 });
    expect(client.expandedLists).toBe('no');
    // Later reads: plain listings, never the expanded request again, even if OVH started answering it.
    behave({ expandedRecordLists: 'honoured' });
    await client.listRecordsOrIds(ZONE);
    await client.listRecordsOrIds(ZONE, { subDomain: 'h1' });
    expect(calls()).toEqual([`${LIST} 200 [CachedObjectList-Pages page 1/5000, no-cache]`, `${LIST} 200`, `${LIST}?subDomain=h1 200`]);
    expect(infos).toEqual([
      ['OVH does not answer expanded record lists: records are read one GET per id for the rest of this process', { answer: 'an array of record ids' }],
    ]);
  });

  it('auto, refused (400): one plain listing after the refusal, then plain listings only', async () => {
    behave({ expandedRecordLists: 'refused' });
    const client = api('auto');
    await client.getSoa(ZONE);
    sim.clearCalls();
    expect(await client.listRecordsOrIds(ZONE)).toEqual({ ids: expected().map((r) => r.id), calls: 2 });
    await client.listRecordsOrIds(ZONE);
    expect(calls()).toEqual([`${LIST} 400 [CachedObjectList-Pages page 1/5000, no-cache]`, `${LIST} 200`, `${LIST} 200`]);
    expect(client.expandedLists).toBe('no');
    expect(infos).toHaveLength(1);
    expect(infos[0]![1]!['answer']).toMatch(/^400 /);
  });

  it('auto: an answer that stops being records later is a fallback for that read, remembered too', async () => {
    behave({ expandedRecordLists: 'honoured' });
    const client = api('auto');
    await client.listRecordsOrIds(ZONE);
    expect(client.expandedLists).toBe('yes');
    behave({ expandedRecordLists: 'ignored' });
    sim.clearCalls();
    expect(await client.listRecordsOrIds(ZONE)).toEqual({ ids: expected().map((r) => r.id), calls: 1 });
    expect(client.expandedLists).toBe('no');
    expect(infos.map(([m]) => m)).toEqual([
      'OVH answers expanded record lists: zones are read a page of records per call',
      'OVH does not answer expanded record lists: records are read one GET per id for the rest of this process',
    ]);
  });

  it('auto: a 5xx is not a refusal: retried, then thrown, nothing remembered', async () => {
    behave({ expandedRecordLists: 'honoured' });
    const client = api('auto');
    await client.getSoa(ZONE);
    sim.clearCalls();
    sim.faults.fail({ method: 'GET', path: `/domain/zone/${ZONE}/record`, effect: { kind: 'status', status: 503 } });
    try {
      const e = await client.listRecordsOrIds(ZONE).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(OvhError);
      expect((e as OvhError).status).toBe(503);
    } finally {
      sim.faults.clear();
    }
    expect(calls()).toEqual(Array(4).fill(`${LIST} 503 [CachedObjectList-Pages page 1/5000, no-cache]`));
    expect(client.expandedLists).toBe('unknown');
  });

  it('off: plain listings, never a paging header', async () => {
    behave({ expandedRecordLists: 'honoured' });
    const client = api('off');
    await client.getSoa(ZONE);
    sim.clearCalls();
    expect(client.expandedLists).toBe('no');
    expect(await client.listRecordsOrIds(ZONE, { fieldType: 'TXT' })).toEqual({ ids: expected((r) => r.fieldType === 'TXT').map((r) => r.id), calls: 1 });
    expect(calls()).toEqual([`${LIST}?fieldType=TXT 200`]);
    expect(infos).toEqual([]);
  });

  it('on: an answer that is not records is an error naming the setting, with no fallback', async () => {
    const client = api('on');
    await client.getSoa(ZONE);
    sim.clearCalls();
    const e = await client.listRecordsOrIds(ZONE).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(OvhError);
    expect((e as OvhError).message).toMatch(/DNSPLANE_OVH_EXPANDED_LISTS is "on"/);
    expect(calls()).toEqual([`${LIST} 200 [CachedObjectList-Pages page 1/5000, no-cache]`]);
    expect(client.expandedLists).toBe('yes');
  });

  it('refuses a mode or a page size that makes no sense', () => {
    expect(() => api('sometimes' as ExpandedListsMode)).toThrow(/expandedLists: expected auto, on or off/);
    expect(() => api('auto', 0)).toThrow(/expandedPageSize/);
  });
});

describe('expanded record lists: paging and filters', () => {
  it('several pages: the first, then every other page at once, each with its number; all records, once each', async () => {
    behave({ expandedRecordLists: 'honoured' });
    const client = api('on', 4);
    await client.getSoa(ZONE);
    sim.clearCalls();
    // 13 records (10 A, 1 TXT, 2 apex NS): pages of 4, 4, 4, 1.
    expect(await client.listRecordsOrIds(ZONE)).toEqual({ records: expected(), calls: 4 });
    const log = calls();
    expect(log[0]).toBe(`${LIST} 200 [CachedObjectList-Pages page 1/4, no-cache]`);
    expect(log.slice(1).sort()).toEqual([2, 3, 4].map((n) => `${LIST} 200 [CachedObjectList-Pages page ${n}/4, no-cache]`));
  });

  it('a server serving smaller pages than asked: the rest is asked at the size it used', async () => {
    behave({ expandedRecordLists: 'honoured', expandedListMaxPageSize: 5 });
    const client = api('on', 100);
    await client.getSoa(ZONE);
    sim.clearCalls();
    expect(await client.listRecordsOrIds(ZONE)).toEqual({ records: expected(), calls: 3 });
    expect(calls().sort()).toEqual([
      `${LIST} 200 [CachedObjectList-Pages page 1/100, no-cache]`,
      `${LIST} 200 [CachedObjectList-Pages page 2/5, no-cache]`,
      `${LIST} 200 [CachedObjectList-Pages page 3/5, no-cache]`,
    ]);
  });

  it('filters: subDomain and fieldType go along with the paging headers; only matching records come back', async () => {
    behave({ expandedRecordLists: 'honoured' });
    const client = api('on');
    await client.getSoa(ZONE);
    sim.clearCalls();
    const listing = await client.listRecordsOrIds(ZONE, { subDomain: 'h1', fieldType: 'TXT' });
    expect(listing).toEqual({ records: expected((r) => r.subDomain === 'h1' && r.fieldType === 'TXT'), calls: 1 });
    expect(calls()).toEqual([`${LIST}?fieldType=TXT&subDomain=h1 200 [CachedObjectList-Pages page 1/5000, no-cache]`]);
  });

  it('a change between pages: the totals disagree, the pages are read again, the result is whole', async () => {
    behave({ expandedRecordLists: 'honoured' });
    let added: string | undefined;
    let armed = false;
    const client = api('on', 4, () => {
      // Right after the first page is answered (before the others are sent), someone adds a record.
      if (!armed) return;
      armed = false;
      added = sim.addRecord(ZONE, { subDomain: 'late', fieldType: 'A', target: '192.0.2.200' }).id;
    });
    await client.getSoa(ZONE);
    sim.clearCalls();
    armed = true;
    try {
      const listing = await client.listRecordsOrIds(ZONE);
      expect('records' in listing && listing.records.map((r) => r.id)).toEqual(expected().map((r) => r.id));
      expect(listing.calls).toBe(4 + 4); // 13 records then 14: 4 pages of 4 each time
      expect(listing.calls === calls().length).toBe(true);
      expect(warnings).toEqual(['OVH record list pages did not add up (the zone changed while it was read)']);
    } finally {
      if (added) sim.deleteRecord(ZONE, added);
    }
  });

  it('a lost POST is looked up through one filtered listing, not a GET per candidate', async () => {
    behave({ expandedRecordLists: 'honoured' });
    const client = api('auto');
    await client.getSoa(ZONE);
    const known = new Set(sim.draftRecords(ZONE).map((r) => r.id));
    sim.clearCalls();
    sim.faults.fail({ method: 'POST', path: `/domain/zone/${ZONE}/record`, times: 1, effect: { kind: 'applyThenDrop' } });
    const created = await client.createRecord(ZONE, { subDomain: 'lost', fieldType: 'A', target: '192.0.2.77', ttl: 60 }, known);
    expect(created).toMatchObject({ subDomain: 'lost', fieldType: 'A', target: '192.0.2.77' });
    expect(calls()).toEqual([`POST /domain/zone/${ZONE}/record 0`, `${LIST}?fieldType=A&subDomain=lost 200 [CachedObjectList-Pages page 1/5000, no-cache]`]);
    expect(sim.draftRecords(ZONE).filter((r) => r.subDomain === 'lost')).toHaveLength(1);
    sim.deleteRecord(ZONE, created.id);
  });
});
