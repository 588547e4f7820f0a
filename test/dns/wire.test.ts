import dnsPacket from 'dns-packet';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CLASS,
  MAX_RECORDS,
  OPCODE,
  TYPE,
  WireFormatError,
  dataOfTarget,
  encodeMessage,
  nameWire,
  parseMessage,
  readName,
  responseHeader,
  targetOfData,
  updateSections,
  type Message,
  type ResourceRecord,
} from '../../src/dns/wire/index.js';
import { InvalidInputError } from '../../src/dns/errors.js';

const header = { id: 0x1234, qr: false, opcode: OPCODE.QUERY, aa: false, tc: false, rd: true, ra: false, z: 0, rcode: 0 };

function every(): Message {
  const rr = (name: string, type: number, data: ResourceRecord['data'], cls: number = CLASS.IN, ttl = 300): ResourceRecord => ({
    name,
    type,
    class: cls,
    ttl,
    ...(data ? { data } : {}),
  });
  return {
    header: { ...header, qr: true, aa: true },
    questions: [{ name: 'www.example.test', type: TYPE.A, class: CLASS.IN }],
    answers: [
      rr('www.example.test', TYPE.A, { kind: 'A', address: '192.0.2.1' }),
      rr('www.example.test', TYPE.AAAA, { kind: 'AAAA', address: '2001:db8:0:0:0:0:0:1' }),
      rr('alias.example.test', TYPE.CNAME, { kind: 'CNAME', host: 'www.example.test' }),
      rr('example.test', TYPE.NS, { kind: 'NS', host: 'ns1.example.test' }),
      rr('example.test', TYPE.MX, { kind: 'MX', preference: 10, exchange: 'mx.example.test' }),
      rr('_sip._tcp.example.test', TYPE.SRV, { kind: 'SRV', priority: 0, weight: 100, port: 5060, target: 'sip.example.test' }),
      rr('_acme-challenge.example.test', TYPE.TXT, { kind: 'TXT', strings: [Buffer.from('a'.repeat(255)), Buffer.from('tail')] }),
      rr('example.test', TYPE.CAA, { kind: 'CAA', flags: 0, tag: 'issue', value: Buffer.from('letsencrypt.org') }),
      rr('example.test', TYPE.SOA, {
        kind: 'SOA',
        mname: 'ns1.example.test',
        rname: 'hostmaster.example.test',
        serial: 4294967295,
        refresh: 3600,
        retry: 600,
        expire: 86400,
        minimum: 300,
      }),
      rr('x.example.test', 65280, undefined),
    ],
    authorities: [
      // UPDATE's forms: class ANY / NONE, empty data.
      rr('gone.example.test', TYPE.ANY, undefined, CLASS.ANY, 0),
      rr('one.example.test', TYPE.TXT, { kind: 'TXT', strings: [Buffer.from('v')] }, CLASS.NONE, 0),
    ],
    additionals: [{ name: 'raw.example.test', type: 65280, class: CLASS.IN, ttl: 1, raw: Buffer.from([1, 2, 3]) }],
  };
}

describe('messages', () => {
  it('round-trips every record type, UPDATE classes and raw types, with compression', () => {
    const m = every();
    const bytes = encodeMessage(m);
    const back = parseMessage(bytes).message;
    expect(back).toEqual(m);
    // Compressed: "example.test" is written in full in the question, and in SRV's target (RFC 2782: never compressed).
    expect(bytes.toString('latin1').split('example').length - 1).toBe(2);
  });

  it('reads what dns-packet writes, and dns-packet reads what we write', () => {
    const theirs = dnsPacket.encode({
      type: 'response',
      id: 7,
      flags: dnsPacket.AUTHORITATIVE_ANSWER,
      questions: [{ type: 'TXT', name: 'a.example.test' }],
      answers: [
        { type: 'TXT', name: 'a.example.test', ttl: 60, data: ['hello', 'world'] },
        { type: 'MX', name: 'example.test', ttl: 60, data: { preference: 5, exchange: 'mx.example.test' } },
        { type: 'AAAA', name: 'example.test', ttl: 60, data: '2001:db8::1' },
      ],
    });
    const ours = parseMessage(theirs).message;
    expect(ours.header).toMatchObject({ id: 7, qr: true, aa: true });
    expect(ours.answers.map((r) => r.data)).toEqual([
      { kind: 'TXT', strings: [Buffer.from('hello'), Buffer.from('world')] },
      { kind: 'MX', preference: 5, exchange: 'mx.example.test' },
      { kind: 'AAAA', address: '2001:db8:0:0:0:0:0:1' },
    ]);
    const decoded = dnsPacket.decode(encodeMessage(every()));
    expect(decoded.answers?.map((a) => a.type)).toEqual(['A', 'AAAA', 'CNAME', 'NS', 'MX', 'SRV', 'TXT', 'CAA', 'SOA', 'UNKNOWN_65280']);
    expect(decoded.answers?.[4]).toMatchObject({ data: { preference: 10, exchange: 'mx.example.test' } });
    expect(decoded.answers?.[5]).toMatchObject({ data: { port: 5060, target: 'sip.example.test' } });
    expect(decoded.authorities?.[1]).toMatchObject({ class: 'UNKNOWN_254', type: 'TXT' }); // dns-packet cannot name class NONE
  });

  it('names the UPDATE sections', () => {
    const m = every();
    const s = updateSections(m);
    expect(s.zone).toBe(m.questions);
    expect(s.prerequisites).toBe(m.answers);
    expect(s.updates).toBe(m.authorities);
  });

  it('refuses every truncation of a valid message with a format error', () => {
    const bytes = encodeMessage(every());
    for (let n = 0; n < bytes.length; n++) expect(() => parseMessage(bytes.subarray(0, n)), `prefix of ${n}`).toThrow(WireFormatError);
  });

  it('refuses wrong section counts and trailing bytes', () => {
    const bytes = encodeMessage(every());
    for (const [at, delta] of [
      [5, 1],
      [7, 1],
      [7, -1],
      [9, 1],
      [11, 1],
      [11, -1],
    ] as const) {
      const b = Buffer.from(bytes);
      b[at] = b[at]! + delta;
      expect(() => parseMessage(b), `count at ${at} ${delta > 0 ? '+' : '-'}1`).toThrow(WireFormatError);
    }
    expect(() => parseMessage(Buffer.concat([bytes, Buffer.from([0])]))).toThrow(/follow the last record/);
    const huge = Buffer.alloc(12);
    huge.writeUInt16BE(0xffff, 6);
    expect(() => parseMessage(huge)).toThrow(new RegExp(`at most ${MAX_RECORDS}`));
    huge.writeUInt16BE(100, 6);
    expect(() => parseMessage(huge)).toThrow(/claim more than the message holds/);
  });

  it('reads compressed names, refuses pointer loops, forward pointers and bad labels', () => {
    // "a" then a pointer to offset 0 (itself): a loop.
    expect(() => readName(Buffer.from([0xc0, 0x00]), 0)).toThrow(/does not point backwards/);
    // Two pointers pointing at each other.
    expect(() => readName(Buffer.from([0xc0, 0x02, 0xc0, 0x00]), 2)).toThrow(/does not point backwards/);
    expect(() => readName(Buffer.from([0xc0, 0x02, 0x00]), 0)).toThrow(/does not point backwards/);
    const ok = Buffer.concat([nameWire('example.test'), Buffer.from([3, 0x77, 0x77, 0x77, 0xc0, 0x00])]);
    expect(readName(ok, 14)).toEqual({ name: 'www.example.test', next: 20 });
    expect(() => readName(Buffer.from([0x40, 0]), 0)).toThrow(/label type/);
    expect(() => readName(Buffer.from([5, 0x61]), 0)).toThrow(/past the end/);
    // Over 255 octets through a chain of pointers to long labels.
    let chain = Buffer.concat([Buffer.from([63]), Buffer.alloc(63, 0x61), Buffer.from([0])]);
    let previous = 0;
    for (let i = 0; i < 4; i++) {
      const start = chain.length;
      chain = Buffer.concat([chain, Buffer.from([63]), Buffer.alloc(63, 0x62), Buffer.from([0xc0 | (previous >> 8), previous & 0xff])]);
      previous = start;
    }
    expect(() => readName(chain, previous)).toThrow(/longer than 255/);
  });

  it('escapes label bytes so that names round-trip byte for byte', () => {
    const wire = Buffer.from([3, 0x61, 0x2e, 0x62, 2, 0x20, 0x5c, 0]);
    const { name } = readName(wire, 0);
    expect(name).toBe('a\\.b.\\032\\\\');
    expect(nameWire(name)).toEqual(wire);
    expect(nameWire('Example.TEST', true)).toEqual(nameWire('example.test'));
    expect(() => nameWire(`${'a'.repeat(64)}.test`)).toThrow(/longer than 63/);
    expect(() => nameWire('a..b')).toThrow(/empty label/);
  });

  it('keeps TSIG last and alone, OPT single', () => {
    const tsig: ResourceRecord = {
      name: 'key',
      type: TYPE.TSIG,
      class: CLASS.ANY,
      ttl: 0,
      data: { kind: 'TSIG', algorithm: 'hmac-sha256', timeSigned: 1, fudge: 300, mac: Buffer.alloc(32), originalId: 1, error: 0, otherData: Buffer.alloc(0) },
    };
    const opt: ResourceRecord = { name: '', type: TYPE.OPT, class: 1232, ttl: 0, raw: Buffer.alloc(0) };
    const base = { header, questions: [], answers: [], authorities: [] };
    expect(parseMessage(encodeMessage({ ...base, additionals: [opt, tsig] })).tsig?.record.data.algorithm).toBe('hmac-sha256');
    expect(() => parseMessage(encodeMessage({ ...base, additionals: [tsig, opt] }))).toThrow(/last record/);
    expect(() => parseMessage(encodeMessage({ ...base, additionals: [opt, opt] }))).toThrow(/at most one OPT/);
    expect(() => parseMessage(encodeMessage({ ...base, answers: [tsig], additionals: [] }))).toThrow(/additional section/);
    expect(() => parseMessage(encodeMessage({ ...base, additionals: [{ ...tsig, class: CLASS.IN }] }))).toThrow(/class ANY/);
  });

  it('never throws anything but a format error, whatever the bytes', () => {
    const valid = encodeMessage(every());
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
        try {
          parseMessage(bytes);
        } catch (e) {
          expect(e).toBeInstanceOf(WireFormatError);
        }
      }),
      { numRuns: 3000 },
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(valid.length - 1), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }), (edits) => {
        const b = Buffer.from(valid);
        for (const [at, v] of edits) b[at] = v;
        try {
          const parsed = parseMessage(b);
          // Whatever parsed must encode again.
          encodeMessage(parsed.message);
        } catch (e) {
          expect(e).toBeInstanceOf(WireFormatError);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('builds response headers', () => {
    expect(responseHeader({ ...header, opcode: OPCODE.UPDATE }, 5, { aa: true })).toEqual({ ...header, opcode: OPCODE.UPDATE, qr: true, aa: true, rcode: 5 });
  });
});

describe('wire records and dnsplane targets', () => {
  it('turns wire data into canonical targets and back', () => {
    const cases: Array<[ResourceRecord['data'], string, string]> = [
      [{ kind: 'A', address: '192.0.2.1' }, 'A', '192.0.2.1'],
      [{ kind: 'AAAA', address: '2001:db8:0:0:0:0:0:1' }, 'AAAA', '2001:db8::1'],
      [{ kind: 'CNAME', host: 'WWW.Example.Test' }, 'CNAME', 'www.example.test'],
      [{ kind: 'MX', preference: 10, exchange: '' }, 'MX', '10 .'],
      [{ kind: 'SRV', priority: 1, weight: 2, port: 3, target: 'h.example.test' }, 'SRV', '1 2 3 h.example.test'],
      [{ kind: 'TXT', strings: [Buffer.from('ab'), Buffer.from('cd')] }, 'TXT', 'abcd'],
      [{ kind: 'CAA', flags: 0, tag: 'issue', value: Buffer.from('ca"x') }, 'CAA', '0 issue "ca\\"x"'],
    ];
    for (const [data, type, target] of cases) {
      expect(targetOfData(data!, 'f')).toEqual({ type, target });
      expect(targetOfData(dataOfTarget(type as 'A', target), 'f')).toEqual({ type, target });
    }
  });

  it('refuses what dnsplane would change or cannot hold', () => {
    const bad = (data: ResourceRecord['data']) => {
      try {
        targetOfData(data!, 'updates[0]');
      } catch (e) {
        expect(e).toBeInstanceOf(InvalidInputError);
        return (e as InvalidInputError).message;
      }
      return 'accepted';
    };
    expect(bad({ kind: 'TXT', strings: [Buffer.from('"quoted"')] })).toMatch(/double quote/);
    expect(bad({ kind: 'TXT', strings: [Buffer.from([0xff])] })).toMatch(/UTF-8/);
    expect(bad({ kind: 'TXT', strings: [Buffer.from('a\u0001')] })).toMatch(/control/);
    expect(bad({ kind: 'CNAME', host: 'a b.example' })).toMatch(/^updates\[0\]/);
    expect(bad({ kind: 'SOA', mname: 'a', rname: 'b', serial: 1, refresh: 1, retry: 1, expire: 1, minimum: 1 })).toMatch(/not managed/);
  });

  it('cuts long TXT values into 255-byte strings, never inside a character', () => {
    const text = `${'a'.repeat(254)}é${'b'.repeat(300)}`;
    const data = dataOfTarget('TXT', text);
    expect(data.kind === 'TXT' && data.strings.map((s) => s.length)).toEqual([254, 255, 47]);
    expect(targetOfData(data, 'f').target).toBe(text);
  });
});
