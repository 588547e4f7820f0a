/**
 * Export and import of a zone file (issue 31.2): AdminService.ExportZone and `dnsplane zone export`
 * write every record of the cache, with 0 OVH calls, owners as comments on request; `dnsplane plan
 * --zone-file` reads the file back as a tenant's desired state, which plans no change; a type dnsplane
 * does not manage, or a target not valid for its type, is an error naming the line.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { desiredFromZoneFile } from '../../src/api/zone-file-document.js';
import { ReadCache } from '../../src/core/reads/read-cache.js';
import { planCommand } from '../../src/cli/plan.js';
import { zoneCommand } from '../../src/cli/zone.js';
import { InvalidInputError } from '../../src/dns/errors.js';
import { ChangeAction, PlanRequestSchema, Policy, type PlanRequest } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { parseZoneFile } from '../../src/ovh/zonefile.js';
import { ovhTargetToCanonical } from '../../src/ovh/mapping.js';
import { isRecordType } from '../../src/dns/types.js';
import type { SimRecordInit } from '../../src/ovhsim/index.js';
import { capturedIo } from '../helpers/cli-io.js';
import { callLines, ep, expectRejected } from '../helpers/expect.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'example.com';
const rec = (subDomain: string, fieldType: string, target: string, ttl = 300): SimRecordInit => ({ subDomain, fieldType, target, ttl });

let h: Harness;
let admin: string;
let alice: string;
let dir: string;

const desired = (endpoints: ReturnType<typeof ep>[], zones = [ZONE]): PlanRequest =>
  create(PlanRequestSchema, { policy: Policy.SYNC, input: { case: 'desired', value: { zones, endpoints } } });

beforeAll(async () => {
  h = await startHarness({
    zones: {
      [ZONE]: [
        rec('', 'NS', 'dns1.ovh.net.', 0),
        rec('', 'NS', 'ns1.ovh.net.', 0),
        rec('legacy', 'A', '192.0.2.9', 0),
        rec('', 'CAA', '0 issue "letsencrypt.org"', 3600),
      ],
    },
  });
  admin = await h.tenant('root', [ZONE], { admin: true });
  alice = await h.tenant('alice', [ZONE]);
  await h.tenant('bob', [ZONE]);
  const applied = await h.zoneClient(alice).apply({
    source: {
      case: 'plan',
      value: desired([
        ep(`www.${ZONE}`, 'A', ['192.0.2.1', '192.0.2.2']),
        ep(`v6.${ZONE}`, 'AAAA', ['2001:db8::1'], 600),
        ep(`alias.${ZONE}`, 'CNAME', ['lb.example.org']),
        ep(`txt.${ZONE}`, 'TXT', ['v=spf1 include:example.org -all', 'say "hi"; then go']),
        ep(`mail.${ZONE}`, 'MX', ['10 mx1.example.org']),
        ep(`_sip._tcp.${ZONE}`, 'SRV', ['10 5 5060 sip.example.org']),
      ]),
    },
  });
  expect(applied.zones.map((z) => z.error)).toEqual(['']);
  dir = mkdtempSync(join(tmpdir(), 'dnsplane-export-'));
});

afterAll(async () => {
  await h?.close();
});

describe('zone export', () => {
  it('writes every record of the cache as a zone file, with the SOA the DNS door serves and 0 OVH calls', async () => {
    h.sim.clearCalls();
    const res = await h.adminClient(admin).exportZone({ zone: ZONE });
    expect(callLines(h.sim)).toEqual([]);
    expect(res.zone).toBe(ZONE);
    expect(res.recordCount).toBe(12); // 2 NS, legacy A, CAA, 2 www A, v6, alias, 2 TXT, MX, SRV
    const text = res.zoneFile;
    expect(text).toMatch(/^; example\.com: 12 records, exported by dnsplane from its cache at generation \d+/);
    expect(text).toContain('$ORIGIN example.com.\n$TTL 3600\n');
    expect(text).toMatch(
      new RegExp(`@\\t3600\\tIN\\tSOA\\tdns1\\.ovh\\.net\\. hostmaster\\.example\\.com\\. ${Number(res.generation)} 3600 600 1209600 60\\n`),
    );
    const lines = text.split('\n');
    // A record at the zone default has no TTL; the apex comes first; names read as a tree.
    expect(lines).toContain('@\t\tIN\tNS\tdns1.ovh.net.');
    expect(lines).toContain('legacy\t\tIN\tA\t192.0.2.9');
    expect(lines).toContain('v6\t600\tIN\tAAAA\t2001:db8::1');
    expect(lines.findIndex((l) => l.startsWith('@\t'))).toBeLessThan(lines.findIndex((l) => l.startsWith('www\t')));
    // TXT in RFC 1035 presentation form (OVH keeps inner quotes unescaped), each string quoted.
    expect(lines).toContain('txt\t300\tIN\tTXT\t"say \\"hi\\"; then go"');
    // What a reader reads back is the cache, record for record (targets compared in canonical form).
    const canonical = (sub: string, type: string, ttl: number, target: string) =>
      `${sub} ${type} ${ttl} ${isRecordType(type) ? ovhTargetToCanonical(type, target, ZONE) : target}`;
    const back = parseZoneFile(text, ZONE)
      .map((r) => canonical(r.subDomain, r.type, r.ttl, r.target))
      .sort();
    const cached = (
      await h.server.ctx.pool.query<{ sub_domain: string; field_type: string; ttl: number; target: string }>(
        'SELECT sub_domain, field_type, ttl, target FROM records WHERE zone = $1',
        [ZONE],
      )
    ).rows
      .map((r) => canonical(r.sub_domain, r.field_type, r.ttl, r.target))
      .sort();
    expect(back).toEqual(cached);
  });

  it("names each record's owner as a comment with include_owners", async () => {
    const { zoneFile } = await h.adminClient(admin).exportZone({ zone: ZONE, includeOwners: true });
    const lines = zoneFile.split('\n');
    expect(lines).toContain('www\t300\tIN\tA\t192.0.2.1\t; owner alice');
    expect(lines).toContain('legacy\t\tIN\tA\t192.0.2.9\t; no owner');
    expect(lines.filter((l) => l.includes('; owner alice'))).toHaveLength(8);
  });

  it("takes the read cache's base of the current generation, built once for the export and the Records reads after it", async () => {
    const before = h.server.ctx.reads;
    const reads = new ReadCache(h.server.ctx.pool);
    h.server.ctx.reads = reads;
    try {
      const first = await h.adminClient(admin).exportZone({ zone: ZONE });
      expect(reads.stats().baseBuilds).toBe(1);
      const again = await h.adminClient(admin).exportZone({ zone: ZONE, includeOwners: true });
      await h.zoneClient(admin).records({ zones: [ZONE], includeForeign: true });
      expect(reads.stats().baseBuilds).toBe(1);
      expect(again.generation).toBe(first.generation);
    } finally {
      h.server.ctx.reads = before;
    }
  });

  it('is refused without the admin scope, and for a zone dnsplane does not manage', async () => {
    await expectRejected(h.adminClient(alice).exportZone({ zone: ZONE }), Code.PermissionDenied, /admin scope/);
    await expectRejected(h.adminClient(admin).exportZone({ zone: 'example.org' }), Code.InvalidArgument, /example\.org/);
  });

  it('dnsplane zone export writes the same file, to stdout or to --output-file', async () => {
    const env = { DNSPLANE_SERVER: h.server.url, DNSPLANE_TOKEN: admin };
    const io = capturedIo(env);
    expect(await zoneCommand.run(['export', ZONE], io)).toBe(0);
    const { zoneFile } = await h.adminClient(admin).exportZone({ zone: ZONE });
    const body = (t: string) => t.split('\n').filter((l) => !l.startsWith('; '));
    expect(body(`${io.text()}\n`)).toEqual(body(zoneFile));
    const file = join(dir, 'example.com.zone');
    const quiet = capturedIo(env);
    expect(await zoneCommand.run(['export', ZONE, '--owner', '--output-file', file], quiet)).toBe(0);
    expect(quiet.text()).toMatch(/^ERR dnsplane zone export: example\.com at generation \d+: 12 records written to /);
    expect(readFileSync(file, 'utf8')).toContain('; owner alice');
    await expect(zoneCommand.run(['export'], capturedIo(env))).rejects.toThrow(InvalidInputError);
  });
});

describe('plan --zone-file', () => {
  it("an exported zone read back as the tenant's desired state plans no change", async () => {
    const { zoneFile } = await h.adminClient(admin).exportZone({ zone: ZONE, includeOwners: true });
    const file = join(dir, 'roundtrip.zone');
    writeFileSync(file, zoneFile);
    h.sim.clearCalls();
    const io = capturedIo({ DNSPLANE_SERVER: h.server.url, DNSPLANE_TOKEN: admin });
    expect(await planCommand.run(['--zone-file', file, '--as', 'alice', '--output', 'json'], io)).toBe(0);
    const plan = JSON.parse(io.text());
    expect(plan.zones[0].changes ?? []).toEqual([]);
    expect(plan.zones[0].conflicts ?? []).toEqual([]);
    expect(callLines(h.sim)).toEqual([]);
  });

  it("a line changed in the file is the one change planned; a line removed is a delete of the tenant's set", async () => {
    const { zoneFile } = await h.adminClient(admin).exportZone({ zone: ZONE });
    const edited = zoneFile.replace('v6\t600\tIN\tAAAA\t2001:db8::1', 'v6\t600\tIN\tAAAA\t2001:db8::2').replace(/^mail\t.*\n/m, '');
    const d = desiredFromZoneFile(edited, 'edited.zone');
    const res = await h.adminClient(admin).planAs({ tenant: 'alice', request: desired(d.endpoints, d.zones) });
    const changes = res.plan!.zones[0]!.changes.map((c) => `${ChangeAction[c.action]} ${(c.after ?? c.before)!.dnsName} ${(c.after ?? c.before)!.recordType}`);
    expect(changes.sort()).toEqual(['DELETE mail.example.com MX', 'UPDATE v6.example.com AAAA']);
  });

  it('names the line of a type dnsplane does not manage, of an invalid target, and of a name outside the zone', () => {
    const head = '$ORIGIN example.com.\n$TTL 3600\n';
    expect(() => desiredFromZoneFile(`${head}www IN A 192.0.2.1\nhost IN HINFO "cpu" "os"\n`, 'a.zone')).toThrow(
      /a\.zone line 4: type HINFO is not one dnsplane manages/,
    );
    expect(() => desiredFromZoneFile(`${head}\nwww IN A 192.0.2.300\n`, 'b.zone')).toThrow(/b\.zone line 4: .*not a valid A target/);
    expect(() => desiredFromZoneFile(`${head}www.example.org. IN A 192.0.2.1\n`, 'c.zone')).toThrow(
      /c\.zone: zone file line 3: owner www\.example\.org\. is outside/,
    );
    expect(() => desiredFromZoneFile('www IN A 192.0.2.1\n', 'd.zone')).toThrow(/d\.zone has no \$ORIGIN line: name its zone with --zone ZONE/);
    expect(desiredFromZoneFile('www IN A 192.0.2.1\n', 'd.zone', 'example.com').endpoints.map((e) => e.dnsName)).toEqual(['www.example.com']);
  });
});

describe('zone at (the zone as it was, from the journal)', () => {
  /** A zone file's lines but its comments: what two files of one state share. */
  const body = (t: string) => t.split('\n').filter((l) => !l.startsWith('; '));

  it('is, at each past generation and time, the export made then; changes since are undone newest first', async () => {
    const c = h.adminClient(admin);
    const first = await c.exportZone({ zone: ZONE });
    const changes = (value: object) => h.zoneClient(alice).apply({ source: { case: 'plan', value: create(PlanRequestSchema, value) } });
    await changes({
      policy: Policy.UPSERT_ONLY,
      input: { case: 'desired', value: { zones: [ZONE], endpoints: [ep(`v6.${ZONE}`, 'AAAA', ['2001:db8::2'], 600)] } },
    });
    const second = await c.exportZone({ zone: ZONE });
    expect(second.generation).toBeGreaterThan(first.generation);
    const between = new Date();
    await changes({
      input: {
        case: 'changes',
        value: { create: [ep(`later.${ZONE}`, 'A', ['192.0.2.77'])], delete: [ep(`mail.${ZONE}`, 'MX', ['10 mx1.example.org'])], updateOld: [], updateNew: [] },
      },
    });
    const third = await c.exportZone({ zone: ZONE });
    expect(body(third.zoneFile)).not.toEqual(body(second.zoneFile));

    h.sim.clearCalls();
    const atFirst = await c.exportZone({ zone: ZONE, atGeneration: first.generation });
    expect(body(atFirst.zoneFile)).toEqual(body(first.zoneFile));
    expect(atFirst.generation).toBe(first.generation);
    expect(atFirst.zoneFile).toMatch(
      new RegExp(
        `^; example\\.com: 12 records as they were at generation ${first.generation}, from dnsplane's journal: the cache at generation ${third.generation} with 2 apply\\(s\\) since undone \\(journal \\d+, \\d+\\)`,
      ),
    );
    expect(body((await c.exportZone({ zone: ZONE, atGeneration: second.generation })).zoneFile)).toEqual(body(second.zoneFile));
    expect(body((await c.exportZone({ zone: ZONE, atTime: timestampFromDate(between) })).zoneFile).slice(3)).toEqual(body(second.zoneFile).slice(3)); // the SOA serial aside
    expect(body((await c.exportZone({ zone: ZONE, atGeneration: third.generation })).zoneFile)).toEqual(body(third.zoneFile));
    expect(callLines(h.sim)).toEqual([]);

    // The command line, and what it refuses.
    const io = capturedIo({ DNSPLANE_SERVER: h.server.url, DNSPLANE_TOKEN: admin });
    expect(await zoneCommand.run(['at', ZONE, '--generation', String(first.generation)], io)).toBe(0);
    expect(body(`${io.text()}\n`)).toEqual(body(first.zoneFile));
    const env = { DNSPLANE_SERVER: h.server.url, DNSPLANE_TOKEN: admin };
    await expect(zoneCommand.run(['at', ZONE], capturedIo(env))).rejects.toThrow(/--generation: zone at needs exactly one of --generation N or --time T/);
    await expect(zoneCommand.run(['at', ZONE, '--time', 'yesterday'], capturedIo(env))).rejects.toThrow(/--time: must be an RFC 3339 time/);
    await expect(zoneCommand.run(['at', ZONE, '--generation', '1', '--owner'], capturedIo(env))).rejects.toThrow(
      /--owner: owners are known for the zone as it is now only/,
    );
    await expectRejected(c.exportZone({ zone: ZONE, atGeneration: 1n, includeOwners: true }), Code.InvalidArgument, /^include_owners: /);
  });
});
