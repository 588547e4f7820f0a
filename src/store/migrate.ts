/**
 * Plain-SQL migrations: `migrations/NNNN_name.sql`, applied in order, each once, each in its own
 * transaction, recorded in schema_migrations. Safe when several processes start at once: the
 * whole run holds a session advisory lock on one checked-out client.
 *
 * A migration cannot contain statements that refuse to run in a transaction block
 * (CREATE INDEX CONCURRENTLY, ALTER TYPE … ADD VALUE before PG 12, VACUUM).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { messageOf } from '../error-message.js';
import { withClient } from './internal.js';

/** migrations/ of this checkout, resolved from this file (src/store/migrate.ts -> ../../migrations). */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

/** Session advisory lock key of migrate(): the bytes of "dnsplane" as a bigint (single-key space). */
export const MIGRATION_LOCK_KEY = 0x646e73706c616e65n;

export interface Migration {
  /** The number, e.g. "0001". */
  version: string;
  /** e.g. "init". */
  name: string;
  file: string;
  sql: string;
  /** sha-256 of the file, hex; recorded for diagnostics. */
  checksum: string;
}

const FILE_FORM = /^(\d{4})_([a-z0-9_]+)\.sql$/;

export async function loadMigrations(dir: string = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await fs.readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const seen = new Map<string, string>();
  const out: Migration[] = [];
  for (const file of files) {
    const m = FILE_FORM.exec(file);
    if (!m?.[1] || !m[2]) throw new Error(`migrations: ${file} is not named NNNN_name.sql (lowercase, digits, _)`);
    const version = m[1];
    const clash = seen.get(version);
    if (clash) throw new Error(`migrations: ${clash} and ${file} share the number ${version}`);
    seen.set(version, file);
    const sql = await fs.readFile(path.join(dir, file), 'utf8');
    out.push({ version, name: m[2], file, sql, checksum: createHash('sha256').update(sql).digest('hex') });
  }
  return out;
}

/**
 * Applies the missing migrations. Returns the ones applied by this call (e.g. ["0001_init"]);
 * another process that migrated first makes this call return [].
 */
export async function migrate(pool: pg.Pool, opts: { dir?: string } = {}): Promise<{ applied: string[] }> {
  const migrations = await loadMigrations(opts.dir);
  return withClient(pool, async (client, broken) => {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY.toString()]);
    try {
      await client.query(`
        CREATE TABLE IF NOT EXISTS schema_migrations (
          version    text        PRIMARY KEY,
          name       text        NOT NULL,
          checksum   text        NOT NULL,
          applied_at timestamptz NOT NULL DEFAULT now()
        )`);
      const { rows } = await client.query<{ version: string }>('SELECT version FROM schema_migrations');
      const done = new Set(rows.map((r) => r.version));
      const applied: string[] = [];
      for (const m of migrations) {
        if (done.has(m.version)) continue;
        try {
          await client.query('BEGIN');
          await client.query(m.sql);
          await client.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [
            m.version,
            m.name,
            m.checksum,
          ]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(broken);
          throw new Error(`migration ${m.file} failed: ${messageOf(err)}`, { cause: err });
        }
        applied.push(`${m.version}_${m.name}`);
      }
      return { applied };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY.toString()]).catch(broken); // the session lock dies with the connection
    }
  });
}
