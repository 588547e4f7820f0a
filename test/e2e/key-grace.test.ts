/**
 * Rotation without an outage for TSIG and OVH keys (issue 31.6; migrations/0021): a key rotated with a
 * grace keeps its old secret (and, for an OVH key, its old consumer key) working until the grace ends —
 * a DNS UPDATE signed with the old TSIG secret is applied and answered signed with it (nsupdate checks),
 * a served-OVH-API call signed with the old keys is served, each with exactly its OVH calls — then both
 * are refused, from the key cache and from Postgres alike. The grace's end is driven by the context's
 * clock, no waiting. Listings (AdminService and the command line) show until when; a later rotation
 * ends a grace; a reseal re-seals the replaced secret too; a grace over 7 days is refused naming the field.
 */
import { randomBytes } from 'node:crypto';
import { Code } from '@connectrpc/connect';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { tenantCommand } from '../../src/cli/tenant.js';
import { resealSecrets } from '../../src/core/credentials/reseal.js';
import { SecretBox } from '../../src/core/keys/secrets.js';
import * as store from '../../src/store/index.js';
import { capturedIo } from '../helpers/cli-io.js';
import { callLines, expectRejected } from '../helpers/expect.js';
import { describeWithTools, nsupdate } from '../helpers/dns-tools.js';
import { ovhCall, type OvhKeyValues } from '../helpers/ovh-api-client.js';
import { startHarness, type Harness } from '../helpers/server.js';

const ZONE = 'grace.test';
const OLD = randomBytes(32);
const NEW = randomBytes(32);
let h: Harness;
let root: string;
let port: number;

beforeAll(async () => {
  h = await startHarness({ zones: { [ZONE]: [] }, env: { DNSPLANE_DNS_LISTEN: '127.0.0.1:0', DNSPLANE_SECRETS_KEY: OLD.toString('base64') } });
  port = h.server.dns!.port;
  root = await h.tenant('root', [], { admin: true });
  await h.tenant('cluster1', [ZONE]);
});

afterAll(async () => {
  await h?.close();
});

beforeEach(() => h.sim.clearCalls());
afterEach(() => {
  h.server.ctx.clock = undefined;
});

/** Moves this replica's clock to just after `until` (the end of a grace). */
const after = (until: Date) => {
  const skew = until.getTime() + 1_000 - Date.now();
  h.server.ctx.clock = () => Date.now() + skew;
};

describeWithTools(['nsupdate'], 'a TSIG key rotated with a grace', () => {
  const send = (name: string, secret: string, value: string) =>
    nsupdate(
      { algorithm: 'hmac-sha256', name, secret },
      `server 127.0.0.1 ${port}\nzone ${ZONE}\nupdate add _acme-challenge.${ZONE} 60 TXT "${value}"\nsend\n`,
    );
  const applied = [`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`];

  it('takes UPDATEs signed with the old secret until the grace ends, then refuses them (cached or read again); listed with its end', async () => {
    const admin = h.adminClient(root);
    const issued = await admin.createTsigKey({ tenant: 'cluster1', acmeOnly: true });
    const name = issued.key!.name;
    expect((await send(name, issued.secret, 'one')).code).toBe(0); // the key is cached now
    const before = Date.now();
    const rotated = await admin.rotateTsigKey({ name, graceSeconds: 600 });
    const until = timestampDate(rotated.key!.oldSecretValidUntil!);
    expect(until.getTime()).toBeGreaterThanOrEqual(before + 600_000 - 1_000);
    expect(until.getTime()).toBeLessThanOrEqual(Date.now() + 600_000 + 1_000);
    expect((await admin.listTsigKeys({ tenant: 'cluster1' })).keys[0]!.oldSecretValidUntil).toEqual(rotated.key!.oldSecretValidUntil);
    const io = capturedIo({ DATABASE_URL: h.databaseUrl });
    expect(await tenantCommand.run(['tsig', 'list', 'cluster1'], io)).toBe(0);
    expect(io.lines[0]).toMatch(/OLD SECRET UNTIL$/);
    expect(io.lines[1]).toMatch(new RegExp(`${until.toISOString()}$`));
    const journal = (await admin.listJournal({ limit: 1 })).entries[0]!;
    expect(journal.summary).toBe(
      `TSIG key ${name} (hmac-sha256, acme-only) of tenant cluster1 rotated by root: the old secret still works until ${until.toISOString()}`,
    );

    // In the grace: both secrets sign, each answer signed with the secret the UPDATE was (nsupdate checks it).
    h.sim.clearCalls();
    const old = await send(name, issued.secret, 'two');
    expect(old.code, old.stderr).toBe(0);
    expect(callLines(h.sim)).toEqual(applied);
    expect((await send(name, rotated.secret, 'three')).code).toBe(0);

    // The grace over: the old secret is BADSIG, nothing sent to OVH; from the cache and from Postgres.
    after(until);
    h.sim.clearCalls();
    const late = await send(name, issued.secret, 'four');
    expect(late.code).not.toBe(0);
    expect(late.stdout + late.stderr).toMatch(/BADSIG|tsig indicates error/);
    h.server.ctx.tsigKeys!.clear();
    expect((await send(name, issued.secret, 'four')).code).not.toBe(0);
    expect(callLines(h.sim)).toEqual([]);
    expect((await send(name, rotated.secret, 'four')).code).toBe(0);
    expect(callLines(h.sim)).toEqual(applied);
    h.server.ctx.clock = undefined;

    // A rotation without grace ends the one running: the secret before it stops at once.
    const again = await admin.rotateTsigKey({ name });
    expect(again.key!.oldSecretValidUntil).toBeUndefined();
    expect((await send(name, rotated.secret, 'five')).code).not.toBe(0);
    expect((await send(name, again.secret, 'five')).code).toBe(0);
  });

  it('a reseal under a new sealing key re-seals the replaced secret too, which keeps working', async () => {
    const admin = h.adminClient(root);
    const issued = await admin.createTsigKey({ tenant: 'cluster1', acmeOnly: true });
    const name = issued.key!.name;
    await admin.rotateTsigKey({ name, graceSeconds: 600 });
    const box = new SecretBox([NEW, OLD]);
    const rows = await store.sealedKeyIds(h.server.ctx.pool);
    expect(rows.find((r) => r.what === 'TSIG key (replaced, in its grace)')).toMatchObject({ keyId: new SecretBox(OLD).keyIdHex, count: 1 });
    await resealSecrets(h.server.ctx.pool, box);
    expect((await store.sealedKeyIds(h.server.ctx.pool)).map((r) => [r.what, r.keyId])).toEqual([
      ['TSIG key', box.keyIdHex],
      ['TSIG key (replaced, in its grace)', box.keyIdHex],
    ]);
    // This replica now with the new key only: the old secret, resealed, still opens and signs.
    const before = h.server.ctx.secrets;
    h.server.ctx.secrets = new SecretBox(NEW);
    try {
      h.server.ctx.tsigKeys!.clear();
      expect((await send(name, issued.secret, 'resealed')).code).toBe(0);
    } finally {
      h.server.ctx.secrets = before;
      h.server.ctx.tsigKeys!.clear();
    }
  });
});

it('an OVH key rotated with a grace: calls signed with the old secret and consumer key are served until the grace ends, then refused', async () => {
  h.server.ctx.secrets = new SecretBox([NEW, OLD]);
  const admin = h.adminClient(root);
  const base = `${h.server.url}/ovh/1.0`;
  const issued = (await admin.createOvhKey({ tenant: 'cluster1' })).issued!;
  const first: OvhKeyValues = { applicationKey: issued.key!.applicationKey, applicationSecret: issued.applicationSecret, consumerKey: issued.consumerKey };
  expect((await ovhCall(base, first, 'GET', `/domain/zone/${ZONE}/record`)).status).toBe(200);
  const rotated = (await admin.rotateOvhKey({ applicationKey: first.applicationKey, graceSeconds: 600 })).issued!;
  const second: OvhKeyValues = { applicationKey: first.applicationKey, applicationSecret: rotated.applicationSecret, consumerKey: rotated.consumerKey };
  const until = timestampDate(rotated.key!.oldSecretValidUntil!);
  expect((await admin.listOvhKeys({ tenant: 'cluster1' })).keys[0]!.oldSecretValidUntil).toEqual(rotated.key!.oldSecretValidUntil);

  // In the grace: the old keys write and refresh, with exactly those OVH calls; the new ones work too.
  h.sim.clearCalls();
  expect(
    (await ovhCall(base, first, 'POST', `/domain/zone/${ZONE}/record`, { body: { fieldType: 'A', subDomain: 'app', target: '192.0.2.5', ttl: 300 } })).status,
  ).toBe(200);
  expect((await ovhCall(base, first, 'POST', `/domain/zone/${ZONE}/refresh`)).status).toBe(204);
  expect(callLines(h.sim)).toEqual([`POST /domain/zone/${ZONE}/record`, `POST /domain/zone/${ZONE}/refresh`]);
  expect((await ovhCall(base, second, 'GET', `/domain/zone/${ZONE}/record?subDomain=app`)).status).toBe(200);
  // The old consumer key signed with the new secret is a wrong signature, not a way in.
  expect((await ovhCall(base, { ...first, applicationSecret: second.applicationSecret }, 'GET', '/domain/zone')).json).toMatchObject({
    errorCode: 'INVALID_SIGNATURE',
  });

  // The grace over: the old consumer key is no valid credential, from the cache and from Postgres.
  after(until);
  h.sim.clearCalls();
  expect((await ovhCall(base, first, 'GET', '/domain/zone')).json).toMatchObject({ errorCode: 'INVALID_CREDENTIAL' });
  h.server.ctx.ovhKeys!.clear();
  expect((await ovhCall(base, first, 'POST', `/domain/zone/${ZONE}/refresh`)).json).toMatchObject({ errorCode: 'INVALID_CREDENTIAL' });
  expect((await ovhCall(base, second, 'GET', '/domain/zone')).status).toBe(200);
  expect(callLines(h.sim)).toEqual([]);
});

it('refuses a grace over 7 days for either key, naming the field, and changes nothing', async () => {
  const admin = h.adminClient(root);
  const tsig = await admin.createTsigKey({ tenant: 'cluster1' });
  await expectRejected(
    admin.rotateTsigKey({ name: tsig.key!.name, graceSeconds: 8 * 24 * 3600 }),
    Code.InvalidArgument,
    /^graceSeconds: must be between 0 \(the old secret stops at once\) and 7 days, got 691200 s$/,
  );
  expect((await admin.listTsigKeys({ tenant: 'cluster1' })).keys.find((k) => k.name === tsig.key!.name)!.rotatedAt).toBeUndefined();
  const ovh = (await admin.createOvhKey({ tenant: 'cluster1' })).issued!;
  await expectRejected(
    admin.rotateOvhKey({ applicationKey: ovh.key!.applicationKey, graceSeconds: 8 * 24 * 3600 }),
    Code.InvalidArgument,
    /^graceSeconds: must be between 0/,
  );
  await expect(tenantCommand.run(['tsig', 'rotate', tsig.key!.name, '--grace', 'soon'], capturedIo({ DATABASE_URL: h.databaseUrl }))).rejects.toThrow(
    /--grace: must be a duration like/,
  );
});

it('the command line rotates either key with --grace and says until when the old secret works', async () => {
  const admin = h.adminClient(root);
  const env = { DATABASE_URL: h.databaseUrl, DNSPLANE_SECRETS_KEYS: `${NEW.toString('base64')},${OLD.toString('base64')}` };
  const tsig = await admin.createTsigKey({ tenant: 'cluster1' });
  const io = capturedIo(env);
  expect(await tenantCommand.run(['tsig', 'rotate', tsig.key!.name, '--grace', '10m'], io)).toBe(0);
  expect(io.lines[0]).toMatch(
    new RegExp(`^rotated TSIG key "${tsig.key!.name.replace(/\./g, '\\.')}\\." .*; the old secret still works until \\d{4}-\\d\\d-\\d\\dT`),
  );
  const ovh = (await admin.createOvhKey({ tenant: 'cluster1' })).issued!;
  const io2 = capturedIo(env);
  expect(await tenantCommand.run(['ovh-key', 'rotate', ovh.key!.applicationKey, '--grace', '1h'], io2)).toBe(0);
  expect(io2.lines[0]).toMatch(/; the old secret and consumer key still work until \d{4}-\d\d-\d\dT/);
  const until = timestampDate(
    (await admin.listOvhKeys({ tenant: 'cluster1' })).keys.find((k) => k.applicationKey === ovh.key!.applicationKey)!.oldSecretValidUntil!,
  );
  expect(until.getTime()).toBeGreaterThan(Date.now() + 3_500_000);
});
