/**
 * The undo builder (core/apply/undo.ts), case by case: the operation that undoes each kind of
 * operation (POST, PUT, DELETE) as a live rollback builds it from what the operation left (undoOf
 * with recordAfter), and as a rollback from what OVH shows now builds it (compensate: recovery, and
 * the failed operation of a live apply) — OVH already showing the undo done, someone else's record
 * under the same name, duplicates, TXT quoting — plus what an operation leaves in the cache and the
 * journal intent read back from bad JSON. Pure functions; their use against the simulator and
 * Postgres is group.test.ts and intent.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { compensate, readIntent, recordAfter, rowAfter, undoOf } from '../../../src/core/apply/undo.js';
import type { OvhOperation, OvhRecord } from '../../../src/ovh/types.js';
import type { RecordRow } from '../../../src/store/index.js';

const ZONE = 'undo.test';
const REC = `/domain/zone/${ZONE}/record`;

function record(id: string, subDomain: string, target: string, fieldType = 'A', ttl = 300): OvhRecord {
  return { id, zone: ZONE, subDomain, fieldType, target, ttl };
}

const row = ({ zone: _zone, ...rest }: OvhRecord): RecordRow => rest;
const post = (r: { subDomain: string; fieldType?: string; target: string; ttl?: number }): OvhOperation => ({
  method: 'POST',
  path: REC,
  body: { fieldType: r.fieldType ?? 'A', subDomain: r.subDomain, target: r.target, ttl: r.ttl ?? 300 },
});
const put = (before: OvhRecord, target: string, ttl = before.ttl): OvhOperation => ({
  method: 'PUT',
  path: `${REC}/${before.id}`,
  id: before.id,
  body: { target, ttl },
  before,
});
const del = (before: OvhRecord): OvhOperation => ({ method: 'DELETE', path: `${REC}/${before.id}`, id: before.id, before });

describe('live rollback: the undo of an operation that succeeded (undoOf with recordAfter)', () => {
  it('POST: the record it created is deleted', () => {
    const made = record('7', 'www', '192.0.2.1');
    expect(undoOf(ZONE, post(made), recordAfter({ op: post(made), created: made }))).toEqual({ method: 'DELETE', path: `${REC}/7`, id: '7', before: made });
  });

  it('PUT: the record gets its old target and TTL back; the undo knows the record as the PUT left it', () => {
    const old = record('8', 'www', '192.0.2.1', 'A', 300);
    const op = put(old, '192.0.2.9', 60);
    expect(undoOf(ZONE, op, recordAfter({ op }))).toEqual({
      method: 'PUT',
      path: `${REC}/8`,
      id: '8',
      body: { target: '192.0.2.1', ttl: 300 },
      before: record('8', 'www', '192.0.2.9', 'A', 60),
    });
  });

  it('PUT of a TXT: the old target goes back as plain text (OVH answers it quoted)', () => {
    const old = record('9', 'txt', '"v1"', 'TXT');
    const op = put(old, 'v2');
    const undo = undoOf(ZONE, op, recordAfter({ op }));
    expect(undo).toMatchObject({ method: 'PUT', body: { target: 'v1', ttl: 300 }, before: { target: '"v2"' } });
  });

  it('DELETE: the record is created again, TXT as plain text', () => {
    expect(undoOf(ZONE, del(record('10', 'www', '192.0.2.1')), recordAfter({ op: del(record('10', 'www', '192.0.2.1')) }))).toEqual({
      method: 'POST',
      path: REC,
      body: { fieldType: 'A', subDomain: 'www', target: '192.0.2.1', ttl: 300 },
    });
    expect(undoOf(ZONE, del(record('11', 'txt', '"a b"', 'TXT')), undefined)).toMatchObject({
      method: 'POST',
      body: { fieldType: 'TXT', subDomain: 'txt', target: 'a b' },
    });
  });

  it('a creation whose record is unknown cannot be undone: an error, never a guess', () => {
    expect(() => undoOf(ZONE, post({ subDomain: 'www', target: '192.0.2.1' }), undefined)).toThrow(/needs the record it created/);
  });
});

describe('what an operation that succeeded leaves (the one conversion, for the cache and the undo)', () => {
  it('POST: the record OVH made; PUT: the old record with the new target (TXT quoted, as a GET answers) and TTL; DELETE: nothing', () => {
    const made = record('1', 'www', '192.0.2.1');
    expect(rowAfter({ op: post(made), created: made })).toEqual(row(made));
    expect(rowAfter({ op: put(record('2', 'txt', '"v1"', 'TXT'), 'v2', 60) })).toEqual(row(record('2', 'txt', '"v2"', 'TXT', 60)));
    expect(rowAfter({ op: del(record('3', 'www', '192.0.2.1')) })).toBeUndefined();
  });
});

describe('recovery: the undo from what OVH shows now (compensate)', () => {
  const a = record('100', 'a', '192.0.2.1');
  const t = record('101', 't', '"v1"', 'TXT');
  const before = [row(a), row(t)];

  describe('POST', () => {
    const op = post({ subDomain: 'c', target: '192.0.2.3' });

    it('done: the record it made is deleted', () => {
      const made = record('200', 'c', '192.0.2.3');
      expect(compensate(ZONE, [op], before, [a, t, made])).toEqual([{ method: 'DELETE', path: `${REC}/200`, id: '200', before: made }]);
    });

    it('not done (or its undo already done): nothing', () => {
      expect(compensate(ZONE, [op], before, [a, t])).toEqual([]);
    });

    it("someone else's record under the same name, another target, is left alone", () => {
      expect(compensate(ZONE, [op], before, [a, t, record('201', 'c', '192.0.2.99')])).toEqual([]);
    });

    it('duplicates: one record deleted per creation, and never one that was there before', () => {
      const first = record('202', 'c', '192.0.2.3');
      const second = record('203', 'c', '192.0.2.3');
      expect(compensate(ZONE, [op], before, [a, t, first, second])).toEqual([{ method: 'DELETE', path: `${REC}/202`, id: '202', before: first }]);
      const there = record('204', 'c', '192.0.2.3');
      expect(compensate(ZONE, [op], [...before, row(there)], [a, t, there])).toEqual([]);
    });

    it('names and targets compare as OVH does: subDomain without case, TXT without its quotes', () => {
      const txt = post({ subDomain: 'Mixed', fieldType: 'TXT', target: 'hello' });
      const made = record('205', 'mixed', '"hello"', 'TXT');
      expect(compensate(ZONE, [txt], before, [a, t, made])).toEqual([{ method: 'DELETE', path: `${REC}/205`, id: '205', before: made }]);
    });
  });

  describe('PUT', () => {
    const op = put(t, 'v2');

    it('done: the record gets its old value back, the undo knowing it as OVH shows it', () => {
      const now = record('101', 't', '"v2"', 'TXT');
      expect(compensate(ZONE, [op], before, [a, now])).toEqual([
        { method: 'PUT', path: `${REC}/101`, id: '101', body: { target: 'v1', ttl: 300 }, before: now },
      ]);
    });

    it('a TTL changed alone is put back too', () => {
      const ttlOnly = put(a, '192.0.2.1', 60);
      const now = record('100', 'a', '192.0.2.1', 'A', 60);
      expect(compensate(ZONE, [ttlOnly], before, [now, t])).toEqual([
        { method: 'PUT', path: `${REC}/100`, id: '100', body: { target: '192.0.2.1', ttl: 300 }, before: now },
      ]);
    });

    it('not done, or already put back: nothing', () => {
      expect(compensate(ZONE, [op], before, [a, t])).toEqual([]);
    });

    it('the record gone meanwhile (deleted by someone else): nothing to put back', () => {
      expect(compensate(ZONE, [op], before, [a])).toEqual([]);
    });
  });

  describe('DELETE', () => {
    const op = del(a);

    it('done: the record is created again', () => {
      expect(compensate(ZONE, [op], before, [t])).toEqual([
        { method: 'POST', path: REC, body: { fieldType: 'A', subDomain: 'a', target: '192.0.2.1', ttl: 300 } },
      ]);
    });

    it('not done: nothing', () => {
      expect(compensate(ZONE, [op], before, [a, t])).toEqual([]);
    });

    it('OVH already shows it created again (an undo under way did it): not a second time', () => {
      expect(compensate(ZONE, [op], before, [t, record('300', 'a', '192.0.2.1')])).toEqual([]);
    });

    it("someone else's record under the same name, another target, does not count as the re-creation", () => {
      expect(compensate(ZONE, [op], before, [t, record('301', 'a', '192.0.2.77')])).toEqual([
        { method: 'POST', path: REC, body: { fieldType: 'A', subDomain: 'a', target: '192.0.2.1', ttl: 300 } },
      ]);
    });
  });

  it('in the order every apply sends: deletes, then puts, then creations', () => {
    const ops = [del(a), put(t, 'v2'), post({ subDomain: 'c', target: '192.0.2.3' })];
    const undo = compensate(ZONE, ops, before, [record('101', 't', '"v2"', 'TXT'), record('400', 'c', '192.0.2.3')]);
    expect(undo.map((op) => `${op.method} ${op.path}`)).toEqual([`DELETE ${REC}/400`, `PUT ${REC}/101`, `POST ${REC}`]);
  });
});

describe('the intent read back', () => {
  const names = [{ subDomain: 'a', fieldType: 'A' }];
  const before = [{ id: '100', subDomain: 'a', fieldType: 'A', target: '192.0.2.1', ttl: 300 }];
  const ops = [del(record('100', 'a', '192.0.2.1'))];

  it('round trip through JSON: what was written', () => {
    const written = JSON.parse(JSON.stringify({ batch: 2, operations: [], ops, names, before })) as unknown;
    expect(readIntent(written)).toEqual({ names, before, ops: JSON.parse(JSON.stringify(ops)) as unknown });
  });

  it('without its operations (written before rollback existed), or with one malformed: the names are only re-read', () => {
    expect(readIntent({ names, before })).toEqual({ names, before });
    expect(readIntent({ names, before, ops: [...ops, { method: 'PATCH', path: REC }] })).toEqual({ names, before });
    expect(readIntent({ names, before, ops: [{ method: 'PUT', path: `${REC}/1`, id: '1', body: {} }] })).toEqual({ names, before });
  });

  it('not an object, or malformed names and rows: what is well formed is kept', () => {
    expect(readIntent(null)).toEqual({ names: [], before: [] });
    expect(readIntent({ names: [...names, { subDomain: 1 }, 'x'], before: [...before, { id: 5 }], ops })).toEqual({
      names,
      before,
      ops: JSON.parse(JSON.stringify(ops)) as unknown,
    });
  });
});
