/**
 * `dnsplane tenant tsig create|list|rotate|delete` on a real database: the secret printed once (as long
 * as its HMAC's output), sealed in the database (never there in clear), each tool's configuration
 * block present and well-formed, the DNS server taken from --server, DNSPLANE_DNS_ADVERTISE,
 * DNSPLANE_DNS_LISTEN, the demo door of its data dir, or a placeholder saying what to set, bad input refused naming the field and the rule with nothing
 * written, no DNSPLANE_SECRETS_KEY or another one refused, every change journaled.
 * (test/cli/tsig-tools.test.ts checks the blocks with the real tools.)
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tenantCommand } from '../../src/cli/tenant.js';
import { DNS_DOOR_PORT_FILE } from '../../src/demo/demo.js';
import { SecretBox } from '../../src/core/keys/secrets.js';
import { createTenant, setTenantDisabled } from '../../src/core/tenants/tenants.js';
import { TSIG_ALGORITHMS, tsigSecretBytes } from '../../src/dns/tsig-keys.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { capturedIo, commandJson, type CapturedIo } from '../helpers/cli-io.js';
import { dumpText } from '../helpers/snapshot.js';

let db: TestDatabase;
const key = randomBytes(32);

/** A data dir of its own, empty: no demo's DNS door recorded in it (the checkout's .dnsplane may hold one). */
const emptyDataDir = mkdtempSync(path.join(tmpdir(), 'dnsplane-tsig-none-'));

function io(env: Record<string, string> = {}): CapturedIo {
  return capturedIo({ DATABASE_URL: db.url, DNSPLANE_SECRETS_KEY: key.toString('base64'), DNSPLANE_DATA_DIR: emptyDataDir, ...env });
}

const tsig = (args: string[], out = io()) => tenantCommand.run(['tsig', ...args], out);

const json = (args: string[], env: Record<string, string> = {}): Promise<any> => commandJson(tenantCommand, ['tsig', ...args], io(env));

beforeAll(async () => {
  db = await testDatabase();
  await createTenant(db.pool, { name: 'alice', zones: ['example.test', 'example.org'] });
  await createTenant(db.pool, { name: 'bob', zones: ['example.test'] });
});

afterAll(async () => {
  await db?.drop();
  rmSync(emptyDataDir, { recursive: true, force: true });
});

describe('dnsplane tenant tsig create', () => {
  it("prints the secret once and every tool's configuration; the database keeps it sealed only", async () => {
    const out = io();
    expect(await tsig(['create', 'alice', '--server', '192.0.2.53:5353'], out)).toBe(0);
    const [first, second, secret] = out.lines;
    expect(first).toMatch(/^created TSIG key "alice-[0-9a-f]{8}\.dnsplane\." \(hmac-sha256, acting as the tenant\) for tenant "alice"$/);
    expect(second).toBe('its secret (base64) follows; it is shown only this once (dnsplane keeps it sealed; rotate issues a new one):');
    expect(Buffer.from(secret!, 'base64')).toHaveLength(32);
    const name = /"(.+)\."/.exec(first!)![1]!;
    const text = out.text();
    for (const title of [
      '=== cert-manager (ClusterIssuer, rfc2136 solver) ===',
      '=== lego (--dns rfc2136) ===',
      '=== certbot (certbot-dns-rfc2136) ===',
      '=== external-dns (--provider=rfc2136) ===',
      '=== nsupdate (BIND key file) ===',
    ]) {
      expect(text).toContain(title);
    }
    expect(text).toContain('DNS server: 192.0.2.53:5353 (from --server).');
    expect(text).toContain(`key "${name}." {\n\talgorithm hmac-sha256;\n\tsecret "${secret}";\n};`);
    // Sealed: neither the base64 nor the hex of the secret is anywhere in the database.
    const dump = (await dumpText(db.pool)) + JSON.stringify((await db.pool.query('SELECT * FROM tsig_keys')).rows);
    expect(dump).not.toContain(secret);
    expect(dump).not.toContain(Buffer.from(secret!, 'base64').toString('hex'));
    const row = await store.findTsigKeyForAuth(db.pool, name);
    expect(new SecretBox(key).open(row!.sealed, `tsig-key:${name}`).toString('base64')).toBe(secret);
    // Journaled, from the command line: no acting tenant, no zone.
    const [entry] = await store.listJournal(db.pool, { limit: 1 });
    expect(entry).toMatchObject({ zone: '', tenantId: '', state: 'done' });
    expect(entry!.intent).toMatchObject({ kind: 'create-tsig-key', summary: `TSIG key ${name} (hmac-sha256) of tenant alice created from the command line` });
    expect(JSON.stringify(entry)).not.toContain(secret);
  });

  it('--json: the key, its secret and each block, well-formed', async () => {
    const r = await json(['create', 'alice', '--name', 'Cluster1.Example.', '--acme-only', '--algorithm', 'HMAC-SHA512', '--server', '[2001:db8::53]:53']);
    expect(r.key).toMatchObject({ name: 'cluster1.example', tenant: 'alice', algorithm: 'hmac-sha512', acmeOnly: true, rotatedAt: null, lastUsedAt: null });
    expect(Buffer.from(r.secret, 'base64')).toHaveLength(64);
    expect(r.server).toEqual({ host: '2001:db8::53', port: 53, source: '--server' });
    const c = r.config;
    // cert-manager: the kubectl line, then a ClusterIssuer whose rfc2136 solver names the key.
    const [kubectl, ...rest] = c.certManager.text.split('\n').filter((l: string) => l.startsWith('kubectl'));
    expect(rest).toEqual([]);
    expect(kubectl).toBe(`kubectl -n cert-manager create secret generic dnsplane-tsig-cluster1-example --from-literal=tsig-secret='${r.secret}'`);
    const docs = parseAllDocuments(
      c.certManager.text
        .split('\n')
        .filter((l: string) => !l.startsWith('kubectl'))
        .join('\n'),
    );
    expect(docs.map((d) => d.errors)).toEqual([[]]);
    const issuer = docs[0]!.toJS();
    expect(issuer).toMatchObject({ apiVersion: 'cert-manager.io/v1', kind: 'ClusterIssuer', metadata: { name: 'dnsplane-alice' } });
    expect(issuer.spec.acme.solvers).toEqual([
      {
        dns01: {
          rfc2136: {
            nameserver: '[2001:db8::53]:53',
            tsigKeyName: 'cluster1.example.',
            tsigAlgorithm: 'HMACSHA512',
            tsigSecretSecretRef: { name: 'dnsplane-tsig-cluster1-example', key: 'tsig-secret' },
          },
        },
        selector: { dnsZones: ['example.test', 'example.org'] },
      },
    ]);
    expect(envOf(c.lego.text)).toEqual({
      RFC2136_NAMESERVER: '[2001:db8::53]:53',
      RFC2136_TSIG_KEY: 'cluster1.example.',
      RFC2136_TSIG_SECRET: r.secret,
      RFC2136_TSIG_ALGORITHM: 'hmac-sha512.',
    });
    // certbot takes an IP address only, and the algorithm in capitals.
    expect(iniOf(c.certbot.text)).toEqual({
      dns_rfc2136_server: '2001:db8::53',
      dns_rfc2136_port: '53',
      dns_rfc2136_name: 'cluster1.example.',
      dns_rfc2136_secret: r.secret,
      dns_rfc2136_algorithm: 'HMAC-SHA512',
    });
    // An acme-only key cannot serve external-dns, and says so.
    expect(c.externalDns).toEqual({
      unsupported: 'this key is acme-only (it may write only _acme-challenge TXT records): external-dns needs a key without --acme-only',
    });
    expect(c.nsupdate.text).toContain(`key "cluster1.example." {\n\talgorithm hmac-sha512;\n\tsecret "${r.secret}";\n};`);
    expect(c.nsupdate.text).toContain('server 2001:db8::53 53\nzone example.test\n');
  });

  it('external-dns: one --rfc2136-zone per zone of the tenant, the algorithm as it lists them, AXFR', async () => {
    const r = await json(['create', 'alice', '--algorithm', 'hmac-sha1', '--server', 'dns.example.net:53']);
    expect(r.config.externalDns.text.split('\n').slice(1)).toEqual([
      '- --provider=rfc2136',
      '- --rfc2136-host=dns.example.net',
      '- --rfc2136-port=53',
      '- --rfc2136-zone=example.test',
      '- --rfc2136-zone=example.org',
      `- --rfc2136-tsig-keyname=${r.key.name}.`,
      `- --rfc2136-tsig-secret=${r.secret}`,
      '- --rfc2136-tsig-secret-alg=hmac-sha1',
      '- --rfc2136-tsig-axfr',
      "# at most 25 record sets per UPDATE: answered within external-dns's 2 s at DNSPLANE_OVH_RATE=20 (a name with several targets counts one per target)",
      '- --rfc2136-batch-change-size=25',
    ]);
    // The batch size follows the configured OVH rate (test/dnsserver/batch.test.ts runs it).
    const faster = await json(['create', 'alice', '--algorithm', 'hmac-sha1', '--server', 'dns.example.net:53'], { DNSPLANE_OVH_RATE: '50' });
    expect(faster.config.externalDns.text.split('\n').slice(-1)).toEqual(['- --rfc2136-batch-change-size=64']);
    // A host name: certbot's server must be an IP address, so it is left to fill in, and said why.
    expect(r.config.certbot.text).toContain('# dns_rfc2136_server must be an IP address (certbot refuses a host name): the address of dns.example.net.');
    expect(iniOf(r.config.certbot.text).dns_rfc2136_server).toBe('REPLACE_ME_DNS_IP');
  });

  it("makes a secret as long as each algorithm's HMAC, and says which tools do not take it", async () => {
    for (const algorithm of TSIG_ALGORITHMS) {
      const r = await json(['create', 'bob', '--algorithm', algorithm, '--server', '127.0.0.1:53']);
      expect(Buffer.from(r.secret, 'base64'), algorithm).toHaveLength(tsigSecretBytes(algorithm));
      expect(r.key.algorithm).toBe(algorithm);
      const unsupported = Object.entries(r.config)
        .filter(([, c]) => (c as { unsupported?: string }).unsupported)
        .map(([tool]) => tool);
      expect(unsupported, algorithm).toEqual(
        algorithm === 'hmac-md5' ? ['lego'] : algorithm === 'hmac-sha224' || algorithm === 'hmac-sha384' ? ['certManager'] : [],
      );
    }
  });

  it('takes the DNS server from --server, else DNSPLANE_DNS_ADVERTISE, else DNSPLANE_DNS_LISTEN, else a placeholder it names', async () => {
    const server = async (args: string[], env: Record<string, string>) => (await json(['create', 'bob', ...args], env)).server;
    expect(await server(['--server', '10.0.0.1:5353'], { DNSPLANE_DNS_ADVERTISE: '10.0.0.2:53', DNSPLANE_DNS_LISTEN: '10.0.0.3:53' })).toEqual({
      host: '10.0.0.1',
      port: 5353,
      source: '--server',
    });
    expect(await server([], { DNSPLANE_DNS_ADVERTISE: 'dns.example.net:53', DNSPLANE_DNS_LISTEN: '10.0.0.3:53' })).toEqual({
      host: 'dns.example.net',
      port: 53,
      source: 'DNSPLANE_DNS_ADVERTISE',
    });
    expect(await server([], { DNSPLANE_DNS_LISTEN: '10.0.0.3:5353' })).toEqual({ host: '10.0.0.3', port: 5353, source: 'DNSPLANE_DNS_LISTEN' });
    expect(await server([], { DNSPLANE_DNS_LISTEN: '0.0.0.0:5353' })).toEqual({ host: 'REPLACE_ME_DNS_HOST', port: 5353, source: 'placeholder' });
    expect(await server([], {})).toEqual({ host: 'REPLACE_ME_DNS_HOST', port: 53, source: 'placeholder' });
    const out = io();
    await tsig(['create', 'bob'], out);
    expect(out.text()).toContain(
      "The DNS server below is a placeholder (REPLACE_ME_DNS_HOST:53): this environment says nowhere where clients reach dnsplane's DNS door. Pass --server HOST:PORT, or set DNSPLANE_DNS_ADVERTISE=HOST:PORT as the servers have it",
    );
  });

  it('beside a demo server (its data dir, no DNS setting): the DNS door the demo recorded, not a placeholder', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'dnsplane-tsig-'));
    try {
      writeFileSync(path.join(dataDir, DNS_DOOR_PORT_FILE), '53053\n');
      const r = await json(['create', 'bob'], { DNSPLANE_DATA_DIR: dataDir });
      expect(r.server).toEqual({ host: '127.0.0.1', port: 53053, source: `the demo's DNS door (${path.join(dataDir, DNS_DOOR_PORT_FILE)})` });
      expect(r.config.nsupdate.text).toContain('server 127.0.0.1 53053\n');
      // A setting still wins over what a demo recorded.
      expect((await json(['create', 'bob'], { DNSPLANE_DATA_DIR: dataDir, DNSPLANE_DNS_ADVERTISE: 'dns.example.net:53' })).server.source).toBe(
        'DNSPLANE_DNS_ADVERTISE',
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('bad input, and no key or another key: refused naming the field and the rule, nothing written', () => {
  const refused = async (args: string[], message: string, env: Record<string, string> = {}) => {
    const before = (await dumpText(db.pool)) + JSON.stringify((await db.pool.query('SELECT * FROM tsig_keys ORDER BY id')).rows);
    await expect(tsig(args, io(env))).rejects.toThrow(message);
    expect((await dumpText(db.pool)) + JSON.stringify((await db.pool.query('SELECT * FROM tsig_keys ORDER BY id')).rows)).toBe(before);
  };

  it('an unknown algorithm, a bad name, a taken name, an unknown tenant or key', async () => {
    await refused(
      ['create', 'alice', '--algorithm', 'hmac-sha3'],
      'algorithm: must be one of hmac-md5, hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384, hmac-sha512 (default hmac-sha256), got "hmac-sha3"',
    );
    await refused(
      ['create', 'alice', '--name', 'bad name'],
      'name: must be a DNS name of at most 253 characters (e.g. "cluster1.dnsplane."): labels of 1-63 characters of a-z, 0-9, "-" and "_", not starting or ending with "-"; got "bad name"',
    );
    await refused(['create', 'alice', '--name', `${'a'.repeat(64)}.dnsplane`], 'name: must be a DNS name');
    await refused(['create', 'alice', '--name=-x.dnsplane'], 'name: must be a DNS name');
    await refused(
      ['create', 'bob', '--name', 'CLUSTER1.example'],
      'name: a TSIG key named "cluster1.example" already exists (key names are unique across tenants: a DNS message names only its key)',
    );
    await refused(['create', 'nobody'], 'tenant: no tenant named "nobody" (dnsplane tenant list shows them)');
    await refused(['rotate', 'missing.dnsplane'], 'name: no TSIG key named "missing.dnsplane"');
    await refused(['delete', 'missing.dnsplane'], 'name: no TSIG key named "missing.dnsplane"');
    await refused(['list', 'nobody'], 'tenant: no tenant named "nobody"');
    await refused(['create'], 'TENANT: exactly one TENANT is required');
  });

  it("no DNSPLANE_SECRETS_KEY, or another key than the stored secrets'", async () => {
    await refused(['create', 'alice'], 'DNSPLANE_SECRETS_KEY is not set: TSIG secrets are kept sealed with it. It must be 32 random bytes in base64', {
      DNSPLANE_SECRETS_KEY: '',
    });
    const wrong = randomBytes(32);
    await refused(['create', 'alice'], `DNSPLANE_SECRETS_KEY holds key ${new SecretBox(wrong).keyIdHex}, and none opens `, {
      DNSPLANE_SECRETS_KEY: wrong.toString('base64'),
    });
    await refused(['rotate', 'cluster1.example'], `DNSPLANE_SECRETS_KEY holds key ${new SecretBox(wrong).keyIdHex}, and none opens `, {
      DNSPLANE_SECRETS_KEY: wrong.toString('base64'),
    });
  });
});

describe('list, rotate, delete', () => {
  it('list shows name, tenant, algorithm, scope, created, rotated, last used — never a secret', async () => {
    const out = io();
    expect(await tsig(['list', 'alice'], out)).toBe(0);
    expect(out.lines[0]).toMatch(/^NAME +TENANT +ALGORITHM +SCOPE +CREATED +ROTATED +LAST USED +OLD SECRET UNTIL$/);
    expect(out.lines.find((l) => l.startsWith('cluster1.example.'))).toMatch(
      /^cluster1\.example\. +alice +hmac-sha512 +acme-only +\d{4}-\d\d-\d\dT[\d:.]+Z +- +never +-$/,
    );
    const all = await json(['list']);
    expect(new Set(all.map((k: { tenant: string }) => k.tenant))).toEqual(new Set(['alice', 'bob']));
    expect(Object.keys(all[0]).sort()).toEqual(['acmeOnly', 'algorithm', 'createdAt', 'lastUsedAt', 'name', 'oldSecretValidUntil', 'rotatedAt', 'tenant']);
  });

  it('rotate: a new secret of the same length, printed once with the configuration; the old one is gone', async () => {
    const before = await store.findTsigKeyForAuth(db.pool, 'cluster1.example');
    const r = await json(['rotate', 'Cluster1.Example.', '--server', '192.0.2.1:53']);
    expect(r.key).toMatchObject({ name: 'cluster1.example', algorithm: 'hmac-sha512', acmeOnly: true });
    expect(r.key.rotatedAt).not.toBeNull();
    expect(Buffer.from(r.secret, 'base64')).toHaveLength(64);
    const after = await store.findTsigKeyForAuth(db.pool, 'cluster1.example');
    expect(after!.sealed.ciphertext.equals(before!.sealed.ciphertext)).toBe(false);
    expect(new SecretBox(key).open(after!.sealed, 'tsig-key:cluster1.example').toString('base64')).toBe(r.secret);
    expect(r.config.nsupdate.text).toContain(r.secret);
    const [entry] = await store.listJournal(db.pool, { limit: 1 });
    expect(entry!.intent).toMatchObject({
      kind: 'rotate-tsig-key',
      summary: 'TSIG key cluster1.example (hmac-sha512, acme-only) of tenant alice rotated from the command line: the old secret no longer works',
    });
  });

  it("a disabled tenant's keys are listed still; delete removes a key and journals it", async () => {
    await setTenantDisabled(db.pool, 'bob', true);
    expect((await json(['list', 'bob'])).length).toBeGreaterThan(0);
    const r = await json(['delete', 'cluster1.example.']);
    expect(r.deleted).toMatchObject({ name: 'cluster1.example', tenant: 'alice' });
    expect(await store.getTsigKey(db.pool, 'cluster1.example')).toBeUndefined();
    const [entry] = await store.listJournal(db.pool, { limit: 1 });
    expect(entry!.intent).toMatchObject({ kind: 'delete-tsig-key' });
  });

  it('--help of tsig is its own, in every form', async () => {
    const usage = '  dnsplane tenant tsig create TENANT [--algorithm ALG] [--name NAME] [--acme-only] [--server HOST:PORT] [--json]';
    for (const argv of [
      ['tenant', 'tsig', '--help'],
      ['tenant', 'tsig', 'create', '--help'],
      ['help', 'tenant', 'tsig'],
    ]) {
      const r = spawnSync(process.execPath, [path.resolve('bin/dnsplane-dev.js'), ...argv], { encoding: 'utf8', env: { PATH: process.env['PATH'] } });
      expect(r.status, argv.join(' ')).toBe(0);
      expect(r.stdout.split('\n').slice(0, 2)).toEqual(['Usage:', usage]);
      expect(Math.max(...r.stdout.split('\n').map((l) => l.length))).toBeLessThanOrEqual(usage.length);
    }
    expect(tenantCommand.helpFor!(['list'])).toBe(tenantCommand.help);
    expect(tenantCommand.help).toContain('dnsplane tenant tsig create|list|rotate|delete …   (dnsplane tenant tsig --help)');
  });
});

/** `export K='V'` lines as an object. */
function envOf(text: string): Record<string, string> {
  return Object.fromEntries([...text.matchAll(/^export ([A-Z0-9_]+)='([^']*)'$/gm)].map((m) => [m[1]!, m[2]!]));
}

/** `k = v` lines of an ini file (comments skipped). */
function iniOf(text: string): Record<string, string> {
  return Object.fromEntries([...text.matchAll(/^([a-z0-9_]+) = (.*)$/gm)].map((m) => [m[1]!, m[2]!]));
}
