/**
 * Our TSIG against real implementations, not only against our own encoder: BIND's `dig -y` and
 * `nsupdate -y` sign requests that our verifier must accept, our encoder must compute the very MAC
 * they computed for the same bytes, and they must accept the responses we sign (and refuse one whose
 * MAC is off by one bit, which proves they check it). A small responder built on the codec stands in
 * for the server.
 */
import dgram from 'node:dgram';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  OPCODE,
  TSIG_WIRE,
  encodeMessage,
  parseMessage,
  responseHeader,
  signMessage,
  tsigKeyName,
  verifyTsig,
  withoutTsig,
  type TsigAlgorithm,
  type TsigSigner,
} from '../../src/dns/wire/index.js';
import { describeWithTools, dig, nsupdate } from '../helpers/dns-tools.js';

const ALGORITHMS = Object.keys(TSIG_WIRE) as TsigAlgorithm[];

describeWithTools(['dig', 'nsupdate'], 'TSIG against dig and nsupdate', () => {
  const keys = new Map<string, TsigSigner>(
    ALGORITHMS.map((algorithm) => [`${algorithm}.key.test`, { name: `${algorithm}.key.test`, algorithm, secret: randomBytes(32) }]),
  );
  const received: Buffer[] = [];
  let corrupt = false;
  let socket: dgram.Socket;
  let port: number;

  beforeAll(async () => {
    socket = dgram.createSocket('udp4');
    socket.on('message', (msg, from) => {
      received.push(msg);
      const p = parseMessage(msg);
      const key = keys.get(tsigKeyName(p.tsig!.record))!;
      const verdict = verifyTsig(msg, p.tsig!, key, Math.floor(Date.now() / 1000));
      const answer = encodeMessage({
        header: responseHeader(p.message.header, 0, { aa: true }),
        questions: p.message.questions,
        answers: [],
        authorities: [],
        additionals: [],
      });
      const signed = signMessage(answer, key, verdict.ok ? verdict.mac : undefined).bytes;
      if (corrupt) signed[signed.length - 7] = signed[signed.length - 7]! ^ 1; // the MAC's last byte
      socket.send(signed, from.port, from.address);
    });
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    port = socket.address().port;
  });
  afterAll(() => new Promise<void>((resolve) => socket.close(() => resolve())));

  const cli = (algorithm: TsigAlgorithm) => {
    const k = keys.get(`${algorithm}.key.test`)!;
    return { algorithm, name: k.name, secret: k.secret.toString('base64') };
  };

  it.each(ALGORITHMS)('%s: dig signs what we verify, and verifies what we sign', async (algorithm) => {
    received.length = 0;
    const out = await dig(port, ['example.test', 'SOA'], cli(algorithm));
    expect(out.stdout).toMatch(/TSIG PSEUDOSECTION/);
    expect(out.stdout + out.stderr).not.toMatch(/could not be validated|Couldn't verify/i);
    const p = parseMessage(received[0]!);
    expect(verifyTsig(received[0]!, p.tsig!, keys.get(`${algorithm}.key.test`)!, Math.floor(Date.now() / 1000)).ok).toBe(true);
  });

  it.each(ALGORITHMS)('%s: nsupdate signs an UPDATE we verify, whose MAC our encoder computes byte for byte', async (algorithm) => {
    received.length = 0;
    const out = await nsupdate(cli(algorithm), `server 127.0.0.1 ${port}\nzone example.test\nupdate add _acme-challenge.example.test 60 TXT "v1"\nsend\n`);
    expect(out.code, out.stderr).toBe(0);
    const bytes = received[0]!;
    const p = parseMessage(bytes);
    expect(p.message.header.opcode).toBe(OPCODE.UPDATE);
    const t = p.tsig!.record.data;
    const key = keys.get(`${algorithm}.key.test`)!;
    const ours = signMessage(withoutTsig(bytes, p.tsig!.offset, t.originalId), key, undefined, {
      timeSigned: t.timeSigned,
      fudge: t.fudge,
      originalId: t.originalId,
    });
    expect(ours.mac.toString('hex')).toBe(t.mac.toString('hex'));
    expect(ours.bytes.subarray(p.tsig!.offset).toString('hex')).toBe(bytes.subarray(p.tsig!.offset).toString('hex'));
  });

  it('dig and nsupdate refuse a response whose MAC is wrong', async () => {
    corrupt = true;
    try {
      const out = await dig(port, ['example.test', 'SOA'], cli('hmac-sha256'));
      expect(out.stdout + out.stderr).toMatch(/could not be validated|Couldn't verify/i);
      const up = await nsupdate(cli('hmac-sha256'), `server 127.0.0.1 ${port}\nzone example.test\nupdate add x.example.test 60 TXT "v"\nsend\n`);
      expect(up.code).not.toBe(0);
      expect(up.stderr).toMatch(/tsig verify failure/);
    } finally {
      corrupt = false;
    }
  });
});
