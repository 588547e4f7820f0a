/**
 * Zone transfers of a zone too big for one message, end to end (a real server, Postgres, the OVH
 * simulator over HTTPS): every message's TSIG verified in its chain (RFC 8945 §5.3.1), every message
 * the bytes the synchronous encoder (encodeMessage) writes for its records and as full as it can be,
 * the records those of the zone; packing them yields to the event loop, and a second transfer of an
 * unchanged zone shares the packed messages.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant } from '../../src/core/tenants/tenants.js';
import { dnsZone } from '../../src/core/dns-door/dns-zone.js';
import { Slicer } from '../../src/core/slices.js';
import type { TsigKey } from '../../src/core/keys/tsig.js';
import { records, soaRecord } from '../../src/dnsserver/query.js';
import { tsigSize } from '../../src/dnsserver/exchange.js';
import { transferMessages } from '../../src/dnsserver/transfer.js';
import {
  MAX_MESSAGE_BYTES,
  MessageTooLargeError,
  TYPE,
  encodeMessage,
  parseMessage,
  verifyContinuation,
  verifyTsig,
  withoutTsig,
} from '../../src/dns/wire/index.js';
import { mixedRecords } from '../helpers/big-zone.js';
import { memoryKeyring } from '../helpers/dns-keys.js';
import { query, tcpExchange } from '../helpers/dns-client.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'big.test';
/** Enough for several 64 KiB messages. */
const RECORDS = mixedRecords(4000, ZONE);

const keyring = memoryKeyring();
let h: Harness;
let port: number;
let key: TsigKey;

beforeAll(async () => {
  h = await startHarness({
    zones: { [ZONE]: RECORDS },
    behavior: { expandedRecordLists: 'honoured' },
    env: { DNSPLANE_DNS_LISTEN: '127.0.0.1:0', DNSPLANE_DNS_RATE: '10000' },
    dnsKeyring: keyring,
  });
  port = h.server.dns!.port;
  const alice = await createTenant(h.server.ctx.pool, { name: 'alice', zones: [ZONE] });
  key = keyring.add(alice.tenant, { algorithm: 'hmac-sha256' });
});

afterAll(async () => {
  await h?.close();
});

describe('a transfer of many messages', () => {
  it('AXFR: each message signed in the chain, the bytes encodeMessage writes, each as full as it can be, the zone in order', async () => {
    const request = query(ZONE, TYPE.AXFR, { key });
    const answers = await tcpExchange(port, request, { transfer: true });
    expect(answers.length).toBeGreaterThanOrEqual(3);
    let mac = parseMessage(request).tsig!.record.data.mac;
    const unsigned = answers.map((a, i) => {
      const tsig = a.parsed.tsig!;
      const verdict = i === 0 ? verifyTsig(a.bytes, tsig, key, Math.floor(Date.now() / 1000), mac) : verifyContinuation(a.bytes, tsig, key, mac);
      expect(verdict).toMatchObject({ ok: true });
      mac = tsig.record.data.mac;
      return withoutTsig(a.bytes, tsig.offset, tsig.record.data.originalId);
    });
    const limit = MAX_MESSAGE_BYTES - tsigSize(key);
    const messages = unsigned.map((bytes) => parseMessage(bytes).message);
    messages.forEach((m, i) => {
      // Golden: what the synchronous encoder writes for this message's header, question and records.
      expect(encodeMessage(m, limit).equals(unsigned[i]!)).toBe(true);
      expect(m.questions).toHaveLength(i === 0 ? 1 : 0);
      // Full: the next message's first record would not have fitted.
      const next = messages[i + 1];
      if (next) expect(() => encodeMessage({ ...m, answers: [...m.answers, next.answers[0]!] }, limit)).toThrow(MessageTooLargeError);
    });
    const z = await dnsZone(h.server.ctx, ZONE);
    const expected = [soaRecord(z), ...z.endpoints.flatMap((e) => records(e.dnsName, e)), soaRecord(z)];
    const got = messages.flatMap((m) => m.answers);
    // Each record as it goes on the wire (parsing spells an AAAA address its own way).
    const wire = (rrs: typeof got) => rrs.map((r) => encodeMessage({ ...messages[0]!, questions: [], answers: [r] }).toString('hex'));
    expect(wire(got)).toEqual(wire(expected));
  });

  it('IXFR from an older serial: the whole zone, in the same messages as AXFR but for the question', async () => {
    const strip = (a: { bytes: Buffer; parsed: { tsig?: { offset: number; record: { data: { originalId: number } } } } }) =>
      withoutTsig(a.bytes, a.parsed.tsig!.offset, a.parsed.tsig!.record.data.originalId);
    const axfr = (await tcpExchange(port, query(ZONE, TYPE.AXFR, { key }), { transfer: true })).map(strip);
    const old = {
      name: ZONE,
      type: TYPE.SOA,
      class: 1,
      ttl: 0,
      data: { kind: 'SOA' as const, mname: 'x', rname: 'y', serial: 0, refresh: 0, retry: 0, expire: 0, minimum: 0 },
    };
    const ixfr = (await tcpExchange(port, query(ZONE, TYPE.IXFR, { key, authorities: [old] }), { transfer: true })).map(strip);
    expect(ixfr.length).toBe(axfr.length);
    expect(parseMessage(ixfr[0]!).message.questions).toEqual([{ name: ZONE, type: TYPE.IXFR, class: 1 }]);
    expect(ixfr.slice(1).map((m) => m.subarray(4))).toEqual(axfr.slice(1).map((m) => m.subarray(4)));
  });

  it('packs the messages in slices: a turn of the event loop scheduled before the packing runs before it ends', async () => {
    const z = await dnsZone(h.server.ctx, ZONE);
    const slicer = new Slicer(0);
    let turned = false;
    setImmediate(() => (turned = true));
    // A question form not packed before (the name's case as a client might send it).
    const packing = transferMessages(z, [{ name: 'BIG.test', type: TYPE.AXFR, class: 1 }], MAX_MESSAGE_BYTES, slicer);
    const turnedBeforeTheEnd = await packing.then(() => turned);
    expect(turnedBeforeTheEnd).toBe(true);
    expect(slicer.yields).toBeGreaterThan(10);
  });

  it('a second transfer of the unchanged zone shares the packed messages', async () => {
    const z = await dnsZone(h.server.ctx, ZONE);
    const q = [{ name: ZONE, type: TYPE.AXFR, class: 1 }];
    const limit = MAX_MESSAGE_BYTES - tsigSize(key);
    // The AXFR over TCP above packed this form: asked again, the same messages come back, packed once.
    const slicer = new Slicer(0);
    const again = await transferMessages(z, q, limit, slicer);
    expect(slicer.yields).toBe(0);
    expect(await transferMessages(z, q, limit)).toBe(again);
    const before = await tcpExchange(port, query(ZONE, TYPE.AXFR, { key }), { transfer: true });
    expect(before.map((a) => withoutTsig(a.bytes, a.parsed.tsig!.offset, a.parsed.tsig!.record.data.originalId).subarray(4))).toEqual(
      again.map((m) => m.subarray(4)),
    );
  });
});
