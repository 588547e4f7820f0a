import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  CLASS,
  OPCODE,
  TSIG_WIRE,
  TSIG_ERROR,
  TYPE,
  algorithmOf,
  appendUnsignedTsigError,
  encodeMessage,
  nameWire,
  parseMessage,
  signContinuation,
  signMessage,
  timeOtherData,
  verifyContinuation,
  verifyTsig,
  type Message,
  type TsigAlgorithm,
  type TsigSigner,
} from '../../src/dns/wire/index.js';

const query: Message = {
  header: { id: 4242, qr: false, opcode: OPCODE.UPDATE, aa: false, tc: false, rd: false, ra: false, z: 0, rcode: 0 },
  questions: [{ name: 'example.test', type: TYPE.SOA, class: CLASS.IN }],
  answers: [],
  authorities: [{ name: '_acme-challenge.example.test', type: TYPE.TXT, class: CLASS.IN, ttl: 60, data: { kind: 'TXT', strings: [Buffer.from('token')] } }],
  additionals: [],
};
const now = 1_700_000_000;
const keyOf = (algorithm: TsigAlgorithm): TsigSigner => ({ name: 'cluster1.dnsplane', algorithm, secret: randomBytes(32) });

describe('TSIG', () => {
  it.each(Object.keys(TSIG_WIRE) as TsigAlgorithm[])('%s: a request signs and verifies; a response chains its MAC', (algorithm) => {
    const key = keyOf(algorithm);
    const req = signMessage(encodeMessage(query), key, undefined, { timeSigned: now });
    const parsed = parseMessage(req.bytes);
    expect(parsed.tsig?.record.name).toBe('cluster1.dnsplane');
    expect(algorithmOf(parsed.tsig!.record.data.algorithm)).toBe(algorithm);
    expect(verifyTsig(req.bytes, parsed.tsig!, key, now + 299)).toEqual({ ok: true, mac: req.mac });
    expect(req.mac.length).toBe(TSIG_WIRE[algorithm].macLength);

    const answer = encodeMessage({ ...query, header: { ...query.header, qr: true }, authorities: [] });
    const res = signMessage(answer, key, req.mac, { timeSigned: now });
    const rp = parseMessage(res.bytes);
    expect(verifyTsig(res.bytes, rp.tsig!, key, now, req.mac).ok).toBe(true);
    // Without the request MAC the response does not verify: it is bound to the request.
    expect(verifyTsig(res.bytes, rp.tsig!, key, now).ok).toBe(false);
  });

  it('computes the MAC of RFC 8945 §4.3 by hand (canonical names, variables)', () => {
    const key: TsigSigner = { name: 'Key.Example', algorithm: 'hmac-sha256', secret: Buffer.from('secret') };
    const unsigned = encodeMessage(query);
    const { mac } = signMessage(unsigned, key, undefined, { timeSigned: now, fudge: 300 });
    const vars = Buffer.concat([
      nameWire('key.example'),
      Buffer.from([0, 255, 0, 0, 0, 0]),
      nameWire('hmac-sha256'),
      timeOtherData(now),
      Buffer.from([0x01, 0x2c, 0, 0, 0, 0]),
    ]);
    expect(mac).toEqual(createHmac('sha256', 'secret').update(unsigned).update(vars).digest());
  });

  it('checks the MAC before the time, and the key algorithm before both', () => {
    const key = keyOf('hmac-sha256');
    const stale = signMessage(encodeMessage(query), key, undefined, { timeSigned: now - 301 });
    const p = parseMessage(stale.bytes);
    expect(verifyTsig(stale.bytes, p.tsig!, key, now)).toMatchObject({ ok: false, error: TSIG_ERROR.BADTIME });
    expect(verifyTsig(stale.bytes, p.tsig!, { ...key, secret: randomBytes(32) }, now)).toMatchObject({ ok: false, error: TSIG_ERROR.BADSIG });
    expect(verifyTsig(stale.bytes, p.tsig!, { ...key, algorithm: 'hmac-sha1' }, now)).toMatchObject({ ok: false, error: TSIG_ERROR.BADKEY });
    const future = signMessage(encodeMessage(query), key, undefined, { timeSigned: now + 301 });
    expect(verifyTsig(future.bytes, parseMessage(future.bytes).tsig!, key, now)).toMatchObject({ error: TSIG_ERROR.BADTIME });
  });

  it('refuses a changed byte, a changed id, and truncated or overlong MACs', () => {
    const key = keyOf('hmac-sha512');
    const { bytes } = signMessage(encodeMessage(query), key, undefined, { timeSigned: now });
    const flipped = Buffer.from(bytes);
    const at = flipped.indexOf('token');
    flipped[at] = flipped[at]! ^ 1;
    expect(verifyTsig(flipped, parseMessage(flipped).tsig!, key, now)).toMatchObject({ error: TSIG_ERROR.BADSIG });
    // The id may change on the way (a forwarder): the Original ID is what is signed.
    const reId = Buffer.from(bytes);
    reId.writeUInt16BE(1, 0);
    expect(verifyTsig(reId, parseMessage(reId).tsig!, key, now).ok).toBe(true);

    const parsed = parseMessage(bytes);
    const cut = (n: number) => {
      const t = parsed.tsig!.record.data;
      const rebuilt = encodeMessage({ ...parsed.message, additionals: [{ ...parsed.tsig!.record, data: { ...t, mac: t.mac.subarray(0, n) } }] });
      return verifyTsig(rebuilt, parseMessage(rebuilt).tsig!, key, now);
    };
    expect(cut(40)).toMatchObject({ error: TSIG_ERROR.BADTRUNC });
    expect(cut(8)).toMatchObject({ formerr: true });
  });

  it('signs the later messages of a stream over the previous MAC and the timers (RFC 8945 §5.3.1)', () => {
    const key = keyOf('hmac-sha1');
    const req = signMessage(encodeMessage(query), key, undefined, { timeSigned: now });
    const first = signMessage(encodeMessage({ ...query, header: { ...query.header, qr: true } }), key, req.mac, { timeSigned: now });
    const second = signContinuation(encodeMessage({ ...query, header: { ...query.header, qr: true }, questions: [] }), key, first.mac, { timeSigned: now });
    const p2 = parseMessage(second.bytes);
    expect(verifyContinuation(second.bytes, p2.tsig!, key, first.mac)).toEqual({ ok: true, mac: second.mac });
    expect(verifyContinuation(second.bytes, p2.tsig!, key, req.mac).ok).toBe(false);
  });

  it('answers key errors unsigned, with an empty MAC', () => {
    const key = keyOf('hmac-md5');
    const req = parseMessage(signMessage(encodeMessage(query), key, undefined, { timeSigned: now }).bytes);
    const t = req.tsig!.record.data;
    const answer = appendUnsignedTsigError(
      encodeMessage({ ...query, header: { ...query.header, qr: true, rcode: 9 }, authorities: [] }),
      { ...t, keyName: 'cluster1.dnsplane' },
      TSIG_ERROR.BADKEY,
    );
    const p = parseMessage(answer);
    expect(p.tsig?.record.data).toMatchObject({ error: TSIG_ERROR.BADKEY, mac: Buffer.alloc(0), timeSigned: now, algorithm: 'hmac-md5.sig-alg.reg.int' });
  });

  it('knows the algorithms by their wire names', () => {
    expect(algorithmOf('HMAC-MD5.SIG-ALG.REG.INT.')).toBe('hmac-md5');
    expect(algorithmOf('hmac-sha256')).toBe('hmac-sha256');
    expect(algorithmOf('hmac-md5')).toBeUndefined();
    expect(algorithmOf('gss-tsig')).toBeUndefined();
  });
});
