/**
 * `dnsplane tenant trust|untrust|show` on a real database: what is stored and printed, the errors
 * naming the flag and the rule with nothing written, the journal's rows, and a trust that a token then
 * meets (core's verification on the same database, the issuer over HTTPS on loopback).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/command.js';
import { tenantCommand } from '../../src/cli/tenant.js';
import type { CoreContext } from '../../src/core/context.js';
import { authenticateCaller } from '../../src/core/credentials/workload-tokens.js';
import { createTenant } from '../../src/core/tenants/tenants.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { startIssuer, type TestIssuer } from '../helpers/oidc-issuer.js';

const SA = 'system:serviceaccount:external-dns:external-dns';
let db: TestDatabase;
let issuer: TestIssuer;
let dir: string;

function io(): CliIo & { lines: string[] } {
  const lines: string[] = [];
  return { lines, out: (l = '') => void lines.push(l), err: (l) => void lines.push(`ERR ${l}`), env: { DATABASE_URL: db.url }, isTty: false };
}
async function run(...args: string[]): Promise<string[]> {
  const out = io();
  expect(await tenantCommand.run(args, out)).toBe(0);
  return out.lines;
}
const count = async (table: string) => Number((await db.pool.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n);

beforeAll(async () => {
  db = await testDatabase();
  issuer = await startIssuer();
  dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-trust-cli-'));
  await store.ensureZones(db.pool, ['example.com']);
  await createTenant(db.pool, { name: 'c1', zones: ['example.com'] });
  await createTenant(db.pool, { name: 'c2', zones: ['example.com'] });
});
afterAll(async () => {
  await issuer?.close();
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('dnsplane tenant trust / untrust / show', () => {
  it("trust with the issuer's CA: stored, journaled, printed; show lists it; a token of it then acts as the tenant", async () => {
    const ca = path.join(dir, 'ca.pem');
    writeFileSync(ca, issuer.caPem);
    expect(await run('trust', 'c1', '--issuer', issuer.url, '--subject', SA, '--ca-file', ca)).toEqual([
      `tenant "c1" trusts subject ${SA} of issuer ${issuer.url}, audience dnsplane; keys: discovery`,
    ]);
    const shown = await run('show', 'c1');
    expect(shown[0]).toBe('tenant "c1"');
    expect(shown).toContain('  trusted subjects (1):');
    expect(shown.at(-1)).toMatch(new RegExp(`^    ${issuer.url.replace(/\./g, '\\.')}\\s+${SA}\\s+dnsplane\\s+discovery\\s+\\S+\\s+-$`));
    const journal = await store.listJournal(db.pool, { limit: 5 });
    expect(journal.map((r) => (r.intent as { summary?: string }).summary)).toContain(
      `tenant c1 trusts subject ${SA} of issuer ${issuer.url} (audience dnsplane; keys: discovery) from the command line`,
    );
    const ctx = { pool: db.pool, log: pino({ level: 'silent' }) } as unknown as CoreContext;
    expect((await authenticateCaller(ctx, await issuer.mint())).name).toBe('c1');
  });

  it('refuses, naming the flag and the rule, and writes nothing', async () => {
    const before = [await count('trusted_subjects'), await count('trusted_issuers')];
    const refused = (args: string[], message: RegExp) => expect(tenantCommand.run(args, io())).rejects.toThrow(message);
    await refused(
      ['trust', 'c2', '--issuer', issuer.url, '--subject', SA],
      /^--subject: "system:serviceaccount:external-dns:external-dns" of issuer .* acts as exactly one tenant, and tenant "c1" trusts it$/,
    );
    await refused(['trust', 'c2', '--issuer', 'http://127.0.0.1/x', '--subject', 'a'], /^--issuer: must be an https URL/);
    await refused(['trust', 'c2', '--subject', 'a'], /^--issuer: is required/);
    await refused(['trust', 'c2', '--issuer', issuer.url], /^--subject: is required/);
    await refused(
      ['trust', 'c2', '--issuer', issuer.url, '--subject', 'a', '--jwks-url', 'https://x.example/jwks', '--jwks-file', 'f'],
      /^--jwks-file: give --jwks-url or --jwks-file, not both/,
    );
    await refused(['trust', 'c2', '--issuer', issuer.url, '--subject', 'a', '--jwks-file', path.join(dir, 'missing.json')], /^--jwks-file: cannot read/);
    const bad = path.join(dir, 'bad.jwks');
    writeFileSync(bad, '{"keys":[{"kty":"RSA","n":"x","e":"AQAB","d":"private"}]}');
    await refused(['trust', 'c2', '--issuer', issuer.url, '--subject', 'a', '--jwks-file', bad], /^--jwks-file: no public signing key .* never trusted/);
    await refused(['trust', 'nobody', '--issuer', issuer.url, '--subject', 'a'], /tenant "nobody" does not exist/);
    await refused(['untrust', 'c2', '--issuer', issuer.url, '--subject', SA], /tenant "c2" does not trust subject/);
    expect([await count('trusted_subjects'), await count('trusted_issuers')]).toEqual(before);
  });

  it("a JWKS file sets the issuer's keys (for every subject of it); untrust of the last subject removes the issuer", async () => {
    const file = path.join(dir, 'cluster.jwks');
    writeFileSync(file, JSON.stringify(issuer.jwks()));
    const lines = await run(
      'trust',
      'c2',
      '--issuer',
      issuer.url,
      '--subject',
      'system:serviceaccount:team2:external-dns',
      '--audience',
      'dnsplane-c2',
      '--jwks-file',
      file,
    );
    expect(lines).toEqual([
      `tenant "c2" trusts subject system:serviceaccount:team2:external-dns of issuer ${issuer.url}, audience dnsplane-c2; keys: jwks-file (1 key(s))`,
      "the issuer's keys now come from there for the 1 other subject(s) trusted of it too",
    ]);
    expect((await run('show', 'c1')).at(-1)).toContain('jwks-file (1 key(s))');
    const json = JSON.parse((await run('show', 'c2', '--output', 'json')).join('\n')) as { trustedSubjects: Array<{ audience: string }> };
    expect(json.trustedSubjects.map((t) => t.audience)).toEqual(['dnsplane-c2']);
    expect(await run('untrust', 'c2', '--issuer', issuer.url, '--subject', 'system:serviceaccount:team2:external-dns')).toEqual([
      `tenant "c2" no longer trusts subject system:serviceaccount:team2:external-dns of issuer ${issuer.url}: its tokens stop working at once`,
    ]);
    await run('untrust', 'c1', '--issuer', issuer.url, '--subject', SA);
    expect([await count('trusted_subjects'), await count('trusted_issuers')]).toEqual([0, 0]);
    expect((await run('show', 'c1')).at(-1)).toBe('  trusted subjects: none (only its dnsplane token authenticates it)');
  });

  it('--help says what a subject and an issuer are and where the keys come from', async () => {
    const help = tenantCommand.helpFor!(['trust']);
    expect(help).toMatch(/system:serviceaccount:NAMESPACE:SERVICEACCOUNT/);
    expect(help).toMatch(/kubectl get --raw \/openid\/v1\/jwks/);
    expect(help).toMatch(/\[dnsplane\]/);
  });
});
