import { describe, expect, it } from 'vitest';
import type { Change, Endpoint, RecordType } from '../../src/dns/types.js';
import { applyOperationsToRecords, buildOperations, buildZoneOperations, compareIds, describeOperation, orderOperations } from '../../src/ovh/ops.js';
import type { OvhOperation, OvhRecord } from '../../src/ovh/types.js';

const zone = 'example.com';
const rec = (id: string, target: string, ttl = 300, subDomain = 'www', fieldType = 'A'): OvhRecord => ({
  id,
  zone,
  subDomain,
  fieldType,
  target,
  ttl,
});
const ep = (targets: string[], ttl = 300, recordType: RecordType = 'A', dnsName = 'www.example.com'): Endpoint => ({
  dnsName,
  recordType,
  targets: [...targets].sort(),
  ttl,
});
const update = (before: Endpoint, after: Endpoint): Change => ({ action: 'update', before, after });
/** Compact form: `METHOD id target ttl`. */
const show = (ops: OvhOperation[]): string[] =>
  ops.map((op) => {
    switch (op.method) {
      case 'POST':
        return `POST ${op.body.target} ${op.body.ttl}`;
      case 'PUT':
        return `PUT ${op.id} ${op.body.target} ${op.body.ttl}`;
      case 'DELETE':
        return `DELETE ${op.id}`;
    }
    throw new Error(`unknown method ${(op as OvhOperation).method}`);
  });

const ids = ['5000000001', '5000000002', '5000000003'];
const three = [rec(ids[0] as string, '192.0.2.1'), rec(ids[1] as string, '192.0.2.2'), rec(ids[2] as string, '192.0.2.3')];
const threeEp = ep(['192.0.2.1', '192.0.2.2', '192.0.2.3']);

describe('buildOperations', () => {
  it('3-target create = 3 POST', () => {
    const ops = buildOperations(zone, { action: 'create', after: threeEp }, []);
    expect(show(ops)).toEqual(['POST 192.0.2.1 300', 'POST 192.0.2.2 300', 'POST 192.0.2.3 300']);
    expect(ops[0]).toEqual({
      method: 'POST',
      path: '/domain/zone/example.com/record',
      body: { fieldType: 'A', subDomain: 'www', target: '192.0.2.1', ttl: 300 },
    });
  });

  it('one target changed = 1 PUT of that record', () => {
    const ops = buildOperations(zone, update(threeEp, ep(['192.0.2.1', '192.0.2.9', '192.0.2.3'])), three);
    expect(show(ops)).toEqual(['PUT 5000000002 192.0.2.9 300']);
    expect(ops[0]).toEqual({
      method: 'PUT',
      path: '/domain/zone/example.com/record/5000000002',
      id: '5000000002',
      body: { target: '192.0.2.9', ttl: 300 },
      before: three[1],
    });
  });

  it('2 of 3 targets replaced = 2 PUT, paired in sorted order', () => {
    const ops = buildOperations(zone, update(threeEp, ep(['192.0.2.1', '192.0.2.8', '192.0.2.7'])), three);
    expect(show(ops)).toEqual(['PUT 5000000002 192.0.2.7 300', 'PUT 5000000003 192.0.2.8 300']);
  });

  it('add 1 + remove 2 = 1 PUT + 1 DELETE', () => {
    const ops = buildOperations(zone, update(threeEp, ep(['192.0.2.1', '192.0.2.9'])), three);
    expect(show(ops)).toEqual(['DELETE 5000000003', 'PUT 5000000002 192.0.2.9 300']);
  });

  it('add 2 + remove 1 = 1 PUT + 1 POST', () => {
    const ops = buildOperations(zone, update(threeEp, ep(['192.0.2.1', '192.0.2.2', '192.0.2.8', '192.0.2.9'])), three);
    expect(show(ops)).toEqual(['PUT 5000000003 192.0.2.8 300', 'POST 192.0.2.9 300']);
  });

  it('a TTL-only change is PUTs only', () => {
    const ops = buildOperations(zone, update(threeEp, { ...threeEp, ttl: 60 }), three);
    expect(show(ops)).toEqual(['PUT 5000000001 192.0.2.1 60', 'PUT 5000000002 192.0.2.2 60', 'PUT 5000000003 192.0.2.3 60']);
  });

  it('PUTs only the records whose TTL differs', () => {
    const mixed = [rec('1', '192.0.2.1', 60), rec('2', '192.0.2.2', 300)];
    expect(show(buildOperations(zone, update(ep(['192.0.2.1', '192.0.2.2'], 60), ep(['192.0.2.1', '192.0.2.2'], 300)), mixed))).toEqual([
      'PUT 1 192.0.2.1 300',
    ]);
  });

  it('deleting a set = one DELETE per record', () => {
    const ops = buildOperations(zone, { action: 'delete', before: threeEp }, three);
    expect(show(ops)).toEqual(['DELETE 5000000001', 'DELETE 5000000002', 'DELETE 5000000003']);
    expect(ops[0]).toEqual({ method: 'DELETE', path: '/domain/zone/example.com/record/5000000001', id: '5000000001', before: three[0] });
  });

  it('duplicates: one copy is kept, the others are reused or deleted', () => {
    const dup = [rec('1', '192.0.2.1'), rec('2', '192.0.2.1'), rec('3', '192.0.2.2')];
    // Desired x, z: keep 1, reuse the copy 2 for z, delete 3.
    expect(show(buildOperations(zone, update(ep(['192.0.2.1', '192.0.2.2']), ep(['192.0.2.1', '192.0.2.9'])), dup))).toEqual([
      'DELETE 3',
      'PUT 2 192.0.2.9 300',
    ]);
    // Same set again: the copy goes.
    expect(show(buildOperations(zone, update(ep(['192.0.2.1']), ep(['192.0.2.1'])), dup.slice(0, 2)))).toEqual(['DELETE 2']);
  });

  it('duplicates: the copy that already has the right TTL is the one kept', () => {
    const dup = [rec('1', '192.0.2.1', 60), rec('2', '192.0.2.1', 300)];
    expect(show(buildOperations(zone, update(ep(['192.0.2.1'], 60), ep(['192.0.2.1'], 300)), dup))).toEqual(['DELETE 1']);
  });

  it('compares targets canonically: a relative CNAME or a quoted TXT already matches', () => {
    const cname = ep(['lb.example.com'], 300, 'CNAME');
    expect(buildOperations(zone, update(cname, cname), [rec('1', 'lb', 300, 'www', 'CNAME')])).toEqual([]);
    const txt = ep(['say "hi"'], 300, 'TXT', 'example.com');
    expect(buildOperations(zone, update(txt, txt), [rec('2', '"say \\"hi\\""', 300, '', 'TXT')])).toEqual([]);
    expect(buildOperations(zone, update(txt, txt), [rec('3', 'say "hi"', 300, '', 'TXT')])).toEqual([]);
  });

  it('sends OVH target forms: absolute hosts, relative CNAME on request, plain TXT', () => {
    const mx = buildOperations(zone, { action: 'create', after: ep(['10 mx.example.com'], 0, 'MX', 'example.com') }, []);
    expect(mx[0]).toMatchObject({ body: { fieldType: 'MX', subDomain: '', target: '10 mx.example.com.', ttl: 0 } });
    const cname = { action: 'create' as const, after: ep(['lb.example.com'], 300, 'CNAME') };
    expect(buildOperations(zone, cname, [])[0]).toMatchObject({ body: { target: 'lb.example.com.' } });
    expect(buildOperations(zone, cname, [], { cnameRelative: true })[0]).toMatchObject({ body: { target: 'lb' } });
    const txt = buildOperations(zone, { action: 'create', after: ep(['say "hi"'], 300, 'TXT') }, []);
    expect(txt[0]).toMatchObject({ body: { target: 'say "hi"' } });
  });

  it("raises a TTL under 60 to OVH's minimum", () => {
    expect(show(buildOperations(zone, { action: 'create', after: ep(['192.0.2.1'], 30) }, []))).toEqual(['POST 192.0.2.1 60']);
  });

  it('rejects records of another set', () => {
    expect(() => buildOperations(zone, { action: 'create', after: threeEp }, [rec('1', '192.0.2.1', 300, 'api')])).toThrow(RangeError);
  });

  it('never deletes and recreates within one set', () => {
    const ops = buildOperations(zone, update(threeEp, ep(['192.0.2.7', '192.0.2.8', '192.0.2.9'])), three);
    expect(ops.every((op) => op.method === 'PUT')).toBe(true);
  });
});

describe('buildZoneOperations', () => {
  it('groups the zone records per set and orders DELETE, PUT, POST', () => {
    const records = [
      rec('10', '192.0.2.1', 300, 'www', 'A'),
      rec('11', '192.0.2.5', 300, 'api', 'A'),
      rec('12', '192.0.2.6', 300, 'api', 'A'),
      rec('13', 'x', 300, 'www', 'SPF'),
    ];
    const changes: Change[] = [
      { action: 'delete', before: ep(['192.0.2.1']) },
      { action: 'create', after: ep(['lb.example.org'], 300, 'CNAME') },
      { action: 'update', before: ep(['192.0.2.5', '192.0.2.6'], 300, 'A', 'api.example.com'), after: ep(['192.0.2.7'], 300, 'A', 'api.example.com') },
    ];
    const ops = buildZoneOperations(zone, changes, records);
    expect(show(ops)).toEqual(['DELETE 10', 'DELETE 12', 'PUT 11 192.0.2.7 300', 'POST lb.example.org. 300']);
  });

  it('orderOperations is stable', () => {
    const post = (t: string): OvhOperation => ({ method: 'POST', path: 'p', body: { fieldType: 'A', subDomain: '', target: t, ttl: 0 } });
    expect(show(orderOperations([post('a'), post('b'), { method: 'DELETE', path: 'd', id: '1', before: rec('1', 'x') }, post('c')]))).toEqual([
      'DELETE 1',
      'POST a 0',
      'POST b 0',
      'POST c 0',
    ]);
  });
});

describe('applyOperationsToRecords', () => {
  it('simulates POST, PUT and DELETE', () => {
    const ops = buildOperations(zone, update(threeEp, ep(['192.0.2.1', '192.0.2.9', '192.0.2.8', '192.0.2.7'], 60)), three);
    const after = applyOperationsToRecords(three, ops, (_op, i) => `new-${i}`);
    expect(after.map((r) => `${r.id} ${r.target} ${r.ttl}`).sort()).toEqual([
      '5000000001 192.0.2.1 60',
      '5000000002 192.0.2.7 60',
      '5000000003 192.0.2.8 60',
      'new-3 192.0.2.9 60',
    ]);
    expect(after.find((r) => r.id === 'new-3')).toEqual({ id: 'new-3', zone, subDomain: 'www', fieldType: 'A', target: '192.0.2.9', ttl: 60 });
    expect(three[0]?.ttl).toBe(300); // the input is not modified
  });

  it('throws on an unknown id', () => {
    expect(() => applyOperationsToRecords([], [{ method: 'DELETE', path: 'x', id: '1', before: rec('1', 'x') }], () => 'n')).toThrow(/no record 1/);
  });
});

describe('describeOperation', () => {
  it('gives method, path and the exact JSON body', () => {
    const [post] = buildOperations(zone, { action: 'create', after: ep(['192.0.2.1']) }, []);
    expect(describeOperation(post as OvhOperation)).toEqual({
      method: 'POST',
      path: '/domain/zone/example.com/record',
      body: '{"fieldType":"A","subDomain":"www","target":"192.0.2.1","ttl":300}',
    });
    const [put] = buildOperations(zone, update(ep(['192.0.2.1']), ep(['192.0.2.2'], 60)), [rec('5000000001', '192.0.2.1')]);
    expect(describeOperation(put as OvhOperation)).toEqual({
      method: 'PUT',
      path: '/domain/zone/example.com/record/5000000001',
      body: '{"target":"192.0.2.2","ttl":60}',
    });
    const [del] = buildOperations(zone, { action: 'delete', before: ep(['192.0.2.1']) }, [rec('5000000001', '192.0.2.1')]);
    expect(describeOperation(del as OvhOperation)).toEqual({ method: 'DELETE', path: '/domain/zone/example.com/record/5000000001', body: '' });
  });
});

describe('compareIds', () => {
  it('orders ids numerically beyond 2^53', () => {
    expect(['9007199254740993', '10', '9007199254740992', '5000000001'].sort(compareIds)).toEqual(['10', '5000000001', '9007199254740992', '9007199254740993']);
  });
});
