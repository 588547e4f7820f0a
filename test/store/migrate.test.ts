import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadMigrations, migrate } from '../../src/store/migrate.js';
import { testDatabase, type TestDatabase } from '../helpers/db.js';

const TABLES = [
  'health_leases',
  'journal',
  'journal_horizon',
  'ovh_accounts',
  'ovh_budget',
  'ovh_budget_leases',
  'ovh_budget_replicas',
  'ovh_drafts',
  'ovh_keys',
  'ovh_record_ids',
  'ownership',
  'plans',
  'probe_sets',
  'probes',
  'protected_names',
  'records',
  'schema_migrations',
  'schema_release',
  'target_health',
  'target_withdrawals',
  'tenant_write_quota',
  'tenants',
  'trusted_issuers',
  'trusted_subjects',
  'tsig_keys',
  'zones',
];

function databaseUrl(base: string, database: string): string {
  const u = new URL(base);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Runs fn with a pool on a new empty database (no migration applied), dropped afterwards. */
async function withEmptyDatabase(tag: string, fn: (pool: pg.Pool) => Promise<void>): Promise<void> {
  const adminUrl = inject('dnsplaneAdminUrl');
  const name = `dnsplane_t_${Date.now().toString(36)}_${tag}${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)}`);
  const pool = new pg.Pool({ connectionString: databaseUrl(adminUrl, name), max: 2 });
  pool.on('error', () => undefined); // connections still closing when the database is dropped
  try {
    await fn(pool);
  } finally {
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(name)} WITH (FORCE)`);
    await admin.end();
  }
}

describe('migrate', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await testDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('the template gives a fresh database every table', async () => {
    const { rows } = await db.pool.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`,
    );
    expect(rows.map((r) => r.table_name)).toEqual(TABLES);
    const { rows: versions } = await db.pool.query<{ version: string; name: string }>('SELECT version, name FROM schema_migrations ORDER BY version');
    const files = await loadMigrations();
    expect(versions).toEqual(files.map((m) => ({ version: m.version, name: m.name })));
  });

  it('a second run applies nothing', async () => {
    expect(await migrate(db.pool)).toEqual({ applied: [] });
  });

  it('the migration files are numbered and named', async () => {
    const files = await loadMigrations();
    expect(files[0]?.file).toBe('0001_init.sql');
    expect(files.map((m) => m.version)).toEqual([...files.map((m) => m.version)].sort());
  });

  it('5 concurrent migrate() on a brand-new empty database apply each migration exactly once', async () => {
    const adminUrl = inject('dnsplaneAdminUrl');
    const name = `dnsplane_t_${Date.now().toString(36)}_mig${process.pid}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)}`);
    // five "processes": a pool each
    const pools = Array.from({ length: 5 }, () => {
      const p = new pg.Pool({ connectionString: databaseUrl(adminUrl, name), max: 2 });
      p.on('error', () => undefined); // connections still closing when the database is dropped
      return p;
    });
    try {
      const results = await Promise.all(pools.map((p) => migrate(p)));
      const all = results.flatMap((r) => r.applied);
      const files = await loadMigrations();
      const expected = files.map((m) => `${m.version}_${m.name}`);
      expect([...all].sort()).toEqual(expected);
      expect(results.filter((r) => r.applied.length > 0)).toHaveLength(1);
      const { rows } = await pools[0]!.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version');
      expect(rows.map((r) => r.version)).toEqual(files.map((m) => m.version));
      // the session lock is released
      const { rows: locks } = await pools[0]!.query(
        `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = $1)`,
        [name],
      );
      expect(locks).toHaveLength(0);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
      await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(name)} WITH (FORCE)`);
      await admin.end();
    }
  });

  it('a failing migration rolls back and names its file', async () => {
    const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const path = await import('node:path');
    const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-mig-'));
    try {
      writeFileSync(path.join(dir, '0001_init.sql'), 'CREATE TABLE t_ok (id int);');
      writeFileSync(path.join(dir, '0002_broken.sql'), 'CREATE TABLE t_half (id int); SELECT no_such_function();');
      await withEmptyDatabase('bad', async (pool) => {
        await expect(migrate(pool, { dir })).rejects.toThrow(/0002_broken\.sql failed/);
        const { rows } = await pool.query<{ version: string }>('SELECT version FROM schema_migrations');
        expect(rows.map((r) => r.version)).toEqual(['0001']);
        const { rows: t } = await pool.query(`SELECT to_regclass('t_half') AS t`);
        expect(t[0]).toEqual({ t: null });
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('0008 counts what the plans already stored hold, and keeps their request and body as they were', async () => {
    const { mkdtempSync, copyFileSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const path = await import('node:path');
    const { MIGRATIONS_DIR } = await import('../../src/store/migrate.js');
    const before = mkdtempSync(path.join(tmpdir(), 'dnsplane-mig-'));
    for (const m of await loadMigrations()) if (m.version < '0008') copyFileSync(path.join(MIGRATIONS_DIR, m.file), path.join(before, m.file));
    try {
      await withEmptyDatabase('m8', async (pool) => {
        await migrate(pool, { dir: before });
        const { rows: t } = await pool.query<{ id: string }>(`INSERT INTO tenants (name, token_sha256) VALUES ('alice', $1) RETURNING id::text`, [
          Buffer.alloc(32, 1),
        ]);
        const body = [
          { zone: 'a.test', changes: [{}, {}, {}], conflicts: [{}], operations: [{}, {}] },
          { zone: 'b.test', changes: [{}], conflicts: [], operations: [] },
          { changes: 'not a list' },
        ];
        const insert = (id: string, b: unknown) =>
          pool.query(
            `INSERT INTO plans (id, tenant_id, requested_by, policy, request, body, digest, base_generations, expires_at)
             VALUES ($1, $2, $2, 'sync', $3::jsonb, $4::jsonb, 'd', '{}', now() + interval '1 hour')`,
            [id, t[0]!.id, JSON.stringify({ kind: 'desired', endpoints: [{ dnsName: 'x.a.test' }] }), JSON.stringify(b)],
          );
        await insert('pl_old', body);
        await insert('pl_odd', { not: 'an array' });
        expect((await migrate(pool)).applied).toContain('0008_plan_summaries');
        const { rows } = await pool.query(
          `SELECT id, zones, change_count, conflict_count, operation_count, body, request, pg_typeof(body)::text AS type FROM plans ORDER BY id`,
        );
        expect(rows).toEqual([
          {
            id: 'pl_odd',
            zones: [],
            change_count: 0,
            conflict_count: 0,
            operation_count: 0,
            body: { not: 'an array' },
            request: { kind: 'desired', endpoints: [{ dnsName: 'x.a.test' }] },
            type: 'json',
          },
          {
            id: 'pl_old',
            zones: ['a.test', 'b.test', ''],
            change_count: 4,
            conflict_count: 1,
            operation_count: 3,
            body,
            request: { kind: 'desired', endpoints: [{ dnsName: 'x.a.test' }] },
            type: 'json',
          },
        ]);
      });
    } finally {
      rmSync(before, { recursive: true, force: true });
    }
  });

  it('rejects badly named migration files', async () => {
    const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const path = await import('node:path');
    const dir = mkdtempSync(path.join(tmpdir(), 'dnsplane-mig-'));
    try {
      writeFileSync(path.join(dir, '1_init.sql'), 'SELECT 1;');
      await expect(loadMigrations(dir)).rejects.toThrow(/NNNN_name\.sql/);
      rmSync(path.join(dir, '1_init.sql'));
      writeFileSync(path.join(dir, '0001_a.sql'), 'SELECT 1;');
      writeFileSync(path.join(dir, '0001_b.sql'), 'SELECT 1;');
      await expect(loadMigrations(dir)).rejects.toThrow(/share the number 0001/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
