/**
 * `dnsplane tenant ovh-key create|list|rotate|delete` on a real database: the four values a tool
 * changes printed once (OVH_ENDPOINT and the three keys), each tool's configuration well-formed, the
 * endpoint taken from --endpoint, DNSPLANE_OVH_API_ADVERTISE, DNSPLANE_LISTEN or a placeholder; the
 * database keeps the application key, the sealed secret and the consumer key's sha-256 only; bad
 * input refused naming the field and the rule with nothing written; every change journaled.
 * (test/ovhapi/*.test.ts use the keys with the real clients.)
 */
import { randomBytes } from 'node:crypto';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tenantCommand } from '../../src/cli/tenant.js';
import { loadConfig } from '../../src/config/config.js';
import { SecretBox } from '../../src/core/keys/secrets.js';
import { consumerKeyHash, ovhSecretContext } from '../../src/core/keys/ovh.js';
import { createTenant } from '../../src/core/tenants/tenants.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { capturedIo, commandJson, type CapturedIo } from '../helpers/cli-io.js';
import { dumpText } from '../helpers/snapshot.js';

let db: TestDatabase;
const key = randomBytes(32);

function io(env: Record<string, string> = {}): CapturedIo {
  return capturedIo({ DATABASE_URL: db.url, DNSPLANE_SECRETS_KEY: key.toString('base64'), ...env });
}

const ovhKey = (args: string[], out = io()) => tenantCommand.run(['ovh-key', ...args], out);

const json = (args: string[], env: Record<string, string> = {}): Promise<any> => commandJson(tenantCommand, ['ovh-key', ...args], io(env));

beforeAll(async () => {
  db = await testDatabase();
  await createTenant(db.pool, { name: 'alice', zones: ['example.test', 'example.org'] });
});

afterAll(async () => {
  await db?.drop();
});

/** `export A='x'` / `A='x'` lines as a map. */
function envOf(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^(?:export )?([A-Z_]+)='([^']*)'$/.exec(line);
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

describe('dnsplane tenant ovh-key create', () => {
  it("prints the four values once and every tool's configuration; the database keeps the secret sealed and the consumer key hashed", async () => {
    const out = io({ DNSPLANE_OVH_API_ADVERTISE: 'https://dnsplane.example.com/ovh/1.0' });
    expect(await ovhKey(['create', 'alice'], out)).toBe(0);
    const text = out.text();
    expect(out.lines[0]).toMatch(/^created OVH key [A-Za-z0-9]{16} for tenant "alice"$/);
    const values = envOf(text.split('=== the four values')[1]!.split('===')[1]!);
    expect(Object.keys(values)).toEqual(['OVH_ENDPOINT', 'OVH_APPLICATION_KEY', 'OVH_APPLICATION_SECRET', 'OVH_CONSUMER_KEY']);
    expect(values['OVH_ENDPOINT']).toBe('https://dnsplane.example.com/ovh/1.0');
    expect(text).toContain('OVH_ENDPOINT: https://dnsplane.example.com/ovh/1.0 (from DNSPLANE_OVH_API_ADVERTISE).');
    for (const title of [
      'external-dns (--provider=ovh)',
      'cert-manager-webhook-ovh (ClusterIssuer)',
      'lego (--dns ovh)',
      'Traefik (ACME dnsChallenge, provider ovh)',
      'Caddy (caddy-dns/ovh)',
      'Terraform (the OVH provider)',
    ]) {
      expect(text).toContain(`=== ${title} ===`);
    }
    const ak = values['OVH_APPLICATION_KEY']!;
    const secret = values['OVH_APPLICATION_SECRET']!;
    const ck = values['OVH_CONSUMER_KEY']!;
    const dump = (await dumpText(db.pool)) + JSON.stringify((await db.pool.query('SELECT * FROM ovh_keys')).rows);
    expect(dump).toContain(ak);
    expect(dump).not.toContain(secret);
    expect(dump).not.toContain(ck);
    const row = await store.findOvhKeyForAuth(db.pool, consumerKeyHash(ck));
    expect(new SecretBox(key).open(row!.sealed, ovhSecretContext(ak)).toString('utf8')).toBe(secret);
    const [entry] = await store.listJournal(db.pool, { limit: 1 });
    expect(entry).toMatchObject({ zone: '', tenantId: '', state: 'done' });
    expect(entry!.intent).toMatchObject({ kind: 'create-ovh-key', summary: `OVH key ${ak} of tenant alice created from the command line` });
    expect(JSON.stringify(entry)).not.toContain(secret);
  });

  it('--json: the key, the four values and each block, well-formed', async () => {
    const r = await json(['create', 'alice', '--endpoint', 'http://127.0.0.1:8080/ovh/1.0', '--expires-in', '720h']);
    expect(r.key).toMatchObject({ tenant: 'alice', rotatedAt: null, lastUsedAt: null });
    expect(Date.parse(r.key.expiresAt) - Date.now()).toBeGreaterThan(719 * 3_600_000);
    expect(r.endpoint).toEqual({ url: 'http://127.0.0.1:8080/ovh/1.0', source: '--endpoint' });
    const v = r.values;
    expect(v.OVH_ENDPOINT).toBe('http://127.0.0.1:8080/ovh/1.0');
    const c = r.config;
    expect(envOf(c.env)).toEqual(v);
    expect(envOf(c.lego)).toEqual(v);
    // external-dns: the Secret, then args and env (YAML list items).
    expect(c.externalDns).toContain(`--from-literal=applicationSecret='${v.OVH_APPLICATION_SECRET}'`);
    expect(c.externalDns).toContain(
      '- --provider=ovh\n- --ovh-endpoint=http://127.0.0.1:8080/ovh/1.0\n- --domain-filter=example.test\n- --domain-filter=example.org',
    );
    const envYaml = parseAllDocuments(c.externalDns.slice(c.externalDns.indexOf('env:')));
    expect(envYaml[0]!.toJS().env.map((e: { name: string }) => e.name)).toEqual(['OVH_APPLICATION_KEY', 'OVH_APPLICATION_SECRET', 'OVH_CONSUMER_KEY']);
    // cert-manager-webhook-ovh: a ClusterIssuer whose webhook solver holds the endpoint and the keys.
    const docs = parseAllDocuments(
      c.certManagerWebhookOvh
        .split('\n')
        .filter((l: string) => !l.startsWith('kubectl') && !l.startsWith('  --from'))
        .join('\n'),
    );
    expect(docs.map((d) => d.errors)).toEqual([[]]);
    const issuer = docs[0]!.toJS();
    expect(issuer.spec.acme.solvers[0]).toEqual({
      dns01: {
        webhook: {
          groupName: 'REPLACE_ME.acme.example.com',
          solverName: 'ovh',
          config: {
            endpoint: v.OVH_ENDPOINT,
            applicationKey: v.OVH_APPLICATION_KEY,
            applicationSecretRef: { name: 'dnsplane-ovh-alice', key: 'applicationSecret' },
            consumerKey: v.OVH_CONSUMER_KEY,
          },
        },
      },
      selector: { dnsZones: ['example.test', 'example.org'] },
    });
    expect(c.caddy).toContain(
      `\t\tendpoint ${v.OVH_ENDPOINT}\n\t\tapplication_key ${v.OVH_APPLICATION_KEY}\n\t\tapplication_secret ${v.OVH_APPLICATION_SECRET}\n\t\tconsumer_key ${v.OVH_CONSUMER_KEY}`,
    );
    expect(c.terraform).toContain(`endpoint           = "${v.OVH_ENDPOINT}"`);
    expect(c.terraform).toContain(`consumer_key       = "${v.OVH_CONSUMER_KEY}"`);
    expect(c.traefik).toContain('--certificatesresolvers.dnsplane.acme.dnschallenge.provider=ovh');
  });

  it('the endpoint from DNSPLANE_LISTEN when it names a host, else a placeholder that says how to set it', async () => {
    expect((await json(['create', 'alice'], { DNSPLANE_LISTEN: '10.0.0.5:8080' })).endpoint).toEqual({
      url: 'http://10.0.0.5:8080/ovh/1.0',
      source: 'DNSPLANE_LISTEN',
    });
    const out = io({ DNSPLANE_LISTEN: '0.0.0.0:8080' });
    expect(await ovhKey(['create', 'alice'], out)).toBe(0);
    expect(out.text()).toContain(
      'The endpoint below is a placeholder (https://REPLACE_ME_DNSPLANE_HOST/ovh/1.0): pass --endpoint URL, or set DNSPLANE_OVH_API_ADVERTISE.',
    );
  });
});

describe('dnsplane tenant ovh-key list, rotate, delete', () => {
  it('list shows no secret; rotate prints new values for the same key; delete removes it', async () => {
    const created = await json(['create', 'alice']);
    const ak = created.key.applicationKey;
    const listed = io();
    expect(await ovhKey(['list', 'alice'], listed)).toBe(0);
    expect(listed.lines[0]).toMatch(/^APPLICATION KEY\s+TENANT\s+CREATED\s+ROTATED\s+LAST USED\s+EXPIRES\s+OLD SECRET UNTIL$/);
    expect(listed.text()).toContain(ak);
    expect(listed.text()).not.toContain(created.values.OVH_APPLICATION_SECRET);
    expect(listed.text()).not.toContain(created.values.OVH_CONSUMER_KEY);

    const rotated = await json(['rotate', ak, '--endpoint', 'https://d.example/ovh/1.0']);
    expect(rotated.key.applicationKey).toBe(ak);
    expect(rotated.key.rotatedAt).not.toBeNull();
    expect(rotated.values.OVH_CONSUMER_KEY).not.toBe(created.values.OVH_CONSUMER_KEY);
    expect(await store.findOvhKeyForAuth(db.pool, consumerKeyHash(created.values.OVH_CONSUMER_KEY))).toBeUndefined();
    expect(await store.findOvhKeyForAuth(db.pool, consumerKeyHash(rotated.values.OVH_CONSUMER_KEY))).toBeDefined();

    const deleted = io();
    expect(await ovhKey(['delete', ak], deleted)).toBe(0);
    expect(deleted.lines).toEqual([`deleted OVH key ${ak} of tenant "alice"; it no longer works`]);
    expect(await store.getOvhKey(db.pool, ak)).toBeUndefined();
  });

  it('refuses bad input naming the field and the rule, writing nothing', async () => {
    const before = await dumpText(db.pool);
    await expect(ovhKey(['create'])).rejects.toThrow('TENANT: exactly one TENANT is required');
    await expect(ovhKey(['create', 'nobody'])).rejects.toThrow('tenant: no tenant named "nobody"');
    await expect(ovhKey(['create', 'alice', '--endpoint', 'https://d.example/ovh/1.0/'])).rejects.toThrow(
      /--endpoint: must be the http\(s\) URL tools reach the served OVH API at, ending in \/ovh\/1.0 without a trailing slash/,
    );
    await expect(ovhKey(['create', 'alice', '--expires-in', 'soon'])).rejects.toThrow('--expires-in: must be a duration');
    await expect(ovhKey(['rotate', 'short'])).rejects.toThrow('applicationKey: must be an application key');
    await expect(ovhKey(['delete', 'AAAAAAAAAAAAAAAA'])).rejects.toThrow('no OVH key AAAAAAAAAAAAAAAA');
    await expect(ovhKey(['create', 'alice'], io({ DNSPLANE_SECRETS_KEY: '' }))).rejects.toThrow(
      'DNSPLANE_SECRETS_KEY is not set: OVH application secrets are kept sealed with it',
    );
    await expect(ovhKey(['frobnicate'])).rejects.toThrow('unknown subcommand "frobnicate"');
    expect(await dumpText(db.pool)).toBe(before);
  });
});

describe("the served OVH API's settings", () => {
  it('DNSPLANE_OVH_API_ADVERTISE: an http(s) URL ending in /ovh/1.0, else refused naming the setting; the rate, burst and draft TTL checked', () => {
    const config = (env: Record<string, string>) => loadConfig({ DNSPLANE_LISTEN: '127.0.0.1:8080', ...env }).ovhApi;
    expect(config({})).toEqual({ advertise: 'http://127.0.0.1:8080/ovh/1.0', rate: 50, burst: 500, draftTtlMs: 3_600_000 });
    expect(config({ DNSPLANE_LISTEN: '0.0.0.0:8080' }).advertise).toBeUndefined();
    expect(config({ DNSPLANE_LISTEN: '[::1]:8080' }).advertise).toBe('http://[::1]:8080/ovh/1.0');
    expect(config({ DNSPLANE_OVH_API_ADVERTISE: 'https://DNSPlane.Example.com:443/ovh/1.0' }).advertise).toBe('https://dnsplane.example.com/ovh/1.0');
    for (const bad of [
      'https://d.example/ovh/1.0/',
      'https://d.example/1.0',
      'ftp://d.example/ovh/1.0',
      'https://u:p@d.example/ovh/1.0',
      'd.example/ovh/1.0',
      'https://d.example/ovh/1.0?x=1',
    ]) {
      expect(() => config({ DNSPLANE_OVH_API_ADVERTISE: bad }), bad).toThrow(
        /^DNSPLANE_OVH_API_ADVERTISE: must be the http\(s\) URL tools reach the served OVH API at, ending in \/ovh\/1\.0 without a trailing slash/,
      );
    }
    expect(config({ DNSPLANE_OVH_API_RATE: '5', DNSPLANE_OVH_API_BURST: '7', DNSPLANE_OVH_API_DRAFT_TTL: '10m' })).toMatchObject({
      rate: 5,
      burst: 7,
      draftTtlMs: 600_000,
    });
    expect(() => config({ DNSPLANE_OVH_API_RATE: '0' })).toThrow('DNSPLANE_OVH_API_RATE: must be a positive number');
    expect(() => config({ DNSPLANE_OVH_API_BURST: '1.5' })).toThrow('DNSPLANE_OVH_API_BURST: must be a positive integer');
    expect(() => config({ DNSPLANE_OVH_API_DRAFT_TTL: 'soon' })).toThrow('DNSPLANE_OVH_API_DRAFT_TTL: must be a duration');
  });
});
