/**
 * The simulator's expanded record lists (GET …/record with X-Pagination-Mode: CachedObjectList-Pages),
 * seen raw over HTTPS: the three assumed behaviours (ignored, honoured, refused), paging and its
 * headers, filters, and the server-side list cache that only Pragma: no-cache bypasses.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { OvhSimulator } from '../../src/ovhsim/index.js';
import { raw } from '../helpers/sim-clients.js';

const ZONE = 'pages.test';
const LIST = `/1.0/domain/zone/${ZONE}/record`;
let sim: OvhSimulator;

const expanded = (extra: Record<string, string> = {}) => ({ 'X-Pagination-Mode': 'CachedObjectList-Pages', ...extra });
const get = (path: string, headers: Record<string, string>) => raw(sim, 'GET', path, { sign: {}, headers });

beforeAll(async () => {
  sim = await OvhSimulator.start({
    zones: {
      [ZONE]: [
        ...Array.from({ length: 8 }, (_, i) => ({ subDomain: `h${i}`, fieldType: 'A', target: `192.0.2.${i + 1}`, ttl: 300 })),
        { subDomain: 'h0', fieldType: 'TXT', target: 'hello world' },
      ],
    },
  });
});

afterAll(async () => {
  await sim?.stop();
});

beforeEach(() => {
  sim.setBehavior({ expandedRecordLists: 'honoured', expandedListMaxPageSize: null, expandedListCacheSeconds: 60 });
  sim.clearCalls();
});

describe('expanded record lists in the simulator', () => {
  it('ignored (the default): the header changes nothing, the answer is the ids', async () => {
    const fresh = await OvhSimulator.start({ zones: { 'plain.test': [{ subDomain: 'a', fieldType: 'A', target: '192.0.2.1' }] } });
    try {
      const [a, b] = await Promise.all([
        raw(fresh, 'GET', '/1.0/domain/zone/plain.test/record', { sign: {}, headers: expanded({ 'X-Pagination-Size': '10' }) }),
        raw(fresh, 'GET', '/1.0/domain/zone/plain.test/record', { sign: {} }),
      ]);
      expect(a.status).toBe(200);
      expect(a.text).toBe(b.text);
      expect(JSON.parse(a.text)).toHaveLength(3); // a + 2 apex NS
      expect(a.headers['x-pagination-elements']).toBeUndefined();
      // The log keeps the paging headers the request carried.
      expect(fresh.calls().map((c) => c.headers)).toContainEqual({ 'x-pagination-mode': 'CachedObjectList-Pages', 'x-pagination-size': '10' });
    } finally {
      await fresh.stop();
    }
  });

  it('honoured: pages of full records (as GET …/record/{id} shows them), 1-based, with the total and the size used', async () => {
    const all = sim.draftRecords(ZONE).sort((x, y) => Number(x.id) - Number(y.id));
    expect(all).toHaveLength(11);
    const pages = [];
    for (const n of [1, 2, 3, 4]) {
      const a = await get(LIST, expanded({ 'X-Pagination-Size': '4', 'X-Pagination-Number': String(n), Pragma: 'no-cache' }));
      expect(a.status).toBe(200);
      expect([a.headers['x-pagination-elements'], a.headers['x-pagination-number'], a.headers['x-pagination-size']]).toEqual(['11', String(n), '4']);
      pages.push(JSON.parse(a.text) as Array<Record<string, unknown>>);
    }
    expect(pages.map((p) => p.length)).toEqual([4, 4, 3, 0]);
    const one = await get(`${LIST}/${all[0]!.id}`, {});
    expect(pages[0]![0]).toEqual(JSON.parse(one.text));
    expect(pages.flat().map((r) => String(r['id']))).toEqual(all.map((r) => r.id));
    const txt = pages.flat().find((r) => r['fieldType'] === 'TXT')!;
    expect(txt['target']).toBe('"hello world"'); // quoted, as every answer
  });

  it('honoured: without a size, one page holds everything; a largest page caps what is asked; the filters apply', async () => {
    const whole = await get(LIST, expanded({ Pragma: 'no-cache' }));
    expect(JSON.parse(whole.text)).toHaveLength(11);
    sim.setBehavior({ expandedListMaxPageSize: 3 });
    const capped = await get(LIST, expanded({ 'X-Pagination-Size': '50', Pragma: 'no-cache' }));
    expect(JSON.parse(capped.text)).toHaveLength(3);
    expect(capped.headers['x-pagination-size']).toBe('3');
    const filtered = await get(`${LIST}?fieldType=A&subDomain=H0`, expanded({ 'X-Pagination-Size': '50', Pragma: 'no-cache' }));
    expect((JSON.parse(filtered.text) as Array<Record<string, unknown>>).map((r) => [r['subDomain'], r['fieldType']])).toEqual([['h0', 'A']]);
    expect(filtered.headers['x-pagination-elements']).toBe('1');
  });

  it('honoured: bad paging headers are a 400 naming the header', async () => {
    for (const [name, value] of [
      ['X-Pagination-Size', '0'],
      ['X-Pagination-Number', 'two'],
      ['X-Pagination-Mode', 'CachedObjectList-Cursor'],
    ] as const) {
      const a = await get(LIST, { ...expanded(), [name]: value });
      expect(a.status).toBe(400);
      expect(JSON.parse(a.text).message).toContain(value);
    }
  });

  it('honoured: the list is cached per query; a later page without Pragma: no-cache is sliced from the old list', async () => {
    const first = await get(LIST, expanded({ 'X-Pagination-Size': '20' }));
    expect(first.headers['x-pagination-elements']).toBe('11');
    const added = sim.addRecord(ZONE, { subDomain: 'late', fieldType: 'A', target: '192.0.2.99' });
    const stale = await get(LIST, expanded({ 'X-Pagination-Size': '20' }));
    expect(stale.headers['x-pagination-elements']).toBe('11');
    expect(stale.text).not.toContain(added.id);
    const fresh = await get(LIST, expanded({ 'X-Pagination-Size': '20', Pragma: 'no-cache' }));
    expect(fresh.headers['x-pagination-elements']).toBe('12');
    expect(fresh.text).toContain(added.id);
    sim.deleteRecord(ZONE, added.id);
  });

  it('refused: 400 Client::BadRequest; a request without the header still lists ids', async () => {
    sim.setBehavior({ expandedRecordLists: 'refused' });
    const a = await get(LIST, expanded({ 'X-Pagination-Size': '5' }));
    expect(a.status).toBe(400);
    expect(JSON.parse(a.text).class).toBe('Client::BadRequest');
    const plain = await get(LIST, {});
    expect(JSON.parse(plain.text)).toHaveLength(11);
  });
});
