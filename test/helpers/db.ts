/**
 * A database of its own for one test file, created from the migrated template of the run:
 *
 *   let db: TestDatabase;
 *   beforeAll(async () => { db = await testDatabase(); });
 *   afterAll(async () => { await db.drop(); });
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

export interface TestDatabase {
  /** Connection URL of this database (may carry a password: never log it). */
  url: string;
  pool: pg.Pool;
  name: string;
  /** Ends the pool and drops the database (forcing out leftover connections). Idempotent. */
  drop(): Promise<void>;
}

function databaseUrl(base: string, database: string): string {
  const u = new URL(base);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.toString();
}

const SOURCE_IN_USE = '55006'; // object_in_use: "source database … is being accessed by other users"

export async function testDatabase(opts: { max?: number } = {}): Promise<TestDatabase> {
  const adminUrl = inject('dnsplaneAdminUrl');
  const template = inject('dnsplaneTemplate');
  if (!adminUrl || !template) {
    throw new Error('testDatabase(): no template database; is test/helpers/global-setup.ts the globalSetup of vitest.config.ts?');
  }
  const name = `dnsplane_t_${Date.now().toString(36)}_${randomBytes(5).toString('hex')}`;

  await withAdmin(adminUrl, async (admin) => {
    const sql = `CREATE DATABASE ${admin.escapeIdentifier(name)} TEMPLATE ${admin.escapeIdentifier(template)}`;
    for (let attempt = 1; ; attempt++) {
      try {
        await admin.query(sql);
        return;
      } catch (err) {
        const code = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
        if (code !== SOURCE_IN_USE || attempt >= 50) throw err;
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 150));
      }
    }
  });

  const url = databaseUrl(adminUrl, name);
  const pool = new pg.Pool({ connectionString: url, max: opts.max ?? 10 });
  pool.on('error', () => undefined); // idle connections killed by drop(): not a test failure
  let dropping: Promise<void> | undefined;
  return {
    url,
    pool,
    name,
    drop: () =>
      (dropping ??= (async () => {
        await pool.end().catch(() => undefined);
        await withAdmin(adminUrl, (admin) => admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(name)} WITH (FORCE)`).then(() => undefined));
      })()),
  };
}

async function withAdmin<T>(adminUrl: string, fn: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: adminUrl });
  admin.on('error', () => undefined);
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.end().catch(() => undefined);
  }
}
