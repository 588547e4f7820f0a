/**
 * Workload identity through every door a cluster uses, on the real server (startHarness: real
 * Postgres, the OVH simulator over HTTPS): a test issuer over HTTPS on loopback mints tokens as the
 * kubelet projects them; the Connect API (Records, Plan, Apply) through the gate, the journal and
 * "last seen" naming the subject, the login limiter counting bad workload tokens as it counts bad
 * static ones, the webhook sidecar whose token file is replaced while it runs, and
 * `dnsplane nsm publish --token-file` with a SPIFFE-style subject.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Code } from '@connectrpc/connect';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, resolveServer } from '../../src/cli/client.js';
import type { CliIo } from '../../src/cli/command.js';
import { nsmCommand } from '../../src/cli/nsm.js';
import { tenantCommand } from '../../src/cli/tenant.js';
import { trustSubject } from '../../src/core/credentials/workload-trust.js';
import { Policy, ZoneService } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { startSidecar, type Sidecar } from '../../src/webhook/index.js';
import { ExternalDns, ExternalDnsError } from '../helpers/external-dns.js';
import { expectRejected } from '../helpers/expect.js';
import { startIssuer, type TestIssuer } from '../helpers/oidc-issuer.js';
import { startHarness, type Harness } from '../helpers/server.js';
import { until } from '../helpers/until.js';

const ZONE = 'example.com';
const SA = 'system:serviceaccount:external-dns:external-dns';
const REGISTRY = 'spiffe://example.org/ns/nsm-system/sa/registry';
let h: Harness;
let issuer: TestIssuer;
let admin: string;
let dir: string;

function io(env: Record<string, string | undefined>): CliIo & { lines: string[] } {
  const lines: string[] = [];
  return { lines, out: (l = '') => void lines.push(l), err: (l) => void lines.push(`ERR ${l}`), env, isTty: false };
}

/** Writes `token` to `file` as the kubelet does: a new file moved over the old one (atomic). */
function project(file: string, token: string): void {
  writeFileSync(`${file}.new`, token);
  renameSync(`${file}.new`, file);
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-workload-'));
  issuer = await startIssuer();
  h = await startHarness({
    zones: { [ZONE]: [{ subDomain: '', fieldType: 'NS', target: 'dns1.sim.test.', ttl: 0 }] },
    // No cooldown to wait out here: a key rotated right after the first fetch is fetched at once (the
    // cooldown itself: test/api/workload-tokens.test.ts).
    env: { DNSPLANE_LOGIN_BURST: '6', DNSPLANE_LOGIN_RATE: '0.01', DNSPLANE_JWKS_COOLDOWN: '1ms' },
  });
  admin = await h.tenant('root', [], { admin: true });
  await h.tenant('c1', [ZONE], { suffixes: [`c1.${ZONE}`] });
  await h.tenant('nsm1', [ZONE]);
  // As `dnsplane tenant trust` does it, on the server's database (the CLI's own test: test/cli/tenant-trust.test.ts).
  const trust = { pool: h.server.ctx.pool, actor: null };
  await trustSubject(trust, { tenant: 'c1', issuer: issuer.url, subject: SA, caPem: issuer.caPem });
  await trustSubject(trust, { tenant: 'nsm1', issuer: issuer.url, subject: REGISTRY });
});
afterAll(async () => {
  await h?.close();
  await issuer?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the Connect API with a projected token', () => {
  it('Records, Plan and Apply act as the trusted tenant; the journal names the subject; its last seen is written', async () => {
    const token = await issuer.mint();
    const zone = h.zoneClient(token);
    const listed = await zone.listZones({});
    expect([listed.tenant, listed.zones.map((z) => z.name)]).toEqual(['c1', [ZONE]]);
    expect((await zone.records({ zones: [ZONE] })).zones.map((z) => z.zone)).toEqual([ZONE]);
    const endpoint = { dnsName: `www.c1.${ZONE}`, recordType: 'A', targets: ['192.0.2.10'], ttl: 300 };
    const plan = await zone.plan({ policy: Policy.UPSERT_ONLY, input: { case: 'desired', value: { zones: [ZONE], endpoints: [endpoint] } } });
    expect(plan.plan?.zones[0]?.changes).toHaveLength(1);
    const applied = await zone.apply({ source: { case: 'planId', value: plan.plan!.id } });
    expect(applied.zones[0]?.calls.map((c) => `${c.method} ${c.path}`)).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);

    const journal = await h.adminClient(admin).listJournal({ zone: ZONE, limit: 5 });
    const row = journal.entries.find((e) => e.tenant === 'c1')!;
    expect(row.summary).toBe(`by workload ${SA} (issuer ${issuer.url})`);

    const seen = await until('the subject seen', async () => {
      const out = io({ DATABASE_URL: h.databaseUrl });
      await tenantCommand.run(['show', 'c1'], out);
      return out.lines.find((l) => l.includes(SA) && !/ -\s*$/.test(l)) ? out.lines : undefined;
    });
    expect(seen[0]).toBe('tenant "c1"');
    expect(seen.join('\n')).toMatch(new RegExp(`${issuer.url.replace(/[.]/g, '\\.')}\\s+${SA}\\s+dnsplane\\s+discovery\\s+\\S+\\s+\\d{4}-`));
  });

  it('a verified token goes through the gate from memory; /metrics counts its verification once', async () => {
    const token = await issuer.mint();
    for (let i = 0; i < 5; i++) await h.zoneClient(token).records({ zones: [ZONE] });
    const text = await (await fetch(`${h.server.url}/metrics`)).text();
    expect(text).toMatch(/^dnsplane_workload_tokens_total\{result="verified"\} 2$/m);
    expect(text).toMatch(new RegExp(`^dnsplane_jwks_age_seconds\\{issuer="${issuer.url.replace(/[.]/g, '\\.')}"\\} \\d`, 'm'));
  });
});

describe('AdminService', () => {
  it('TrustSubject, ListTrustedSubjects, UntrustSubject: journaled under the admin; a non-admin is PermissionDenied before anything', async () => {
    const client = h.adminClient(admin);
    const sub = 'system:serviceaccount:team9:external-dns';
    const r = await client.trustSubject({ tenant: 'c1', issuer: issuer.url, subject: sub, audience: 'dnsplane-team9' });
    expect([r.trusted?.tenant, r.trusted?.subject, r.trusted?.audience, r.trusted?.keys, r.keysChanged]).toEqual([
      'c1',
      sub,
      'dnsplane-team9',
      'discovery',
      false,
    ]);
    await expect(h.zoneClient(await issuer.mint({ sub, aud: 'dnsplane-team9' })).listZones({})).resolves.toMatchObject({ tenant: 'c1' });
    const listed = await client.listTrustedSubjects({ tenant: 'c1' });
    expect(listed.subjects.map((t) => t.subject)).toEqual([SA, sub]);
    expect(listed.subjects[0]?.lastSeenAt).toBeDefined();
    await expectRejected(
      client.trustSubject({ tenant: 'nsm1', issuer: issuer.url, subject: sub }),
      Code.InvalidArgument,
      /^subject: .* tenant "c1" trusts it$/,
    );
    await expectRejected(client.trustSubject({ tenant: 'c1', issuer: issuer.url, subject: 'x', jwks: '{}' }), Code.InvalidArgument, /^jwks: not a JWKS/);
    const c1 = await h.tenant('c9', [ZONE]);
    await expectRejected(h.adminClient(c1).listTrustedSubjects({}), Code.PermissionDenied, /admin scope/);
    expect((await client.untrustSubject({ tenant: 'c1', issuer: issuer.url, subject: sub })).untrusted?.subject).toBe(sub);
    await expectRejected(h.zoneClient(await issuer.mint({ sub, aud: 'dnsplane-team9' })).listZones({}), Code.Unauthenticated, /not trusted/);
    const journal = await client.listJournal({ limit: 5 });
    expect(journal.entries.map((e) => e.summary)).toContain(`tenant c1 no longer trusts subject ${sub} of issuer ${issuer.url} by root`);
  });
});

describe('the webhook sidecar with a projected token file', () => {
  let sidecar: Sidecar;
  let file: string;

  beforeAll(async () => {
    file = path.join(dir, 'token');
    project(file, await issuer.mint());
    const { tokenSource } = resolveServer({ server: h.server.url, tokenFile: file }, {});
    sidecar = await startSidecar({
      client: connectClient(ZoneService, h.server.url, tokenSource),
      listen: { host: '127.0.0.1', port: 0 },
      log: pino({ level: 'silent' }),
    });
  });
  afterAll(async () => {
    await sidecar?.close();
  });

  it('reads the file for every call: a token replaced mid-run is used at once (a bad one is 401, the next good one works)', async () => {
    const edns = new ExternalDns(sidecar.url);
    expect((await edns.negotiate()).include).toEqual([`c1.${ZONE}`]);
    await edns.applyChanges({ create: [{ dnsName: `api.c1.${ZONE}`, targets: ['192.0.2.20'], recordType: 'A' }] });
    // The kubelet's rotation, but to a token of a subject nobody trusts: the very next call is refused.
    project(file, await issuer.mint({ sub: 'system:serviceaccount:external-dns:other' }));
    const err = (await edns.records().catch((e: unknown) => e)) as ExternalDnsError;
    expect(err).toBeInstanceOf(ExternalDnsError);
    expect(err.status).toBe(401);
    // A new key at the issuer and a fresh token: used at the next call, the new kid fetched at once.
    const kid = await issuer.rotate({ alg: 'ES256' });
    project(file, await issuer.mint({ kid }));
    const records = await edns.records();
    expect(records.map((e) => e.dnsName)).toContain(`api.c1.${ZONE}`);
  });
});

describe('dnsplane nsm publish --token-file, a SPIFFE-style subject', () => {
  it('publishes as the tenant trusting the subject; the journal names it', async () => {
    const file = path.join(dir, 'nsm-token');
    project(file, await issuer.mint({ sub: REGISTRY }));
    const out = io({ DNSPLANE_SERVER: h.server.url });
    const code = await nsmCommand.run(
      ['publish', '--domain', `nsm1.${ZONE}`, '--registry', '192.0.2.1:5002', '--nsmgr-proxy', '192.0.2.1:5004', '--token-file', file],
      out,
    );
    expect(code).toBe(0);
    expect(out.lines[0]).toMatch(/^published NSM domain nsm1\.example\.com \(zone example\.com\)/);
    const journal = await h.adminClient(admin).listJournal({ zone: ZONE, limit: 10 });
    expect(journal.entries.find((e) => e.tenant === 'nsm1')?.summary).toBe(`by workload ${REGISTRY} (issuer ${issuer.url})`);
  });
});

// Last: the limiter keeps 127.0.0.1 limited for the rest of the file.
describe('bad workload tokens', () => {
  it('bad workload tokens are Unauthenticated naming the rule, and count as failed logins: the address is then limited', async () => {
    const failed = async () =>
      Number(/^dnsplane_failed_logins_total\{outcome="failed"\} (\d+)$/m.exec(await (await fetch(`${h.server.url}/metrics`)).text())?.[1] ?? 0);
    // Refused above in this file (the sidecar's untrusted subject, the untrusted one): 2 of the burst of 6.
    const before = await failed();
    const bad = [
      [await issuer.mint({ aud: ['vault'] }), /^workload token refused: audience \["vault"\]/],
      [await issuer.mint({ lifetime: 7200 }), /^workload token refused: a lifetime of 7200 s/],
      [await issuer.mint({ iatOffset: -3000 }), /^workload token refused: expired at/],
      [await issuer.mint({ headerKid: 'made-up' }), /^workload token refused: unknown key/],
    ] as const;
    for (const [token, rule] of bad.slice(0, 6 - before)) await expectRejected(h.zoneClient(token).listZones({}), Code.Unauthenticated, rule);
    expect(await failed()).toBe(6);
    await expectRejected(h.zoneClient(await issuer.mint({ sub: 'system:serviceaccount:x:y' })).listZones({}), Code.ResourceExhausted, /too many failed logins/);
  });
});
