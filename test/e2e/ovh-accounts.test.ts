/**
 * Many OVH accounts in one dnsplane (issue 44): three simulators are three OVH accounts, each with its
 * own credentials and zones — `default` (the OVH_* variables) holds a.test, `bee` b.test, `sea` c.test
 * and a.test too. Two replicas on one database. `bee` is added at run time through the CLI, `sea`
 * through AdminService. Proved here: bad input refused naming the field, nothing stored; a zone two
 * accounts hold refused naming both; one apply to zones of two accounts, each OVH call reaching its own
 * simulator signed with its own keys, each account on its own budget and rate, the drift check of a zone
 * asking its own account; an account answering 403, then down, makes only its zones
 * unavailable (ListZones, /readyz, the metric) while the others apply; disable stops its calls at once;
 * a rotation on one replica is used by the other without restart; reseal covers the accounts'
 * credentials; no secret in the logs or the tables.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Code, type Client } from '@connectrpc/connect';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountCommand } from '../../src/cli/account.js';
import { openCredentials } from '../../src/core/accounts/credentials.js';
import { resealSecrets } from '../../src/core/credentials/reseal.js';
import { checkZoneDrift } from '../../src/core/drift/drift.js';
import { SecretBox } from '../../src/core/keys/secrets.js';
import { createTenant } from '../../src/core/tenants/tenants.js';
import type { AdminService } from '../../src/gen/dnsplane/v1/admin_pb.js';
import { ApplyStatus, type ZoneService } from '../../src/gen/dnsplane/v1/zone_pb.js';
import { generateCertificate } from '../../src/ovhsim/cert.js';
import { OvhSimulator } from '../../src/ovhsim/index.js';
import { accountKey } from '../../src/ovh/client/transport.js';
import { parseOvhEndpoint } from '../../src/ovh/endpoint.js';
import { accountLabel } from '../../src/ovh/ratelimit.js';
import type { Server } from '../../src/server/server.js';
import * as store from '../../src/store/index.js';
import { capturedIo } from '../helpers/cli-io.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { ep, expectRejected } from '../helpers/expect.js';
import { scrape } from '../helpers/prometheus.js';
import { serviceClient, startServerOn, zoneClientFor } from '../helpers/sim-server.js';
import { until } from '../helpers/until.js';
import { applyDesired } from '../helpers/zone-requests.js';
import { AdminService as AdminServiceDesc } from '../../src/gen/dnsplane/v1/admin_pb.js';

const KEY = randomBytes(32);
const ENV = { DNSPLANE_SECRETS_KEY: KEY.toString('base64'), DNSPLANE_DRIFT_INTERVAL: 'off' };

let simA: OvhSimulator;
let simB: OvhSimulator;
let simC: OvhSimulator;
let db: TestDatabase;
const servers: Server[] = [];
let dir: string;
let adminToken: string;
let teamToken: string;
const logLines: string[] = [];

const credentialsText = (c: { applicationKey: string; applicationSecret: string; consumerKey: string }) =>
  `OVH_APPLICATION_KEY=${c.applicationKey}\nOVH_APPLICATION_SECRET=${c.applicationSecret}\nOVH_CONSUMER_KEY=${c.consumerKey}\n`;

function admin(i = 0): Client<typeof AdminService> {
  return serviceClient(AdminServiceDesc, servers[i]!, adminToken);
}

function zones(i = 0): Client<typeof ZoneService> {
  return zoneClientFor(servers[i]!, teamToken);
}

/** Every secret the simulators issued (none may show in logs or tables). */
function secrets(): string[] {
  return [simA, simB, simC].flatMap((s) => [s.credentials.applicationSecret, s.credentials.consumerKey]);
}

beforeAll(async () => {
  // One certificate for the three simulators: OVH_CA_FILE trusts it for every account's endpoint.
  const tls = await generateCertificate();
  simA = await OvhSimulator.start({ zones: { 'a.test': [] }, tls });
  simB = await OvhSimulator.start({ zones: { 'b.test': [] }, tls });
  simC = await OvhSimulator.start({ zones: { 'c.test': [], 'a.test': [] }, tls });
  db = await testDatabase();
  dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-accounts-'));
  const log = pino({ level: 'trace' }, { write: (line: string) => void logLines.push(line) });
  for (let i = 0; i < 2; i++) servers.push(await startServerOn(simA, db.url, ENV, log));
  adminToken = (await createTenant(db.pool, { name: 'ops', zones: [], admin: true })).token;
  teamToken = (await createTenant(db.pool, { name: 'team', zones: ['a.test', 'b.test', 'c.test'] })).token;
});

afterAll(async () => {
  for (const s of servers) await s.close();
  for (const s of [simA, simB, simC]) await s?.stop().catch(() => undefined);
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function storedAccounts(): Promise<number> {
  return Number((await db.pool.query<{ n: string }>('SELECT count(*)::text AS n FROM ovh_accounts')).rows[0]!.n);
}

describe('OVH accounts', () => {
  it('refuses bad input naming the field, and stores nothing', async () => {
    const good = credentialsText(simB.credentials);
    const half = `OVH_APPLICATION_KEY=${simB.credentials.applicationKey}\nOVH_APPLICATION_SECRET=${simB.credentials.applicationSecret}\n`;
    await expectRejected(
      admin().addOvhAccount({ name: 'bee', endpoint: simB.apiUrl, credentials: half }),
      Code.InvalidArgument,
      /^credentials: OVH_CONSUMER_KEY: missing/,
    );
    await expectRejected(
      admin().addOvhAccount({ name: 'bee', endpoint: 'ovh-mars', credentials: good }),
      Code.InvalidArgument,
      /^endpoint: must be one of ovh-eu, ovh-ca, ovh-us/,
    );
    await expectRejected(admin().addOvhAccount({ name: 'default', endpoint: simB.apiUrl, credentials: good }), Code.InvalidArgument, /^name: .*not "default"/);
    await expectRejected(admin().addOvhAccount({ name: 'bee', endpoint: simB.apiUrl, credentials: good, rate: -3 }), Code.InvalidArgument, /^rate: /);
    // Credentials OVH refuses (another account's secret): OVH's reason, nothing stored.
    simB.clearCalls();
    const wrong = credentialsText({ ...simB.credentials, applicationSecret: simC.credentials.applicationSecret });
    const e = await expectRejected(
      admin().addOvhAccount({ name: 'bee', endpoint: simB.apiUrl, credentials: wrong }),
      Code.InvalidArgument,
      /^credentials: OVH refused them \(HTTP 40[03]: /,
    );
    expect(e.rawMessage).not.toContain(simC.credentials.applicationSecret);
    expect(simB.calls().map((c) => `${c.method} ${c.path} ${c.status}`)).toEqual(['GET /auth/time 200', expect.stringMatching(/^GET \/domain\/zone 40[03]$/)]);
    // The CLI refuses a secret-less file before calling anyone.
    const io = capturedIo({ DNSPLANE_SERVER: servers[0]!.url, DNSPLANE_TOKEN: adminToken });
    const file = path.join(dir, 'half.env');
    writeFileSync(file, half);
    const stdinLess = await accountCommand.run(['add', 'bee', '--endpoint', simB.apiUrl, '--credentials-file', file], io).catch((x: Error) => x);
    expect(String(stdinLess)).toMatch(/credentials: OVH_CONSUMER_KEY: missing/);
    expect(await storedAccounts()).toBe(0);
  });

  it('adds an account through the CLI (credentials on standard input) and one through the API; a zone two accounts hold is refused naming both', async () => {
    const io = { ...capturedIo({ DNSPLANE_SERVER: servers[0]!.url, DNSPLANE_TOKEN: adminToken }), stdin: async () => credentialsText(simB.credentials) };
    expect(await accountCommand.run(['add', 'bee', '--endpoint', simB.apiUrl, '--credentials-file', '-', '--rate', '50'], io)).toBe(0);
    expect(io.lines[0]).toBe('added OVH account bee');
    expect(io.text()).toMatch(/bee .*b\.test .*yes +ok/);
    // sea holds a.test, which default holds: refused naming both, nothing stored.
    const sea = credentialsText(simC.credentials);
    await expectRejected(
      admin().addOvhAccount({ name: 'sea', endpoint: simC.apiUrl, credentials: sea }),
      Code.InvalidArgument,
      /^zones: zone a\.test is in OVH accounts "default" and "sea"/,
    );
    expect(await storedAccounts()).toBe(1);
    const added = await admin().addOvhAccount({ name: 'sea', endpoint: simC.apiUrl, credentials: sea, zones: ['c.test'] });
    expect(added.account).toMatchObject({ name: 'sea', zones: ['c.test'], enabled: true, status: 'ok', applicationKey: simC.credentials.applicationKey });
    await expectRejected(
      admin().addOvhAccount({ name: 'sea', endpoint: simC.apiUrl, credentials: sea, zones: ['c.test'] }),
      Code.InvalidArgument,
      /^name: an OVH account "sea" already exists/,
    );
    const listed = await admin(1).listOvhAccounts({});
    expect(listed.accounts.map((a) => [a.name, a.zones, a.rate])).toEqual([
      ['bee', ['b.test'], 50],
      ['sea', ['c.test'], 0],
    ]);
    // Every replica has them, and ListZones says which account each zone is in.
    for (const i of [0, 1]) {
      await until(`replica ${i} knows sea's zones`, () => servers[i]!.ctx.accounts?.registry.accountOf('c.test') === 'sea');
      const z = await zones(i).listZones({});
      expect(z.zones.map((x) => [x.name, x.account, x.unavailable])).toEqual([
        ['a.test', 'default', ''],
        ['b.test', 'bee', ''],
        ['c.test', 'sea', ''],
      ]);
    }
  });

  it('applies to zones of two accounts at once, each call reaching its own account signed with its own keys', async () => {
    for (const s of [simA, simB, simC]) s.clearCalls();
    const res = await applyDesired(zones(1), [ep('www.a.test', 'A', ['192.0.2.1']), ep('www.b.test', 'A', ['192.0.2.2'])]);
    expect(res.zones.map((z) => [z.zone, ApplyStatus[z.status]])).toEqual([
      ['a.test', 'APPLIED'],
      ['b.test', 'APPLIED'],
    ]);
    // Each simulator checks the signature with its own credentials: every call answered 2xx was signed with them.
    const seen = (s: OvhSimulator) => s.calls().filter((c) => c.path !== '/auth/time');
    for (const [s, zone] of [
      [simA, 'a.test'],
      [simB, 'b.test'],
    ] as const) {
      expect(seen(s).every((c) => c.path.startsWith(`/domain/zone/${zone}`) && c.status < 300)).toBe(true);
      expect(s.writes().map((c) => `${c.method} ${c.path}`)).toEqual([`POST /domain/zone/${zone}/record`, `POST /domain/zone/${zone}/refresh`]);
      expect(
        s
          .publishedRecords(zone)
          .filter((r) => r.fieldType === 'A')
          .map((r) => `${r.subDomain} ${r.fieldType} ${r.target}`),
      ).toEqual([`www A 192.0.2.${zone === 'a.test' ? 1 : 2}`]);
    }
    expect(simC.calls()).toEqual([]);
    // The journal names the account each apply's calls went through, as it was then (a zone can move).
    for (const [zone, account] of [
      ['a.test', 'default'],
      ['b.test', 'bee'],
    ] as const) {
      const [entry] = (await admin(1).listJournal({ zone, limit: 1 })).entries;
      expect([entry!.id, entry!.account]).toEqual([res.zones.find((z) => z.zone === zone)!.journalId, account]);
      expect((await zones(0).getApply({ journalId: entry!.id })).account).toBe(account);
    }
    // Each account its own budget, shared by the replicas (a row of ovh_budget per account) at its own rate.
    const label = (sim: OvhSimulator) => accountLabel(accountKey(parseOvhEndpoint(sim.apiUrl), sim.credentials));
    const budgets = (await db.pool.query<{ account: string }>('SELECT account FROM ovh_budget ORDER BY account')).rows.map((r) => r.account);
    expect(budgets).toEqual([label(simA), label(simB)].sort());
    expect(servers[1]!.ctx.accounts!.registry.clientFor('b.test').client!.rateLimiter.ratePerSecond).toBe(50);
    expect(servers[1]!.ctx.ovh.rateLimiter.ratePerSecond).toBe(1000);
    // The drift check of a zone of bee asks bee's simulator, and finds what was changed in bee's console.
    for (const sim of [simA, simB]) sim.clearCalls();
    simB.addRecord('b.test', { subDomain: 'manual', fieldType: 'TXT', target: '"made in the console"', ttl: 300 });
    const drift = await checkZoneDrift(servers[0]!.ctx, 'b.test');
    expect(drift).toMatchObject({ status: 'changed', added: 1 });
    expect(
      simB
        .calls()
        .filter((c) => c.path !== '/auth/time')
        .every((c) => c.method === 'GET' && c.path.startsWith('/domain/zone/b.test')),
    ).toBe(true);
    expect(simB.calls().some((c) => c.path === '/domain/zone/b.test/soa')).toBe(true);
    expect(simA.calls()).toEqual([]);
    // zone export names the account (a zone of `default` is exported as before).
    expect((await admin(1).exportZone({ zone: 'b.test' })).zoneFile).toContain('; In OVH account bee.');
    expect((await admin(1).exportZone({ zone: 'a.test' })).zoneFile).not.toContain('OVH account');
    const m = await scrape(servers[1]!.url);
    expect(m('dnsplane_ovh_account_calls_total', { account: 'bee', status: '200' })).toBeGreaterThan(0);
  });

  it('an account OVH refuses (403), then down, makes only its zones unavailable; the others keep applying', async () => {
    const refuse = simC.faults.fail({ effect: { kind: 'status', status: 403, body: { class: 'Client::Forbidden', message: 'This credential is not valid' } } });
    const c = await applyDesired(zones(0), [ep('www.c.test', 'A', ['192.0.2.3'])]).catch((e: Error) => e);
    expect(String(c)).toMatch(/HTTP 403/);
    const z = await zones(0).listZones({});
    expect(z.zones.find((x) => x.name === 'c.test')?.unavailable).toMatch(
      /^OVH account sea refused: OVH refused its credentials: HTTP 403 This credential is not valid/,
    );
    expect(z.zones.filter((x) => x.unavailable !== '').map((x) => x.name)).toEqual(['c.test']);
    const ready = await fetch(`${servers[0]!.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.text()).toMatch(/OVH account sea refused: OVH refused its credentials: HTTP 403.*; its zones unavailable: c\.test/);
    const m = await scrape(servers[0]!.url);
    expect(m('dnsplane_ovh_account_available', { account: 'sea', status: 'refused' })).toBe(0);
    expect(m('dnsplane_ovh_account_available', { account: 'bee', status: 'ok' })).toBe(1);
    const b = await applyDesired(zones(0), [ep('api.b.test', 'A', ['192.0.2.4'])]);
    expect(ApplyStatus[b.zones[0]!.status]).toBe('APPLIED');
    refuse.remove();
    // Down: no answer at all.
    await simC.stop();
    const down = await applyDesired(zones(0), [ep('www.c.test', 'A', ['192.0.2.3'])]).catch((e: Error) => e);
    expect(String(down)).toMatch(/no answer|unavailable/i);
    expect((await zones(0).listZones({})).zones.find((x) => x.name === 'c.test')?.unavailable).toMatch(/^OVH account sea down: its endpoint is down/);
    const a = await applyDesired(zones(0), [ep('api.a.test', 'A', ['192.0.2.5'])]);
    expect(ApplyStatus[a.zones[0]!.status]).toBe('APPLIED');
  });

  it('disable stops the account calls at once; enable brings them back', async () => {
    await admin(0).setOvhAccountEnabled({ name: 'bee', enabled: false });
    simB.clearCalls();
    const res = await applyDesired(zones(0), [ep('off.b.test', 'A', ['192.0.2.6'])]).catch((e: Error) => e);
    expect(String(res)).toMatch(/OVH account "bee", which is disabled/);
    expect(simB.calls()).toEqual([]);
    await admin(0).setOvhAccountEnabled({ name: 'bee', enabled: true });
    expect(ApplyStatus[(await applyDesired(zones(0), [ep('on.b.test', 'A', ['192.0.2.6'])])).zones[0]!.status]).toBe('APPLIED');
  });

  it('a rotation on one replica is used by the other within a notification, no restart', async () => {
    const next = {
      applicationKey: randomBytes(8).toString('hex'),
      applicationSecret: randomBytes(16).toString('hex'),
      consumerKey: randomBytes(16).toString('hex'),
    };
    simB.setCredentials(next); // the old consumer key revoked in OVH's console: the old credentials are refused
    const refused = await applyDesired(zones(1), [ep('old.b.test', 'A', ['192.0.2.7'])]).catch((e: Error) => e);
    expect(String(refused)).toMatch(/HTTP 403/);
    const io = { ...capturedIo({ DNSPLANE_SERVER: servers[0]!.url, DNSPLANE_TOKEN: adminToken }), stdin: async () => credentialsText(next) };
    expect(await accountCommand.run(['rotate', 'bee', '--credentials-file', '-'], io)).toBe(0);
    await until('replica 1 uses the rotated credentials', () => servers[1]!.ctx.accounts?.registry.applicationKeyOf('bee') === next.applicationKey);
    simB.clearCalls();
    const res = await applyDesired(zones(1), [ep('new.b.test', 'A', ['192.0.2.8'])]);
    expect(ApplyStatus[res.zones[0]!.status]).toBe('APPLIED');
    expect(simB.writes().map((c) => `${c.method} ${c.path} ${c.status}`)).toEqual([
      'POST /domain/zone/b.test/record 200',
      'POST /domain/zone/b.test/refresh 204',
    ]);
    expect((await zones(1).listZones({})).zones.find((x) => x.name === 'b.test')?.unavailable).toBe('');
  });

  it('remove stops the account; its zones stay, unavailable, their journal theirs; account list says what is left', async () => {
    const io = capturedIo({ DNSPLANE_SERVER: servers[1]!.url, DNSPLANE_TOKEN: adminToken });
    expect(await accountCommand.run(['remove', 'sea'], io)).toBe(0);
    expect(io.lines).toEqual(['removed OVH account sea']);
    await until('replica 0 forgot sea', () => servers[0]!.ctx.accounts?.registry.applicationKeyOf('sea') === undefined);
    const c = (await zones(0).listZones({})).zones.find((x) => x.name === 'c.test');
    expect(c).toMatchObject({ account: 'sea', unavailable: 'OVH account sea was removed' });
    const res = await applyDesired(zones(0), [ep('www.c.test', 'A', ['192.0.2.3'])]).catch((e: Error) => e);
    expect(String(res)).toMatch(/zone c\.test is in OVH account "sea", which is removed/);
    const list = capturedIo({ DNSPLANE_SERVER: servers[0]!.url, DNSPLANE_TOKEN: adminToken });
    expect(await accountCommand.run(['list', '--json'], list)).toBe(0);
    expect(JSON.parse(list.text()).map((a: { name: string; zones: string[]; status: string }) => [a.name, a.zones, a.status])).toEqual([
      ['bee', ['b.test'], 'ok'],
    ]);
  });

  it('reseal covers the accounts; no secret in the logs or the tables', async () => {
    const uses = await store.sealedKeyIds(db.pool);
    expect(uses.find((u) => u.what === 'OVH account credential')).toMatchObject({ count: 1, tenants: ['account bee'] });
    const NEW = randomBytes(32);
    const r = await resealSecrets(db.pool, new SecretBox([NEW, KEY]));
    expect(r.resealed).toBe(1);
    const bee = (await store.getOvhAccount(db.pool, 'bee'))!;
    expect(openCredentials(new SecretBox(NEW), 'bee', bee.applicationKey, bee.sealed).consumerKey).toBe(simB.credentials.consumerKey);
    const tables =
      JSON.stringify((await db.pool.query('SELECT row_to_json(a)::text AS r FROM ovh_accounts a')).rows) +
      JSON.stringify((await db.pool.query('SELECT intent::text, result::text FROM journal')).rows);
    const logs = logLines.join('\n');
    for (const secret of secrets()) {
      expect(tables).not.toContain(secret);
      expect(logs).not.toContain(secret);
    }
    expect(tables).toContain('OVH account bee');
  });
});
