/**
 * `dnsplane tenant create|list|rotate|disable` on a real database: the token is the last line of create
 * and rotate, the database keeps only its sha-256, rotate and disable take effect for authentication.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/command.js';
import { tenantCommand } from '../../src/cli/tenant.js';
import { authenticate } from '../../src/core/tenants/tenants.js';
import { UnauthenticatedError } from '../../src/core/errors.js';
import { InvalidInputError } from '../../src/dns/errors.js';
import * as store from '../../src/store/index.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';
import { dumpText } from '../helpers/snapshot.js';
import { simulatorEnv } from '../helpers/sim-server.js';
import { OvhSimulator } from '../../src/ovhsim/index.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

let db: TestDatabase;

function io(): CliIo & { lines: string[] } {
  const lines: string[] = [];
  return { lines, out: (l = '') => void lines.push(l), err: (l) => void lines.push(`ERR ${l}`), env: { DATABASE_URL: db.url }, isTty: false };
}

beforeAll(async () => {
  db = await testDatabase();
});

afterAll(async () => {
  await db?.drop();
});

describe('dnsplane tenant', () => {
  let token = '';

  it('create refuses a zone dnsplane does not manage, naming the field and the managed zones, and writes nothing', async () => {
    // Before any `dnsplane serve` registered its zones, no zone is managed yet.
    await expect(tenantCommand.run(['create', 'early', '--zone', 'example.com'], io())).rejects.toThrow(
      'zones[0]: "example.com" is not a zone dnsplane manages (managed: none yet); see DNSPLANE_ZONES',
    );
    await store.ensureZones(db.pool, ['example.com', 'example.org']); // what serve does when it starts
    await expect(tenantCommand.run(['create', 'stray', '--zone', 'example.com', '--zone', 'Elsewhere.NET.'], io())).rejects.toThrow(
      'zones[1]: "elsewhere.net" is not a zone dnsplane manages (managed: example.com, example.org); see DNSPLANE_ZONES',
    );
    expect((await db.pool.query('SELECT name FROM tenants')).rows).toEqual([]);
  });

  it('create registers a zone not managed yet when DNSPLANE_ZONES names it, or the OVH account holds it; nothing when refused', async () => {
    const zonesOf = async () =>
      (await db.pool.query<{ name: string; state: string }>('SELECT name, state FROM zones ORDER BY name')).rows.map((r) => `${r.name} ${r.state}`);
    const before = await zonesOf();
    const named = io();
    named.env['DNSPLANE_ZONES'] = 'example.com,fresh.example';
    // A refused tenant registers nothing, even a zone that exists.
    await expect(tenantCommand.run(['create', 'Bad_Name', '--zone', 'fresh.example'], named)).rejects.toThrow(/^name: must be 1-63 characters/);
    expect(await zonesOf()).toEqual(before);
    await expect(tenantCommand.run(['create', 'other', '--zone', 'unnamed.example'], named)).rejects.toThrow(
      'zones[0]: "unnamed.example" is not a zone dnsplane manages (managed: example.com, example.org); DNSPLANE_ZONES does not name it',
    );
    expect(await tenantCommand.run(['create', 'fresh', '--zone', 'fresh.example'], named)).toBe(0);
    expect(named.lines[0]).toBe('registered zone fresh.example (DNSPLANE_ZONES names it): the server reads it from OVH at its first use');
    expect(await zonesOf()).toEqual([...before, 'fresh.example unsynced'].sort());

    // With the OVH credentials and no DNSPLANE_ZONES: one GET /domain/zone says which zones exist.
    const sim = await OvhSimulator.start({ zones: { 'ovh-only.example': [] } });
    const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-tenant-'));
    try {
      const caFile = path.join(dir, 'ca.pem');
      writeFileSync(caFile, sim.caPem);
      const remote = io();
      Object.assign(remote.env, simulatorEnv(sim, caFile));
      await expect(tenantCommand.run(['create', 'nowhere', '--zone', 'absent.example'], remote)).rejects.toThrow(
        /"absent\.example" is not a zone dnsplane manages \(managed: .*\); the OVH account does not hold it$/,
      );
      sim.clearCalls();
      expect(await tenantCommand.run(['create', 'remote', '--zone', 'ovh-only.example'], remote)).toBe(0);
      expect(remote.lines[0]).toBe('registered zone ovh-only.example (the OVH account holds it): the server reads it from OVH at its first use');
      expect(
        sim
          .calls()
          .filter((c) => c.path !== '/auth/time')
          .map((c) => `${c.method} ${c.path}`),
      ).toEqual(['GET /domain/zone']);
      expect(await zonesOf()).toContain('ovh-only.example unsynced');
    } finally {
      await sim.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    expect((await db.pool.query('SELECT name FROM tenants ORDER BY name')).rows.map((r) => r.name)).toEqual(['fresh', 'remote']);
    await db.pool.query(`DELETE FROM tenants WHERE name IN ('fresh', 'remote')`); // the listing below counts the others
  });

  it('create prints the token once, as the last line; the database holds its sha-256 only', async () => {
    const out = io();
    expect(await tenantCommand.run(['create', 'cluster1', '--zone', 'example.com', '--suffix', '*.cluster1.example.com'], out)).toBe(0);
    expect(out.lines.slice(0, 2)).toEqual([
      'created tenant "cluster1", zones: example.com, suffixes: cluster1.example.com',
      'its bearer token follows; it is shown only this once:',
    ]);
    token = out.lines.at(-1)!;
    expect(token).toMatch(/^dnsp_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(token.slice(5), 'base64url')).toHaveLength(32);
    const { rows } = await db.pool.query<{ token_sha256: Buffer }>(`SELECT token_sha256 FROM tenants WHERE name = 'cluster1'`);
    expect(rows[0]!.token_sha256.equals(createHash('sha256').update(token).digest())).toBe(true);
    expect(await dumpText(db.pool)).not.toContain(token.slice(5));
    expect((await authenticate(db.pool, token)).name).toBe('cluster1');

    const admin = io();
    await tenantCommand.run(['create', 'ops', '--admin'], admin);
    expect(admin.lines[0]).toBe('created tenant "ops" (scopes: admin), zones: (all)');
  });

  it('list shows every tenant, as a table or JSON, never a token', async () => {
    const out = io();
    expect(await tenantCommand.run(['list'], out)).toBe(0);
    expect(out.lines[0]).toMatch(/^NAME\s+SCOPES\s+ZONES\s+SUFFIXES\s+DISABLED\s+TOKEN SET\s+OLD TOKEN UNTIL\s+WITHDRAW AFTER\s+LAST SEEN\s+FROM$/);
    expect(out.lines.slice(1).map((l) => l.split(/\s+/).slice(0, 5).join(' '))).toEqual([
      'cluster1 - example.com cluster1.example.com no',
      'ops admin (all) - no',
    ]);
    const json = io();
    await tenantCommand.run(['list', '--output', 'json'], json);
    const parsed = JSON.parse(json.lines.join('\n')) as Array<{ name: string; disabled: boolean }>;
    expect(parsed.map((t) => [t.name, t.disabled])).toEqual([
      ['cluster1', false],
      ['ops', false],
    ]);
    expect(json.lines.join('\n')).not.toMatch(/dnsp_|sha256/i);
  });

  it('rotate prints a new token as the last line; the old one stops working', async () => {
    const out = io();
    expect(await tenantCommand.run(['rotate', 'cluster1'], out)).toBe(0);
    const fresh = out.lines.at(-1)!;
    expect(fresh).not.toBe(token);
    await expect(authenticate(db.pool, token)).rejects.toBeInstanceOf(UnauthenticatedError);
    expect((await authenticate(db.pool, fresh)).name).toBe('cluster1');
    token = fresh;
  });

  it('disable stops the token; --enable brings it back', async () => {
    const out = io();
    expect(await tenantCommand.run(['disable', 'cluster1'], out)).toBe(0);
    expect(out.lines).toEqual(['disabled tenant "cluster1", zones: example.com, suffixes: cluster1.example.com; its token no longer works, its records stay']);
    await expect(authenticate(db.pool, token)).rejects.toThrow('invalid or disabled token');
    await tenantCommand.run(['disable', 'cluster1', '--enable'], io());
    expect((await authenticate(db.pool, token)).name).toBe('cluster1');
  });

  it('refuses bad input naming the field and the rule', async () => {
    await expect(tenantCommand.run(['create', 'x', '--zone', 'example.com', '--suffix', 'other.org'], io())).rejects.toThrow(
      'suffixes[0]: "other.org" is in none of the tenant\'s zones (example.com)',
    );
    await expect(tenantCommand.run(['create', 'y'], io())).rejects.toThrow(InvalidInputError);
    await expect(tenantCommand.run(['rotate', 'nobody'], io())).rejects.toThrow('tenant "nobody" does not exist');
    await expect(tenantCommand.run(['remove', 'x'], io())).rejects.toThrow('unknown subcommand "remove"');
  });
});
