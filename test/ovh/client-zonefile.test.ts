/**
 * Reading OVH's zone export back (src/ovh/zonefile.ts), as the drift check does: the simulator's
 * export of records made through the API, and the BIND forms a real export may take.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OvhApi } from '../../src/ovh/client.js';
import { differingOwners, parseZoneFile, zoneFileTarget } from '../../src/ovh/zonefile.js';
import { OvhSimulator } from '../../src/ovhsim/index.js';

const ZONE = 'export.test';

describe('the simulator export, read back, equals the records the API shows', () => {
  let sim: OvhSimulator;
  let api: OvhApi;
  beforeAll(async () => {
    sim = await OvhSimulator.start({
      zones: {
        [ZONE]: [
          { subDomain: '', fieldType: 'MX', target: '10 mx.export.test.', ttl: 3600 },
          { subDomain: 'www', fieldType: 'A', target: '192.0.2.1', ttl: 300 },
          { subDomain: 'www', fieldType: 'AAAA', target: '2001:db8::1', ttl: 0 },
          { subDomain: 'api', fieldType: 'CNAME', target: 'www', ttl: 60 },
          { subDomain: '_sip._tcp', fieldType: 'SRV', target: '10 5 5060 sip.export.test.', ttl: 300 },
          { subDomain: 'txt', fieldType: 'TXT', target: 'with spaces; and (parens)', ttl: 300 },
          { subDomain: 'long', fieldType: 'TXT', target: 'x'.repeat(300), ttl: 300 },
          { subDomain: 'spf', fieldType: 'SPF', target: 'v=spf1 -all', ttl: 300 },
          { subDomain: '', fieldType: 'CAA', target: '0 issue "ca.example"', ttl: 300 },
        ],
      },
    });
    api = new OvhApi({
      endpoint: { host: '127.0.0.1', port: sim.apiPort, basePath: '/1.0', label: 'sim' },
      credentials: sim.credentials,
      extraCaPems: [sim.caPem],
      ratePerSecond: 1000,
    });
  });
  afterAll(async () => {
    await sim?.stop();
  });

  it('no owner differs when nothing changed', async () => {
    const ids = await api.listRecordIds(ZONE);
    const records = await Promise.all(ids.map((id) => api.getRecord(ZONE, id)));
    const parsed = parseZoneFile(await api.getExport(ZONE), ZONE);
    expect(parsed).toHaveLength(records.length);
    expect(differingOwners(parsed, records)).toEqual(new Set());
  });

  it('an edit in place, a TTL change and a TXT change are each found under their owner only', async () => {
    const ids = await api.listRecordIds(ZONE);
    const records = await Promise.all(ids.map((id) => api.getRecord(ZONE, id)));
    const www = sim.draftRecords(ZONE).find((r) => r.subDomain === 'www' && r.fieldType === 'A')!;
    const mx = sim.draftRecords(ZONE).find((r) => r.fieldType === 'MX')!;
    const txt = sim.draftRecords(ZONE).find((r) => r.subDomain === 'txt')!;
    sim.updateRecord(ZONE, www.id, { target: '192.0.2.2' });
    sim.updateRecord(ZONE, mx.id, { ttl: 600 });
    sim.updateRecord(ZONE, txt.id, { target: 'with spaces; and (other parens)' });
    const parsed = parseZoneFile(await api.getExport(ZONE), ZONE);
    expect(differingOwners(parsed, records)).toEqual(new Set(['www', '', 'txt']));
  });
});

describe('parseZoneFile', () => {
  it('reads $ORIGIN, absolute and relative owners, a blank owner, TTL and class in either order, multi-line parentheses, comments', () => {
    const text = [
      '$TTL 3600',
      '$ORIGIN example.com.',
      '@ IN SOA ns1.example.com. hostmaster.example.com. (',
      '   2024010101 ; serial',
      '   86400 3600 3600000 300 )',
      'www.example.com. 300 IN A 192.0.2.1 ; a comment',
      '                 IN 300 A 192.0.2.2',
      'mail IN MX 10 mx.example.com.',
      'txt 60 IN TXT "a;b" "c"',
      '@ SPF "v=spf1 -all"',
    ].join('\n');
    expect(parseZoneFile(text, 'example.com')).toEqual([
      { subDomain: 'www', type: 'A', ttl: 300, target: '192.0.2.1' },
      { subDomain: 'www', type: 'A', ttl: 300, target: '192.0.2.2' },
      { subDomain: 'mail', type: 'MX', ttl: 0, target: '10 mx.example.com.' },
      { subDomain: 'txt', type: 'TXT', ttl: 60, target: '"a;b" "c"' },
      { subDomain: '', type: 'TXT', ttl: 0, target: '"v=spf1 -all"' },
    ]);
  });

  it('refuses what it cannot read, naming the line', () => {
    expect(() => parseZoneFile('www IN A (192.0.2.1', 'example.com')).toThrow(/line 1: unclosed parenthesis/);
    expect(() => parseZoneFile('www.other.org. IN A 192.0.2.1', 'example.com')).toThrow(/line 1: owner www\.other\.org\. is outside/);
    expect(() => parseZoneFile('   IN A 192.0.2.1', 'example.com')).toThrow(/line 1: a record without an owner/);
  });
});

describe("zoneFileTarget (both zone exports: the admin one and the served OVH API's)", () => {
  it('quotes TXT, SPF, DKIM and DMARC in presentation form, leaves other types as stored', () => {
    expect(zoneFileTarget('txt', 'say "hi"', ZONE)).toBe('"say \\"hi\\""');
    expect(zoneFileTarget('DKIM', 'v=DKIM1; k=rsa; p=MIGfMA0', ZONE)).toBe('"v=DKIM1; k=rsa; p=MIGfMA0"');
    expect(zoneFileTarget('SPF', 'v=spf1 -all', ZONE)).toBe('"v=spf1 -all"');
    expect(zoneFileTarget('A', '192.0.2.1', ZONE)).toBe('192.0.2.1');
  });

  it('a value of those types it cannot read: quoted as stored, so that a `;` in it is not read back as a comment', () => {
    expect(zoneFileTarget('DMARC', 'nonsense', ZONE)).toBe('"nonsense"');
    const line = `_dmarc 300 IN TXT ${zoneFileTarget('DMARC', 'garbage;x', ZONE)}`;
    expect(parseZoneFile(line, ZONE).map((r) => r.target)).toEqual(['"garbage;x"']);
  });
});
