/**
 * DNS UPDATE end to end with BIND's nsupdate (it signs with TSIG and checks the signature of every
 * answer): a real server (Postgres, the OVH simulator over HTTPS), each message with its RCODE and the
 * exact OVH calls the simulator saw — one TXT add: one POST and one refresh; three adds in one message:
 * three POSTs and one refresh; anything refused: none.
 */
import dgram from 'node:dgram';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTenant, type Tenant } from '../../src/core/tenants/tenants.js';
import {
  CLASS,
  OPCODE,
  RCODE,
  TSIG_WIRE,
  TSIG_ERROR,
  TYPE,
  encodeMessage,
  parseMessage,
  signMessage,
  verifyTsig,
  withoutTsig,
  type Message,
  type TsigAlgorithm,
} from '../../src/dns/wire/index.js';
import type { TsigKey } from '../../src/core/keys/tsig.js';
import { Policy } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { callLines, ep } from '../helpers/expect.js';
import { cliKey, memoryKeyring } from '../helpers/dns-keys.js';
import { describeWithTools, nsupdate } from '../helpers/dns-tools.js';
import { tcpExchange, udpExchange } from '../helpers/dns-client.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { memoryLogger } from '../helpers/sim-server.js';

const ZONE = 'example.test';
const REC = `/domain/zone/${ZONE}/record`;
const REFRESH = `POST /domain/zone/${ZONE}/refresh`;
const keyring = memoryKeyring();
const logged = memoryLogger('info');
let h: Harness;
let port: number;
let alice: { tenant: Tenant; token: string };
let bob: { tenant: Tenant; token: string };
const keys = new Map<TsigAlgorithm, TsigKey>();
let bobKey: TsigKey;
let carolKey: TsigKey;
let acmeKey: TsigKey;
let admin: string;

beforeAll(async () => {
  h = await startHarness({
    zones: {
      [ZONE]: [
        { subDomain: '', fieldType: 'NS', target: 'dns1.sim.test.' },
        { subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 },
      ],
      'other.test': [],
    },
    env: { DNSPLANE_DNS_LISTEN: '127.0.0.1:0' },
    dnsKeyring: keyring,
    logger: logged.log,
  });
  port = h.server.dns!.port;
  alice = await createTenant(h.server.ctx.pool, { name: 'alice', zones: [ZONE] });
  bob = await createTenant(h.server.ctx.pool, { name: 'bob', zones: [ZONE] });
  const carol = await createTenant(h.server.ctx.pool, { name: 'carol', zones: ['other.test'] });
  for (const algorithm of Object.keys(TSIG_WIRE) as TsigAlgorithm[]) keys.set(algorithm, keyring.add(alice.tenant, { algorithm }));
  bobKey = keyring.add(bob.tenant, { algorithm: 'hmac-sha256' });
  carolKey = keyring.add(carol.tenant, { algorithm: 'hmac-sha256' });
  acmeKey = keyring.add(alice.tenant, { algorithm: 'hmac-sha1', acmeOnly: true });
  admin = await h.tenant('root', [], { admin: true });
  // bob owns taken.example.test A (through the API).
  await h.zoneClient(bob.token).apply({
    source: {
      case: 'plan',
      value: { policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [], endpoints: [ep(`taken.${ZONE}`, 'A', ['192.0.2.7'])] } } },
    },
  });
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

const alicesKey = () => keys.get('hmac-sha256')!;

/** nsupdate with these lines (server and zone first, send last): its exit code and what it printed. */
async function nsu(key: TsigKey | undefined, lines: string[], opts: { tcp?: boolean; zone?: string } = {}) {
  const out = await nsupdate(key && cliKey(key), [`server 127.0.0.1 ${port}`, `zone ${opts.zone ?? ZONE}`, ...lines, 'send', ''].join('\n'), opts);
  return { code: out.code, text: out.stdout + out.stderr };
}

/** The RCODE nsupdate reported ("NOERROR" when it succeeded). */
function rcodeOf(r: { code: number | null; text: string }): string {
  if (r.code === 0) return 'NOERROR';
  return /update failed: ([A-Z]+)/.exec(r.text)?.[1] ?? /TSIG error with server: (.*)/.exec(r.text)?.[1] ?? r.text.trim();
}

const calls = () => callLines(h.sim).map((c) => c.replace(/\/record\/\d+$/, '/record/ID'));

async function txtValues(name: string): Promise<string[]> {
  return h.sim
    .publishedRecords(ZONE)
    .filter((r) => r.fieldType === 'TXT' && (r.subDomain === '' ? ZONE : `${r.subDomain}.${ZONE}`) === name)
    .map((r) => r.target)
    .sort();
}

describeWithTools(['nsupdate'], 'UPDATE with nsupdate', () => {
  it.each(Object.keys(TSIG_WIRE) as TsigAlgorithm[])(
    '%s: one TXT add is one POST and one refresh; its delete one DELETE and one refresh',
    async (algorithm) => {
      const key = keys.get(algorithm)!;
      const name = `_acme-challenge.${algorithm}.${ZONE}`;
      expect(rcodeOf(await nsu(key, [`update add ${name} 60 TXT "token-${algorithm}"`]))).toBe('NOERROR');
      expect(calls()).toEqual([`POST ${REC}`, REFRESH]);
      expect(await txtValues(name)).toEqual([`token-${algorithm}`]);
      h.sim.clearCalls();
      expect(rcodeOf(await nsu(key, [`update delete ${name} TXT "token-${algorithm}"`]))).toBe('NOERROR');
      expect(calls()).toEqual([`DELETE ${REC}/ID`, REFRESH]);
      expect(await txtValues(name)).toEqual([]);
    },
  );

  it('three adds in one message: three POSTs and one refresh; sent again, no call (no double apply)', async () => {
    const lines = ['update add a1.example.test 300 A 192.0.2.11', 'update add a2.example.test 300 A 192.0.2.12', 'update add a3.example.test 300 TXT "three"'];
    expect(rcodeOf(await nsu(alicesKey(), lines))).toBe('NOERROR');
    expect(calls()).toEqual([`POST ${REC}`, `POST ${REC}`, `POST ${REC}`, REFRESH]);
    h.sim.clearCalls();
    expect(rcodeOf(await nsu(alicesKey(), lines, { tcp: true }))).toBe('NOERROR');
    expect(calls()).toEqual([]);
  });

  it('every prerequisite form, met and not met (nothing sent when not met)', async () => {
    const cases: Array<[string, string]> = [
      ['prereq yxdomain www.example.test', 'NOERROR'],
      ['prereq yxdomain nope.example.test', 'NXDOMAIN'],
      ['prereq nxdomain nope.example.test', 'NOERROR'],
      ['prereq nxdomain www.example.test', 'YXDOMAIN'],
      ['prereq yxrrset www.example.test A', 'NOERROR'],
      ['prereq yxrrset www.example.test TXT', 'NXRRSET'],
      ['prereq nxrrset www.example.test TXT', 'NOERROR'],
      ['prereq nxrrset www.example.test A', 'YXRRSET'],
      ['prereq yxrrset www.example.test A 192.0.2.1', 'NOERROR'],
      ['prereq yxrrset www.example.test A 192.0.2.2', 'NXRRSET'],
    ];
    for (const [prereq, rcode] of cases) {
      h.sim.clearCalls();
      const name = `p${cases.findIndex((c) => c[0] === prereq)}.example.test`;
      expect(rcodeOf(await nsu(alicesKey(), [prereq, `update add ${name} 60 TXT "p"`])), prereq).toBe(rcode);
      expect(calls(), prereq).toEqual(rcode === 'NOERROR' ? [`POST ${REC}`, REFRESH] : []);
    }
  });

  it('every update form: add, delete an RRset, delete one record, delete a name; deleting what is absent is no error', async () => {
    const n = `forms.${ZONE}`;
    expect(rcodeOf(await nsu(alicesKey(), [`update add ${n} 120 TXT "one"`, `update add ${n} 120 TXT "two"`, `update add ${n} 120 A 192.0.2.30`]))).toBe(
      'NOERROR',
    );
    h.sim.clearCalls();
    expect(rcodeOf(await nsu(alicesKey(), [`update delete ${n} TXT "one"`]))).toBe('NOERROR');
    expect(calls()).toEqual([`DELETE ${REC}/ID`, REFRESH]);
    expect(await txtValues(n)).toEqual(['two']);
    h.sim.clearCalls();
    expect(rcodeOf(await nsu(alicesKey(), [`update delete ${n} TXT`]))).toBe('NOERROR');
    expect(calls()).toEqual([`DELETE ${REC}/ID`, REFRESH]);
    h.sim.clearCalls();
    expect(rcodeOf(await nsu(alicesKey(), [`update add ${n} 120 TXT "three"`]))).toBe('NOERROR');
    h.sim.clearCalls();
    expect(rcodeOf(await nsu(alicesKey(), [`update delete ${n}`]))).toBe('NOERROR');
    expect(calls().sort()).toEqual([`DELETE ${REC}/ID`, `DELETE ${REC}/ID`, REFRESH].sort());
    expect(h.sim.publishedRecords(ZONE).filter((r) => r.subDomain === 'forms')).toEqual([]);
    h.sim.clearCalls();
    expect(rcodeOf(await nsu(alicesKey(), [`update delete ${n} TXT "gone"`, `update delete ${n} A`, `update delete ${n}`]))).toBe('NOERROR');
    expect(calls()).toEqual([]);
  });

  it('refuses what the key may not write — nothing sent, and the journal and the log say why', async () => {
    const refused: Array<[TsigKey, string, RegExp]> = [
      [alicesKey(), `update add taken.${ZONE} 60 A 192.0.2.5`, /taken\.example\.test A is owned by tenant "bob"/],
      [alicesKey(), `update delete www.${ZONE} A`, /exists in OVH without an owner/],
      [alicesKey(), `update add ${ZONE} 3600 NS ns.evil.example.`, /apex NS records are not writable/],
      [alicesKey(), `update delete ${ZONE} SOA`, /SOA record is not writable/],
      [alicesKey(), `update add hinfo.${ZONE} 60 HINFO "cpu" "os"`, /does not manage TYPE13 records/],
      [acmeKey, `update add _acme-challenge.${ZONE} 60 CNAME elsewhere.example.`, /ACME-only/],
      [acmeKey, `update add www2.${ZONE} 60 TXT "x"`, /ACME-only/],
      [carolKey, `update add x.${ZONE} 60 TXT "x"`, /not one of tenant "carol"'s zones/],
    ];
    for (const [key, line, why] of refused) {
      h.sim.clearCalls();
      expect(rcodeOf(await nsu(key, [line])), line).toBe('REFUSED');
      expect(calls(), line).toEqual([]);
      const journal = await h.adminClient(admin).listJournal({ zone: ZONE, limit: 1 });
      expect(journal.entries[0]?.summary, line).toMatch(why);
      expect(journal.entries[0]?.summary).toMatch(/^DNS UPDATE refused \(REFUSED\)/);
      const logLine = logged.lines.filter((l) => l['msg'] === 'dns: refused').at(-1);
      expect(logLine).toMatchObject({ zone: ZONE, tenant: key.tenant.name, key: key.name, rcode: 'REFUSED', component: 'dns' });
      expect(String(logLine?.['reason'])).toMatch(why);
      expect(logLine?.['name']).toBeDefined();
    }
    expect(rcodeOf(await nsu(acmeKey, [`update add _acme-challenge.${ZONE} 60 TXT "ok"`]))).toBe('NOERROR');
  });

  it('refuses unsigned updates, answers NOTAUTH for a zone it does not manage', async () => {
    expect(rcodeOf(await nsu(undefined, [`update add u.${ZONE} 60 TXT "u"`]))).toBe('REFUSED');
    expect(rcodeOf(await nsu(alicesKey(), ['update add x.nope.test 60 TXT "x"'], { zone: 'nope.test' }))).toBe('NOTAUTH');
    // A sub-zone (cert-manager's zone discovery stops at a delegation): NOTAUTH too.
    expect(rcodeOf(await nsu(alicesKey(), [`update add x.sub.${ZONE} 60 TXT "x"`], { zone: `sub.${ZONE}` }))).toBe('NOTAUTH');
    expect(calls()).toEqual([]);
    // miekg/dns reads a signed NOTAUTH as "bad authentication", as for a wrong secret: the log line
    // (a refusal with the key, never written for a wrong secret) names the zone asked and those managed.
    const refusals = logged.lines.filter((l) => l['msg'] === 'dns: refused' && l['rcode'] === 'NOTAUTH');
    expect(refusals.slice(-2).map((l) => [l['zone'], l['key'], l['reason']])).toEqual([
      [
        'nope.test',
        alicesKey().name,
        '"nope.test" is not a zone dnsplane manages (managed: example.test, other.test); a zone missing from DNSPLANE_ZONES is not managed',
      ],
      [
        `sub.${ZONE}`,
        alicesKey().name,
        `"sub.${ZONE}" is not a zone dnsplane manages (managed: example.test, other.test); it is a name inside managed zone ${ZONE}: ask for ${ZONE} (a client that found "sub.${ZONE}" as its zone saw it delegated elsewhere)`,
      ],
    ]);
  });

  it('a wrong key and a wrong secret: NOTAUTH with BADKEY and BADSIG, nothing sent', async () => {
    const unknown = await nsupdate(
      { algorithm: 'hmac-sha256', name: 'nobody.keys.dnsplane', secret: Buffer.alloc(32, 1).toString('base64') },
      `server 127.0.0.1 ${port}\nzone ${ZONE}\nupdate add k.${ZONE} 60 TXT "k"\nsend\n`,
    );
    expect(unknown.code).not.toBe(0);
    expect(unknown.stdout + unknown.stderr).toMatch(/BADKEY|tsig indicates error/);
    const wrong = await nsupdate(
      { ...cliKey(alicesKey()), secret: Buffer.alloc(32, 2).toString('base64') },
      `server 127.0.0.1 ${port}\nzone ${ZONE}\nupdate add k.${ZONE} 60 TXT "k"\nsend\n`,
    );
    expect(wrong.code).not.toBe(0);
    expect(wrong.stdout + wrong.stderr).toMatch(/BADSIG|tsig indicates error/);
    expect(calls()).toEqual([]);
    // No refusal line for them (the key is not proven): they go to the summary and the TSIG counter.
    expect(
      logged.lines.filter((l) => l['msg'] === 'dns: refused' && (l['key'] === 'nobody.keys.dnsplane' || (l['zone'] === ZONE && l['rcode'] === 'NOTAUTH'))),
    ).toEqual([]);
  });

  it('a stale time: an nsupdate message signed again 1,000 s in the past gets BADTIME, signed, with the server time', async () => {
    // nsupdate cannot sign in the past: capture what it sends, then sign those bytes with our encoder
    // (which computes nsupdate's own MAC for the same bytes and time: test/dns/tsig-interop.test.ts).
    const capture = dgram.createSocket('udp4');
    const captured = new Promise<Buffer>((resolve) => capture.once('message', (msg) => resolve(msg)));
    await new Promise<void>((resolve) => capture.bind(0, '127.0.0.1', resolve));
    const run = nsupdate(cliKey(alicesKey()), `server 127.0.0.1 ${capture.address().port}\nzone ${ZONE}\nupdate add stale.${ZONE} 60 TXT "late"\nsend\n`);
    const msg = await captured;
    capture.close();
    await run;
    const p = parseMessage(msg);
    const t = p.tsig!.record.data;
    expect(
      signMessage(withoutTsig(msg, p.tsig!.offset, t.originalId), alicesKey(), undefined, { timeSigned: t.timeSigned, originalId: t.originalId }).mac,
    ).toEqual(t.mac);
    const sent = t.timeSigned - 1000;
    const stale = signMessage(withoutTsig(msg, p.tsig!.offset, t.originalId), alicesKey(), undefined, { timeSigned: sent, originalId: t.originalId });
    const answer = (await udpExchange(port, stale.bytes))!;
    expect(answer.parsed.message.header.rcode).toBe(RCODE.NOTAUTH);
    const a = answer.parsed.tsig!.record.data;
    expect(a).toMatchObject({ error: TSIG_ERROR.BADTIME, timeSigned: sent });
    expect(verifyTsig(answer.bytes, answer.parsed.tsig!, alicesKey(), sent, stale.mac).ok).toBe(true);
    expect(Math.abs(a.otherData.readUIntBE(0, 6) - Math.floor(Date.now() / 1000))).toBeLessThan(60);
    expect(calls()).toEqual([]);
  });

  it('TXT values under one name are shared: two tenants keep theirs; deleting "the RRset" deletes only the own', async () => {
    const n = `_acme-challenge.shared.${ZONE}`;
    expect(rcodeOf(await nsu(alicesKey(), [`update add ${n} 60 TXT "alice-1"`]))).toBe('NOERROR');
    expect(rcodeOf(await nsu(bobKey, [`update add ${n} 60 TXT "bob-1"`]))).toBe('NOERROR');
    expect(await txtValues(n)).toEqual(['alice-1', 'bob-1']);
    h.sim.clearCalls();
    // lego presents like this: delete the TXT RRset, then add.
    expect(rcodeOf(await nsu(alicesKey(), [`update delete ${n} TXT`, `update add ${n} 60 TXT "alice-2"`]))).toBe('NOERROR');
    expect(calls()).toEqual([`PUT ${REC}/ID`, REFRESH]);
    expect(await txtValues(n)).toEqual(['alice-2', 'bob-1']);
    expect(rcodeOf(await nsu(alicesKey(), [`update delete ${n} TXT "bob-1"`]))).toBe('REFUSED');
    expect(rcodeOf(await nsu(bobKey, [`update delete ${n} TXT`]))).toBe('NOERROR');
    expect(await txtValues(n)).toEqual(['alice-2']);
    expect(rcodeOf(await nsu(alicesKey(), [`update delete ${n} TXT "alice-2"`]))).toBe('NOERROR');
    expect(await txtValues(n)).toEqual([]);
  });

  it('an OVH failure is SERVFAIL with nothing published', async () => {
    const before = h.sim.publishedRecords(ZONE).length;
    h.sim.faults.fail({
      method: 'POST',
      path: REC,
      nth: 2,
      effect: { kind: 'status', status: 400, body: { class: 'Client::BadRequest', message: 'Invalid target' } },
    });
    expect(rcodeOf(await nsu(alicesKey(), ['update add f1.example.test 60 TXT "f1"', 'update add f2.example.test 60 TXT "f2"']))).toBe('SERVFAIL');
    // The first POST undone, the touched names read again; no refresh.
    expect(calls()).toEqual([`POST ${REC}`, `POST ${REC}`, `DELETE ${REC}/ID`, `GET ${REC}`, `GET ${REC}`]);
    expect(h.sim.publishedRecords(ZONE)).toHaveLength(before);
    expect(h.sim.draftRecords(ZONE).filter((r) => r.subDomain.startsWith('f'))).toEqual([]);
  });
});

describe('UPDATE messages nsupdate does not send', () => {
  const update = (zone: Message['questions'], updates: Message['authorities'] = []): Buffer =>
    signMessage(
      encodeMessage({
        header: { id: 7, qr: false, opcode: OPCODE.UPDATE, aa: false, tc: false, rd: false, ra: false, z: 0, rcode: 0 },
        questions: zone,
        answers: [],
        authorities: updates,
        additionals: [],
      }),
      alicesKey(),
      undefined,
    ).bytes;
  const soa = { name: ZONE, type: TYPE.SOA, class: CLASS.IN };
  const rcode = async (bytes: Buffer) => (await tcpExchange(port, bytes))[0]!.parsed.message.header.rcode;

  it('FORMERR: a zone section of two questions, or not SOA; a deletion with a TTL', async () => {
    expect(await rcode(update([soa, soa]))).toBe(RCODE.FORMERR);
    expect(await rcode(update([{ ...soa, type: TYPE.A }]))).toBe(RCODE.FORMERR);
    expect(
      await rcode(update([soa], [{ name: `x.${ZONE}`, type: TYPE.TXT, class: CLASS.NONE, ttl: 60, data: { kind: 'TXT', strings: [Buffer.from('x')] } }])),
    ).toBe(RCODE.FORMERR);
    expect(
      await rcode(update([soa], [{ name: 'x.elsewhere.test', type: TYPE.TXT, class: CLASS.IN, ttl: 60, data: { kind: 'TXT', strings: [Buffer.from('x')] } }])),
    ).toBe(RCODE.NOTZONE);
    expect(calls()).toEqual([]);
  });

  it('UPDATEs of one zone sent at once: all NOERROR, each applied once, refreshes shared with the applies waiting beside them', async () => {
    const n = 8;
    const add = (i: number) =>
      update([soa], [{ name: `c${i}.${ZONE}`, type: TYPE.TXT, class: CLASS.IN, ttl: 60, data: { kind: 'TXT', strings: [Buffer.from(`v${i}`)] } }]);
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => tcpExchange(port, add(i))));
    expect(answers.map((a) => a[0]!.parsed.message.header.rcode)).toEqual(new Array(n).fill(RCODE.NOERROR));
    expect(calls().filter((c) => c === `POST ${REC}`)).toHaveLength(n);
    const refreshes = calls().filter((c) => c === REFRESH).length;
    expect(refreshes).toBeGreaterThanOrEqual(1);
    expect(refreshes).toBeLessThanOrEqual(n);
    for (let i = 0; i < n; i++) expect(await txtValues(`c${i}.${ZONE}`)).toEqual([`v${i}`]);
  });
});
