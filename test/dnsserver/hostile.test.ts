/**
 * Hostile input at the DNS door: truncated and oversized packets, wrong section counts, compression
 * loops, a 65,535-byte TCP message, a slow TCP client, too many connections, a flood of unsigned
 * queries. Each is answered or dropped; the server does not crash, its memory and its log lines stay
 * bounded, and the API port keeps answering (its latency is measured and printed, not asserted).
 */
import dgram from 'node:dgram';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLASS, OPCODE, RCODE, TYPE, encodeMessage } from '../../src/dns/wire/index.js';
import { query, tcpExchange, udpExchange } from '../helpers/dns-client.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { memoryLogger } from '../helpers/sim-server.js';
import { until } from '../helpers/until.js';

const ZONE = 'example.test';
const logged = memoryLogger('info');
let h: Harness;
let port: number;

beforeAll(async () => {
  h = await startHarness({
    zones: { [ZONE]: [{ subDomain: 'www', fieldType: 'A', target: '192.0.2.1' }], 'cold.test': [] },
    env: { DNSPLANE_DNS_LISTEN: '127.0.0.1:0' },
    logger: logged.log,
  });
  port = h.server.dns!.port;
  // The zone read once, so that what follows costs no OVH call.
  expect((await tcpExchange(port, query(ZONE, TYPE.SOA)))[0]!.parsed.message.header.rcode).toBe(RCODE.NOERROR);
});

afterAll(async () => {
  await h?.close();
});

/** The door still answers a plain query (over TCP: the UDP rate of this source may be spent). */
async function stillAnswers(): Promise<void> {
  const a = await tcpExchange(port, query(`www.${ZONE}`, TYPE.A));
  expect(a[0]?.parsed.message.answers.map((r) => r.data)).toEqual([{ kind: 'A', address: '192.0.2.1' }]);
}

/** Sends raw bytes over TCP in one frame; resolves with the answers' RCODEs once the server answered or closed. */
async function rawTcp(bytes: Buffer, declared = bytes.length): Promise<number[]> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const rcodes: number[] = [];
    let pending = Buffer.alloc(0);
    s.on('connect', () => {
      const len = Buffer.alloc(2);
      len.writeUInt16BE(declared);
      s.write(Buffer.concat([len, bytes]));
    });
    s.on('data', (d: Buffer) => {
      pending = Buffer.concat([pending, d]);
      if (pending.length >= 2 + pending.readUInt16BE(0)) {
        rcodes.push(pending[5]! & 0xf);
        s.destroy();
      }
    });
    s.on('close', () => resolve(rcodes));
    s.on('error', () => undefined);
  });
}

describe('malformed messages', () => {
  it('truncated packets, wrong counts, compression loops: FORMERR or nothing, never a crash', async () => {
    const valid = query(`www.${ZONE}`, TYPE.A, { id: 1 });
    const answers: Array<number | undefined> = [];
    for (let n = 0; n < valid.length; n++) {
      const a = await udpExchange(port, valid.subarray(0, n), 500);
      answers.push(a?.parsed.message.header.rcode);
    }
    // Under 12 bytes there is no header to answer; from 12 on, FORMERR.
    expect(answers.slice(0, 12).every((r) => r === undefined)).toBe(true);
    expect(answers.slice(12).every((r) => r === RCODE.FORMERR)).toBe(true);

    const counts = Buffer.from(valid);
    counts.writeUInt16BE(40, 4);
    expect((await udpExchange(port, counts))?.parsed.message.header.rcode).toBe(RCODE.FORMERR);

    // A question whose name is a pointer to itself.
    const loop = Buffer.concat([valid.subarray(0, 12), Buffer.from([0xc0, 12, 0, 1, 0, 1])]);
    loop.writeUInt16BE(1, 4);
    expect((await udpExchange(port, loop))?.parsed.message.header.rcode).toBe(RCODE.FORMERR);
    // A response (QR set) is never answered.
    const response = Buffer.from(valid);
    response[2] = response[2]! | 0x80;
    expect(await udpExchange(port, response, 500)).toBeUndefined();
    await stillAnswers();
  });

  it('an oversized UDP packet and a 65,535-byte TCP message are answered FORMERR', async () => {
    const big = Buffer.concat([query(ZONE, TYPE.SOA, { id: 2 }), Buffer.alloc(60_000, 0x41)]);
    expect((await udpExchange(port, big))?.parsed.message.header.rcode).toBe(RCODE.FORMERR);
    const max = Buffer.concat([query(ZONE, TYPE.SOA, { id: 3 }), Buffer.alloc(0xffff - query(ZONE, TYPE.SOA).length, 0)]);
    expect(max.length).toBe(0xffff);
    expect(await rawTcp(max)).toEqual([RCODE.FORMERR]);
    // A valid 64 KiB UPDATE-shaped message with the largest count the codec takes.
    const many = encodeMessage({
      header: { id: 4, qr: false, opcode: OPCODE.UPDATE, aa: false, tc: false, rd: false, ra: false, z: 0, rcode: 0 },
      questions: [{ name: ZONE, type: TYPE.SOA, class: CLASS.IN }],
      answers: [],
      authorities: Array.from({ length: 3000 }, (_, i) => ({ name: `n${i}.${ZONE}`, type: TYPE.TXT, class: CLASS.ANY, ttl: 0 })),
      additionals: [],
    });
    expect(await rawTcp(many)).toEqual([RCODE.REFUSED]); // unsigned
    await stillAnswers();
  });

  it('a slow TCP client (a message begun, never finished) is cut by the server, unanswered, no sooner than its 10 s', async () => {
    // src/dnsserver/listener.ts: a connection must complete each message within MESSAGE_TIMEOUT_MS
    // (10 s) of its opening. Its timer starts once the server accepts, which is after `started`.
    const started = performance.now();
    const slow = net.connect(port, '127.0.0.1');
    let received = 0;
    let endedByServer = false;
    slow.on('data', (d: Buffer) => (received += d.length));
    slow.on('end', () => (endedByServer = true));
    await new Promise<void>((resolve) => slow.on('connect', resolve));
    slow.write(Buffer.from([0, 40, 0x12])); // 3 bytes of a 40-byte message, then nothing
    await new Promise<void>((resolve) => slow.on('close', resolve));
    const after = performance.now() - started;
    expect(received, 'bytes the server sent').toBe(0);
    expect(endedByServer, 'the server closed the connection').toBe(true);
    expect(after).toBeGreaterThanOrEqual(10_000 - 50); // a timer's clock may run a few ms apart from performance.now()
    await stillAnswers();
  });

  it('connections beyond the bound from one source are closed at once', async () => {
    const sockets = await Promise.all(
      Array.from(
        { length: 80 },
        () =>
          new Promise<net.Socket>((resolve) => {
            const s = net.connect(port, '127.0.0.1', () => resolve(s));
            s.on('error', () => undefined);
          }),
      ),
    );
    const closed = await Promise.all(
      sockets.map(
        (s) =>
          new Promise<boolean>((resolve) => {
            if (s.destroyed) return resolve(true);
            const t = setTimeout(() => resolve(false), 2000);
            s.once('close', () => {
              clearTimeout(t);
              resolve(true);
            });
          }),
      ),
    );
    expect(closed.filter(Boolean).length).toBeGreaterThanOrEqual(80 - 64);
    for (const s of sockets) s.destroy();
    // The server sees those closes as they arrive: a new connection is served once it has.
    await until('a new connection to be served', async () => (await tcpExchange(port, query(`www.${ZONE}`, TYPE.A))).length > 0);
    await stillAnswers();
  });
});

describe('a zone OVH will not let dnsplane read', () => {
  it('costs one OVH read for a burst of queries, then none for 10 s; SERVFAIL each (the SOA answered from memory); a bounded number of log lines', async () => {
    h.sim.faults.fail({
      method: 'GET',
      path: '/domain/zone/cold.test/**',
      effect: { kind: 'status', status: 403, body: { class: 'Client::Forbidden', message: 'This call has not been granted' } },
    });
    h.sim.clearCalls();
    const before = logged.lines.filter((l) => l['msg'] === 'dns: answering a message failed').length;
    const answers = await Promise.all(Array.from({ length: 30 }, () => tcpExchange(port, query('cold.test', TYPE.SOA))));
    // The SOA question never fails (issue 43): the zone's SOA as last known (its generation), answer section and all.
    expect(answers.map((a) => [a[0]?.parsed.message.header.rcode, a[0]?.parsed.message.answers.length])).toEqual(new Array(30).fill([RCODE.NOERROR, 1]));
    const again = await Promise.all(Array.from({ length: 30 }, () => tcpExchange(port, query('www.cold.test', TYPE.A))));
    expect(again.map((a) => a[0]?.parsed.message.header.rcode)).toEqual(new Array(30).fill(RCODE.SERVFAIL));
    // The first read: GET …/soa refused at once (the sync reads the SOA first); nothing after it.
    expect(h.sim.calls().filter((c) => c.path.startsWith('/domain/zone/cold.test')).length).toBe(1);
    expect(logged.lines.filter((l) => l['msg'] === 'dns: answering a message failed').length - before).toBeLessThanOrEqual(5);
    h.sim.faults.clear();
  });
});

describe('a flood of unsigned queries', () => {
  it('is answered up to the source rate and dropped beyond, memory and log lines bounded, the API port still answering', async () => {
    const health = async () => {
      const t = performance.now();
      const r = await fetch(`${h.server.url}/healthz`);
      await r.text();
      return performance.now() - t;
    };
    const quiet: number[] = [];
    for (let i = 0; i < 20; i++) quiet.push(await health());
    const heapBefore = process.memoryUsage().heapUsed;
    const linesBefore = logged.lines.length;

    const socket = dgram.createSocket('udp4');
    let answered = 0;
    socket.on('message', () => answered++);
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    const total = 20_000;
    const busy: number[] = [];
    const floodStarted = performance.now();
    let sent = 0;
    const flood = (async () => {
      const q = query(`www.${ZONE}`, TYPE.A, { id: 9 });
      while (sent < total) {
        for (let i = 0; i < 200 && sent < total; i++, sent++) socket.send(q, port, '127.0.0.1');
        await new Promise((r) => setImmediate(r));
      }
    })();
    const probing = (async () => {
      while (sent < total) busy.push(await health());
    })();
    await Promise.all([flood, probing]);
    const seconds = (performance.now() - floodStarted) / 1000;
    // Every datagram sent has been read by the server once a query sent after them is answered over TCP.
    await stillAnswers();
    socket.close();
    const heapAfter = process.memoryUsage().heapUsed;
    const metrics = await (await fetch(`${h.server.url}/metrics`)).text();
    const dropped = Number(/dnsplane_dns_dropped_total\{reason="rate_limited"\} (\d+)/.exec(metrics)?.[1] ?? 0);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
    const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)] ?? NaN;
    console.log(
      `dns flood: ${total} unsigned queries from one source in ${seconds.toFixed(1)} s: ${answered} answered, ${dropped} dropped by the rate limit (the rest lost in the kernel's socket buffers); ` +
        `API /healthz round trip quiet median ${median(quiet).toFixed(1)} ms p95 ${p95(quiet).toFixed(1)} ms, during the flood median ${median(busy).toFixed(1)} ms p95 ${p95(busy).toFixed(1)} ms (${busy.length} probes); ` +
        `heap ${((heapAfter - heapBefore) / 1e6).toFixed(1)} MB more; ${logged.lines.length - linesBefore} log lines`,
    );
    // DNSPLANE_DNS_RATE's default: a burst of 100, then 50 a second (a generous margin for the time taken).
    expect(answered).toBeGreaterThan(0);
    expect(answered).toBeLessThanOrEqual(100 + 50 * (seconds + 5));
    expect(dropped).toBeGreaterThan(0);
    expect(heapAfter - heapBefore).toBeLessThan(200e6);
    expect(logged.lines.length - linesBefore).toBeLessThan(10);
    expect(busy.length).toBeGreaterThan(0);
  });
});
