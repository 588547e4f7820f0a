/**
 * `dnsplane health-check set|list` on a real database: a tenant's check of its own targets of a set
 * (the way for sets written through the served OVH API or DNS UPDATE), validated, journalled, the
 * generation moved, no other tenant's rows touched.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/command.js';
import { healthCheckCommand } from '../../src/cli/health-check.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

let db: TestDatabase;
const ZONE = 'example.com';

function io(): CliIo & { lines: string[] } {
  const lines: string[] = [];
  return { lines, out: (l = '') => void lines.push(l), err: (l) => void lines.push(`ERR ${l}`), env: { DATABASE_URL: db.url }, isTty: false };
}

beforeAll(async () => {
  db = await testDatabase();
  await store.ensureZones(db.pool, [ZONE]);
  for (const name of ['c1', 'c2'])
    await store.createTenant(db.pool, { name, tokenSha256: Buffer.alloc(32, name === 'c1' ? 1 : 2), scopes: [], zones: [ZONE], suffixes: [] });
  const [c1, c2] = [await store.getTenantByName(db.pool, 'c1'), await store.getTenantByName(db.pool, 'c2')];
  await store.setOwner(db.pool, { zone: ZONE, dnsName: `www.${ZONE}`, recordType: 'A', tenantId: c1!.id, target: '192.0.2.1', shared: true });
  await store.setOwner(db.pool, { zone: ZONE, dnsName: `www.${ZONE}`, recordType: 'A', tenantId: c2!.id, target: '192.0.2.2', shared: true });
});

afterAll(async () => {
  await db?.drop();
});

const checks = async () => (await store.listOwnership(db.pool, ZONE)).map((r) => `${r.tenantName} ${r.target} ${r.healthCheck ?? 'none'}`);

describe('dnsplane health-check', () => {
  it("set: the tenant's rows of the set only, the generation moved, an admin action journalled", async () => {
    const before = (await store.getZone(db.pool, ZONE))!.generation;
    const out = io();
    expect(await healthCheckCommand.run(['set', ZONE, 'www', 'A', '--tenant', 'c1', 'tcp://:443'], out)).toBe(0);
    expect(out.lines).toEqual([`www.${ZONE} A: tenant c1's health check set to tcp://:443`]);
    expect(await checks()).toEqual(['c1 192.0.2.1 tcp://:443', 'c2 192.0.2.2 none']);
    expect((await store.getZone(db.pool, ZONE))!.generation).toBe(before + 1n);
    const { rows } = await db.pool.query<{ summary: string }>(`SELECT intent->>'summary' AS summary FROM journal ORDER BY id DESC LIMIT 1`);
    expect(rows[0]!.summary).toContain("tenant c1's health check set to tcp://:443");
  });

  it('list shows each check (unchecked until the checker ran)', async () => {
    const out = io();
    await healthCheckCommand.run(['list', ZONE], out);
    expect(out.lines.join('\n')).toMatch(/www\.example\.com\s+A\s+c1\s+192\.0\.2\.1\s+tcp:\/\/:443\s+unchecked/);
  });

  it('off removes it', async () => {
    await healthCheckCommand.run(['set', ZONE, 'www', 'A', '--tenant', 'c1', 'off'], io());
    expect(await checks()).toEqual(['c1 192.0.2.1 none', 'c2 192.0.2.2 none']);
  });

  it.each([
    [['set', ZONE, 'www', 'A', '--tenant', 'c1', 'http://evil.example:80/'], /^URL: .*a host was named/],
    [['set', ZONE, 'www', 'TXT', '--tenant', 'c1', 'tcp://:443'], /^URL: a TXT record set cannot be checked/],
    [['set', ZONE, 'api', 'A', '--tenant', 'c1', 'tcp://:443'], /^NAME: tenant "c1" owns no target of api\.example\.com A/],
    [['set', ZONE, 'www', 'A', 'tcp://:443'], /^--tenant: is required/],
  ])('refuses %j naming the field, writing nothing', async (args, rule) => {
    await expect(healthCheckCommand.run(args, io())).rejects.toThrow(rule);
    expect(await checks()).toEqual(['c1 192.0.2.1 none', 'c2 192.0.2.2 none']);
  });
});
