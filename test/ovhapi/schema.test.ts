/**
 * The served OVH API as OVH's published schema says (issue 43; REFERENCE §11): each of the 17 record
 * types written and read back as OVH stores it, the exact OVH calls of the refresh; the nullable fields
 * (a null subDomain is the apex, a null ttl the zone default); domain.ZoneWithIAM's every property
 * (`iam: null`); GET …/export (the tenant's records as a zone file, no OVH call) and POST …/import of
 * that export (a domain.zone.Task, done, no change; an edited file one apply; a name of another
 * tenant refused with OVH's shape, nothing sent) followed by GET …/task/{id}; PUT …/soa refused as a
 * call not granted; GET …/capabilities; bad values of each new type refused with nothing staged.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { readCacheOf } from '../../src/core/reads/read-cache.js';
import { createOvhKey } from '../../src/core/credentials/ovh-admin.js';
import { callLines, ep } from '../helpers/expect.js';
import { ovhCall, type OvhKeyValues } from '../helpers/ovh-api-client.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { applyDesired } from '../helpers/zone-requests.js';

const ZONE = 'schema.test';
const Z = `/domain/zone/${ZONE}`;
const REC = `${Z}/record`;
const HEX = 'ab'.repeat(32);

/** fieldType, subDomain, target as a tool sends it, target as OVH stores and answers it. */
const TYPES: Array<[string, string, string, string]> = [
  ['A', 'a', '192.0.2.1', '192.0.2.1'],
  ['AAAA', 'aaaa', '2001:db8::1', '2001:db8::1'],
  ['CNAME', 'cname', 'target.example.org.', 'target.example.org.'],
  ['TXT', 'txt', 'hello', '"hello"'],
  ['MX', 'mx', '10 mail.example.org.', '10 mail.example.org.'],
  ['SRV', '_sip._tcp', '0 5 5060 sip.example.org.', '0 5 5060 sip.example.org.'],
  ['CAA', 'caa', '0 issue "letsencrypt.org"', '0 issue "letsencrypt.org"'],
  ['NS', 'deleg', 'ns1.example.org.', 'ns1.example.org.'],
  ['PTR', 'ptr', 'host.example.org.', 'host.example.org.'],
  ['NAPTR', 'naptr', '100 10 "S" "SIP+D2U" "" _sip._udp.example.org.', '100 10 "S" "SIP+D2U" "" _sip._udp.example.org.'],
  ['TLSA', '_443._tcp.tlsa', `3 1 1 ${HEX}`, `3 1 1 ${HEX}`],
  ['SSHFP', 'sshfp', `4 2 ${HEX}`, `4 2 ${HEX}`],
  ['LOC', 'loc', '52 22 23.000 N 4 53 32.000 E -2.00m 1m 10000m 10m', '52 22 23.000 N 4 53 32.000 E -2.00m 1m 10000m 10m'],
  ['DNAME', 'dname', 'other.example.org.', 'other.example.org.'],
  ['SPF', 'spf', 'v=spf1 -all', '"v=spf1 -all"'],
  ['DKIM', 'sel._domainkey', 'v=DKIM1;k=rsa;p=MIGf', 'v=DKIM1;k=rsa;p=MIGf'],
  ['DMARC', '_dmarc', 'v=DMARC1;p=none;', 'v=DMARC1;p=none;'],
];

let h: Harness;
let key: OvhKeyValues;
let bobToken: string;
let base: string;

beforeAll(async () => {
  h = await startHarness({
    zones: { [ZONE]: [{ subDomain: '', fieldType: 'NS', target: 'dns1.sim.test.' }] },
    env: {
      DNSPLANE_SECRETS_KEY: randomBytes(32).toString('base64'),
      DNSPLANE_OVH_API_RATE: '1000',
      DNSPLANE_OVH_API_BURST: '1000',
      DNSPLANE_MAX_CHANGE_PERCENT: '100',
    },
  });
  await h.tenant('alice', [ZONE]);
  bobToken = await h.tenant('bob', [ZONE]);
  const issued = await createOvhKey({ pool: h.server.ctx.pool, secrets: h.server.ctx.secrets, actor: null }, { tenant: 'alice' });
  key = { applicationKey: issued.key.applicationKey, applicationSecret: issued.applicationSecret, consumerKey: issued.consumerKey };
  base = `${h.server.url}/ovh/1.0`;
  await applyDesired(h.zoneClient(bobToken), [ep(`bobs.${ZONE}`, 'A', ['192.0.2.99'])]);
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());

const call = (method: string, path: string, body?: unknown) => ovhCall(base, key, method, path, body === undefined ? {} : { body });
const upstream = () => callLines(h.sim).map((l) => l.replace(/\/record\/\d+$/, '/record/ID'));

describe('the 17 types and the nullable fields', () => {
  it('each type written, answered as OVH stores it, published by one refresh with the exact OVH calls', async () => {
    const ids: number[] = [];
    for (const [fieldType, subDomain, target, stored] of TYPES) {
      const a = await call('POST', REC, { fieldType, subDomain, target, ttl: 300 });
      expect(a.status, `${fieldType}: ${a.text}`).toBe(200);
      expect(a.json).toMatchObject({ fieldType, subDomain, target: stored, ttl: 300, zone: ZONE });
      ids.push((a.json as { id: number }).id);
    }
    expect(upstream()).toEqual([]);
    expect((await call('POST', `${Z}/refresh`)).status).toBe(204);
    const posts = h.sim
      .writes()
      .filter((c) => c.method === 'POST' && c.path === REC)
      .map((c) => c.body as { fieldType: string; subDomain: string; target: string })
      .map((b) => `${b.fieldType} ${b.subDomain} ${b.target}`)
      .sort();
    expect(posts).toEqual(TYPES.map(([t, s, target]) => `${t} ${s} ${target}`).sort());
    expect(upstream().filter((l) => l !== `POST ${REC}`)).toEqual([`POST ${Z}/refresh`]);
    for (const [i, [fieldType, subDomain, , stored]] of TYPES.entries()) {
      expect((await call('GET', `${REC}/${ids[i]}`)).json, fieldType).toMatchObject({ fieldType, subDomain, target: stored, ttl: 300 });
    }
  });

  it('a null subDomain is the apex; a null ttl on PUT the zone default', async () => {
    const a = await call('POST', REC, { fieldType: 'TXT', subDomain: null, target: 'at the apex', ttl: 600 });
    expect(a.status, a.text).toBe(200);
    expect(a.json).toMatchObject({ subDomain: '', fieldType: 'TXT', ttl: 600 });
    const id = (a.json as { id: number }).id;
    expect((await call('PUT', `${REC}/${id}`, { subDomain: null, ttl: null })).status).toBe(200);
    expect((await call('GET', `${REC}/${id}`)).json).toMatchObject({ subDomain: '', ttl: 0 });
    expect((await call('POST', `${Z}/refresh`)).status).toBe(204);
    expect(
      h.sim
        .draftRecords(ZONE)
        .filter((r) => r.subDomain === '' && r.fieldType === 'TXT')
        .map((r) => [r.target, r.ttl]),
    ).toEqual([['at the apex', 0]]);
  });

  it("bad values of the new types: OVH's 400 naming the rule, nothing staged", async () => {
    const bad: Array<[string, string, string, RegExp]> = [
      ['TLSA', '_443._tcp.x', '3 1 1 abcd', /TLSA data is 64 hex digits/],
      ['SSHFP', 'x', '4 9 ab', /Invalid SSHFP target/],
      ['NAPTR', 'x', '100 10 S SIP x.', /Invalid NAPTR target/],
      ['LOC', 'x', 'somewhere', /Invalid LOC target/],
      ['DKIM', 'k._domainkey', '"v=DKIM1;p=x"', /Invalid subfield found in DKIM/],
      ['DMARC', '_dmarc.sub', 'v=DMARC1;p=none;adkim=r', /Invalid subfield found in DMARC/],
      ['DMARC', 'dmarc', 'v=DMARC1;p=none', /DMARC record must be under _dmarc/],
      ['SPF', 'x', 'include:x ~all', /Invalid SPF target/],
      ['PTR', 'x', 'not a host', /Invalid PTR target/],
    ];
    for (const [fieldType, subDomain, target, why] of bad) {
      const a = await call('POST', REC, { fieldType, subDomain, target });
      expect(a.status, `${fieldType} ${target}: ${a.text}`).toBe(400);
      expect((a.json as { message: string }).message, fieldType).toMatch(why);
    }
    expect((await call('POST', `${Z}/refresh`)).status).toBe(204);
    expect(upstream()).toEqual([]);
  });
});

describe("the zone's other routes", () => {
  it('GET /domain/zone/{zone} has every property of domain.ZoneWithIAM, iam null', async () => {
    const a = await call('GET', Z);
    expect(Object.keys(a.json as object).sort()).toEqual(['dnssecActivated', 'dnssecSupported', 'hasDnsAnycast', 'iam', 'lastUpdate', 'name', 'nameServers']);
    expect(a.json).toMatchObject({ iam: null, name: ZONE });
  });

  it('PUT …/soa is refused as a call not granted, naming why; GET …/capabilities answers', async () => {
    const put = await call('PUT', `${Z}/soa`, { ttl: 60 });
    expect(put.status).toBe(403);
    expect(put.json).toMatchObject({ errorCode: 'NOT_GRANTED_CALL', message: expect.stringMatching(/SOA of a zone behind dnsplane is dnsplane's/) });
    expect((await call('GET', `${Z}/capabilities`)).json).toEqual({ dynHost: false });
    expect(upstream()).toEqual([]);
  });

  it('export → import plans no change (a Task, done); an edited file is one apply; a name of another tenant is refused, nothing sent', async () => {
    const exported = await call('GET', `${Z}/export`);
    expect(exported.status).toBe(200);
    const file = exported.json as string;
    expect(file).toMatch(/^sel\._domainkey\t300\tIN\tTXT\t"v=DKIM1;k=rsa;p=MIGf"$/m);
    expect(file).not.toMatch(/bobs/);
    expect(upstream()).toEqual([]);

    // The zone's states are read once to check the tenant's zone, once by the apply: not again by the import.
    const states = vi.spyOn(readCacheOf(h.server.ctx).zoneStates, 'get');
    const same = await call('POST', `${Z}/import`, { zoneFile: file });
    expect(states).toHaveBeenCalledTimes(2);
    states.mockRestore();
    expect(same.status, same.text).toBe(200);
    expect(same.json).toMatchObject({ function: 'ZoneImport', status: 'done', canCancel: false, comment: expect.stringMatching(/no change/) });
    expect(Object.keys(same.json as object).sort()).toEqual(
      ['canAccelerate', 'canCancel', 'canRelaunch', 'comment', 'creationDate', 'doneDate', 'function', 'id', 'lastUpdate', 'status', 'todoDate'].sort(),
    );
    expect(upstream()).toEqual([]);

    const edited = file.replace(/^a\t300\tIN\tA\t192\.0\.2\.1$/m, 'a\t300\tIN\tA\t192.0.2.2').replace(/^ptr\t.*$/m, '');
    const task = await call('POST', `${Z}/import`, { zoneFile: edited });
    expect(task.json).toMatchObject({ status: 'done', function: 'ZoneImport' });
    expect(upstream().sort()).toEqual([`DELETE ${REC}/ID`, `PUT ${REC}/ID`, `POST ${Z}/refresh`].sort());
    const id = (task.json as { id: number }).id;
    expect((await call('GET', `${Z}/task/${id}`)).json).toEqual(task.json);
    expect((await call('GET', `${Z}/task`)).json).toContain(id);
    expect((await call('GET', `${Z}/task/1`)).status).toBe(404);

    h.sim.clearCalls();
    const foreign = await call('POST', `${Z}/import`, { zoneFile: `${edited}bobs\t300\tIN\tA\t192.0.2.7\n` });
    expect(foreign.status).toBe(403);
    expect(foreign.json).toMatchObject({ errorCode: 'NOT_GRANTED_CALL', message: expect.stringMatching(/bobs\.schema\.test A/) });
    expect(upstream()).toEqual([]);
    expect((await call('POST', `${Z}/import`, {})).json).toMatchObject({ message: '[zoneFile] Property is mandatory' });
  });
});
