/**
 * The pure parts: Go-compatible JSON, the protocol's messages, normalization and change-set splitting.
 */
import { describe, expect, it } from 'vitest';
import { entryOf } from '../../src/webhook/backend.js';
import { parseBasic } from '../../src/webhook/core-backend.js';
import fc from 'fast-check';
import { Slicer } from '../../src/core/slices.js';
import { drain } from '../../src/dns/steps.js';
import { field, goJson, isObject, JsonSyntaxError, parseJson, parseJsonSteps } from '../../src/webhook/json.js';
import {
  adjustEndpoints,
  adjustEndpointsSteps,
  batches,
  domainFilterOf,
  prepareChanges,
  prepareChangesSteps,
  toChangeSet,
  type TenantScope,
} from '../../src/webhook/normalize.js';
import {
  decodeChanges,
  decodeChangesSteps,
  decodeEndpointList,
  decodeEndpointListSteps,
  encodeDomainFilter,
  encodeEndpointList,
  wireEndpoint,
  WireFormatError,
} from '../../src/webhook/protocol.js';

const scope: TenantScope = { tenant: 'alice', zones: ['example.com'], suffixes: [] };

describe('JSON as Go reads and writes it', () => {
  it('keeps duplicate keys in order; field() matches exactly or case-insensitively, the last one winning', () => {
    const v = parseJson('{"dnsName":"a","DNSNAME":"b","dnsName":"c","other":1}');
    expect(isObject(v) && field(v, 'dnsName')).toBe('c');
    const w = parseJson('{"dnsName":"a","DNSName":"b"}');
    expect(isObject(w) && field(w, 'dnsName')).toBe('b');
    // Go folds the Kelvin sign to k and the long s to s.
    const k = parseJson('{"\u212aey":"kelvin","\u017fetIdentifier":"long-s"}');
    expect(isObject(k) && [field(k, 'key'), field(k, 'setIdentifier')]).toEqual(['kelvin', 'long-s']);
  });

  it('keeps numbers as written and refuses what RFC 8259 refuses', () => {
    expect(parseJson(' [1, -0.5, 3e2, "x\\u00e9\\n"] ')).toEqual([
      { kind: 'number', text: '1' },
      { kind: 'number', text: '-0.5' },
      { kind: 'number', text: '3e2' },
      'xé\n',
    ]);
    for (const bad of ['', '{', '[1,]', '{"a":1,}', "{'a':1}", '01', '[1] x', '"\u0001"', 'NaN', '{"a" 1}']) {
      expect(() => parseJson(bad), bad).toThrow(JsonSyntaxError);
    }
    expect(() => parseJson('['.repeat(100) + ']'.repeat(100))).toThrow(/nested deeper/);
  });

  it('parseJsonSteps reads what parseJson reads, and refuses what it refuses at the same offset', () => {
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constant(null),
        fc.boolean(),
        fc.integer(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.string(),
        tie('list'),
        tie('object'),
      ),
      list: fc.array(tie('value'), { maxLength: 150 }),
      object: fc.dictionary(fc.string(), tie('value'), { maxKeys: 70 }),
    })).value;
    fc.assert(
      fc.property(json, fc.boolean(), (value, spaced) => {
        const text = JSON.stringify(value, null, spaced ? 1 : undefined);
        expect(drain(parseJsonSteps(text))).toEqual(parseJson(text));
      }),
      { numRuns: 200 },
    );
    for (const bad of [
      '',
      '{',
      '[1,]',
      '{"a":1,}',
      "{'a':1}",
      '01',
      '[1] x',
      '"\u0001"',
      'NaN',
      '{"a" 1}',
      '{"create":[{"a":1},]}',
      '['.repeat(40) + ']'.repeat(40),
    ]) {
      let sync: unknown;
      let steps: unknown;
      try {
        parseJson(bad);
      } catch (e) {
        sync = e;
      }
      try {
        drain(parseJsonSteps(bad));
      } catch (e) {
        steps = e;
      }
      expect(sync, bad).toBeInstanceOf(JsonSyntaxError);
      expect((steps as Error).message, bad).toBe((sync as Error).message);
    }
  });

  it('a 16 MB body is read, decoded and normalized in slices: each step form pauses along a long list', async () => {
    const endpoints = Array.from({ length: 5000 }, (_, i) => ({
      dnsName: `h${i}.example.com`,
      targets: [i % 7 ? '192.0.2.1' : 'bad'],
      recordType: 'A',
      recordTTL: 300,
    }));
    const count = async <T>(steps: Generator<void, T, void>): Promise<{ value: T; yields: number }> => {
      const slicer = new Slicer(0);
      const value = await slicer.run(steps);
      return { value, yields: slicer.yields };
    };
    const list = await count(parseJsonSteps(JSON.stringify(endpoints)));
    const changes = await count(parseJsonSteps(JSON.stringify({ create: endpoints, delete: endpoints.slice(0, 100) })));
    const decoded = await count(decodeEndpointListSteps(list.value));
    const wire = await count(decodeChangesSteps(changes.value));
    const adjusted = await count(adjustEndpointsSteps(decoded.value, scope));
    const prepared = await count(prepareChangesSteps(wire.value, scope));
    // At least one pause per 64 items, and the same results as the forms that run at once.
    for (const c of [list, changes, decoded, wire, adjusted, prepared]) expect(c.yields).toBeGreaterThanOrEqual(5000 / 64 - 1);
    expect(list.value).toEqual(parseJson(JSON.stringify(endpoints)));
    expect(decoded.value).toEqual(decodeEndpointList(list.value));
    expect(wire.value).toEqual(decodeChanges(changes.value));
    expect(adjusted.value).toEqual(adjustEndpoints(decoded.value, scope));
    expect(prepared.value).toEqual(prepareChanges(wire.value, scope));
    expect(prepared.value.rejected).toHaveLength(Math.ceil(5000 / 7) + 100);
  });

  it('writes what Go writes: <, >, & and U+2028 escaped', () => {
    expect(goJson({ t: '<a>&\u2028' })).toBe('{"t":"\\u003ca\\u003e\\u0026\\u2028"}');
  });
});

describe('protocol messages', () => {
  it('decodes a change set with absent and null lists and Go zero values', () => {
    const c = decodeChanges(parseJson('{"create":[{"dnsName":"a.example.com","targets":null,"recordTTL":null,"labels":{"x":"y"}}],"delete":null}'));
    expect(c.create).toEqual([
      { list: 'create', index: 0, endpoint: wireEndpoint({ dnsName: 'a.example.com', recordType: '', targets: [], labels: { x: 'y' } }) },
    ]);
    expect([c.updateOld, c.updateNew, c.delete]).toEqual([[], [], []]);
    expect(decodeChanges(parseJson('null'))).toEqual({ create: [], updateOld: [], updateNew: [], delete: [] });
    expect(decodeEndpointList(parseJson('null'))).toEqual([]);
  });

  it('refuses what Go could not decode, naming the place', () => {
    const cases: Array<[string, RegExp]> = [
      ['{"create":{}}', /^create: must be a list/],
      ['{"create":[{"targets":"1.2.3.4"}]}', /^create\[0\]\.targets: must be a list of strings/],
      ['{"updateNew":[{"recordTTL":1e3}]}', /^updateNew\[0\]\.recordTTL: must be a whole number/],
      ['{"delete":[{"recordTTL":99999999999999999999}]}', /does not fit in a 64-bit integer/],
      ['{"create":[{"labels":{"a":1}}]}', /^create\[0\]\.labels\["a"\]: must be a string/],
      ['{"create":[{"providerSpecific":[{"name":5}]}]}', /^create\[0\]\.providerSpecific\[0\]\.name/],
    ];
    for (const [body, message] of cases) {
      expect(() => decodeChanges(parseJson(body)), body).toThrow(WireFormatError);
      expect(() => decodeChanges(parseJson(body)), body).toThrow(message);
    }
  });

  it("encodes endpoints in Go's field order, zero values left out, labels sorted, with a newline", () => {
    expect(
      encodeEndpointList([
        wireEndpoint({ dnsName: 'a.example.com', recordType: 'A', targets: ['192.0.2.1'], recordTTL: 60, labels: { z: '1', a: '2' } }),
        wireEndpoint({ dnsName: 'b.example.com', recordType: 'TXT', targets: ['x'] }),
      ]),
    ).toBe(
      '[{"dnsName":"a.example.com","targets":["192.0.2.1"],"recordType":"A","recordTTL":60,"labels":{"a":"2","z":"1"}},{"dnsName":"b.example.com","targets":["x"],"recordType":"TXT"}]\n',
    );
    expect(encodeEndpointList([])).toBe('[]\n');
  });

  it('writes the domain filter in the list form only, {} for none', () => {
    expect(encodeDomainFilter(['b.example', 'a.example'])).toBe('{"include":["a.example","b.example"]}\n');
    expect(encodeDomainFilter([])).toBe('{}\n');
  });

  it('reads Basic credentials; finds the change-set entry an error names', () => {
    expect(parseBasic(`Basic ${Buffer.from('alice:dnsp_a:b').toString('base64')}`)).toEqual({ user: 'alice', password: 'dnsp_a:b' });
    expect(parseBasic('Bearer x')).toBeUndefined();
    expect(parseBasic(`Basic ${Buffer.from('nocolon').toString('base64')}`)).toBeUndefined();
    expect(entryOf('changes.updateNew[12].dnsName: outside')).toEqual({ list: 'updateNew', index: 12 });
    expect(entryOf('plan.changes.delete[0].targets[1]: bad')).toEqual({ list: 'delete', index: 0 });
    expect(entryOf('changes: at most 5000 endpoints')).toBeUndefined();
  });
});

describe('normalization', () => {
  it('the domain filter: zones, narrowed to suffixes inside them, kept for suffixes above them', () => {
    expect(domainFilterOf({ tenant: 't', zones: ['b.example', 'a.example'], suffixes: [] })).toEqual(['a.example', 'b.example']);
    expect(domainFilterOf({ tenant: 't', zones: ['example.com', 'sub.example.org'], suffixes: ['team.example.com', 'example.org'] })).toEqual([
      'sub.example.org',
      'team.example.com',
    ]);
    expect(domainFilterOf({ tenant: 't', zones: ['example.com'], suffixes: ['elsewhere.net'] })).toEqual(['example.com']);
  });

  it('adjust: name, type, targets, TTL as dnsplane holds them; set identifier and provider-specific dropped; labels kept', () => {
    const { endpoints, problems } = adjustEndpoints(
      [
        wireEndpoint({
          dnsName: 'Mx.Example.com.',
          recordType: 'mx',
          targets: ['10 Mail.Example.com.', '10 mail.example.com'],
          recordTTL: 1,
          setIdentifier: 's',
          providerSpecific: [{ name: 'p', value: 'v' }],
          labels: { resource: 'r' },
        }),
        wireEndpoint({ dnsName: '_sip._tcp.example.com', recordType: 'SRV', targets: ['0 5 5060 SIP.example.com.'], recordTTL: 59 }),
        wireEndpoint({ dnsName: 'café.example.com', recordType: 'AAAA', targets: ['2001:0DB8::0001'], recordTTL: 0 }),
        wireEndpoint({ dnsName: 't.example.com', recordType: 'TXT', targets: ['"a" "b"', 'plain'], recordTTL: 3600 }),
        wireEndpoint({ dnsName: 'bad.example.com', recordType: 'A', targets: ['nope'] }),
      ],
      scope,
    );
    expect(endpoints).toEqual([
      wireEndpoint({ dnsName: 'mx.example.com', recordType: 'MX', targets: ['10 mail.example.com'], recordTTL: 60, labels: { resource: 'r' } }),
      wireEndpoint({ dnsName: '_sip._tcp.example.com', recordType: 'SRV', targets: ['0 5 5060 sip.example.com'], recordTTL: 60 }),
      wireEndpoint({ dnsName: 'xn--caf-dma.example.com', recordType: 'AAAA', targets: ['2001:db8::1'], recordTTL: 0 }),
      wireEndpoint({ dnsName: 't.example.com', recordType: 'TXT', targets: ['ab', 'plain'], recordTTL: 3600 }),
      wireEndpoint({ dnsName: 'bad.example.com', recordType: 'A', targets: ['nope'] }), // left as sent
    ]);
    expect(problems).toEqual([{ index: 4, reason: expect.stringMatching(/^\[4\]\.targets\[0\]/) }]);
  });

  it('change sets: pairs by name and type, not position; a record set named twice: updateNew, then create, then delete wins', () => {
    const ep = (dnsName: string, ip: string) => wireEndpoint({ dnsName, recordType: 'A', targets: [ip] });
    const wire = decodeChanges(
      parseJson(
        JSON.stringify({
          updateOld: [ep('b.example.com', '192.0.2.1'), ep('a.example.com', '192.0.2.1'), ep('gone.example.com', '192.0.2.1')],
          updateNew: [ep('a.example.com', '192.0.2.2'), ep('b.example.com', '192.0.2.2')],
          create: [ep('a.example.com', '192.0.2.3'), ep('c.example.com', '192.0.2.3')],
          delete: [ep('d.example.com', '192.0.2.4'), ep('b.example.com', '192.0.2.1')],
        }),
      ),
    );
    const p = prepareChanges(wire, scope);
    expect(p.updates.map((u) => [u.old.endpoint.dnsName, u.old.index, u.new.endpoint.dnsName, u.new.index])).toEqual([
      ['a.example.com', 1, 'a.example.com', 0],
      ['b.example.com', 0, 'b.example.com', 1],
    ]);
    expect(p.creates.map((c) => c.endpoint.dnsName)).toEqual(['c.example.com']);
    expect(p.rejected).toEqual([
      expect.objectContaining({
        list: 'create',
        index: 0,
        reason: expect.stringMatching(/appears more than once in the change set \(also at updateNew\[0\], which is applied\)/),
      }),
      expect.objectContaining({ list: 'delete', index: 1, reason: expect.stringMatching(/\(also at updateNew\[1\], which is applied\)/) }),
    ]);
    expect(p.deletes.map((e) => e.endpoint.dnsName)).toEqual(['d.example.com']);
    expect(p.unpaired.map((e) => e.endpoint.dnsName)).toEqual(['gone.example.com']);
    const { changes, origin } = toChangeSet(batches(p)[0]!);
    expect(changes.updateOld.map((e) => e.dnsName)).toEqual(['a.example.com', 'b.example.com']);
    expect(origin('updateNew', 1)).toBe(p.updates[1]);
    expect(origin('delete', 0)).toBe(p.deletes[0]);
  });

  it('batches: at most the core limit, a pair counting two, deletes before updates before creates', () => {
    const e = (n: string) => ({ list: 'create' as const, index: 0, endpoint: { dnsName: n, recordType: 'A' as const, targets: ['192.0.2.1'], ttl: 0 } });
    const b = batches({ deletes: [e('d1'), e('d2')], updates: [{ old: e('u'), new: e('u') }], creates: [e('c1'), e('c2')] }, 3);
    expect(b.map((x) => [x.deletes.length, x.updates.length, x.creates.length])).toEqual([
      [2, 0, 0],
      [0, 1, 1],
      [0, 0, 1],
    ]);
  });
});
