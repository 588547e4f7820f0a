/**
 * Plain-SQL migrations: `migrations/NNNN_name.sql`, applied in order, each once, each in its own
 * transaction, recorded in schema_migrations. Safe when several processes start at once: the
 * whole run holds a session advisory lock on one checked-out client.
 *
 * A migration cannot contain statements that refuse to run in a transaction block
 * (CREATE INDEX CONCURRENTLY, ALTER TYPE … ADD VALUE before PG 12, VACUUM).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { messageOf } from '../lib/error-message.js';
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

/**
 * The oldest schema a replica must know for this code's database to be safe to run with: a replica
 * whose newest migration is older than this refuses to start on a database this code migrated.
 * Raise it with a migration that older code would misuse (0015: the served OVH API's drafts are
 * keyed by served ids, which code before it would read as OVH ids).
 */
export const OLDEST_COMPATIBLE_SCHEMA = '0015';

/** The release of this code, as package.json names it (recorded by the migrator, for people). */
export const RELEASE: string = (() => {
  try {
    const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
})();

/** What the database records of the code that migrated it (schema_release). */
export interface SchemaRelease {
  /** The newest migration applied. */
  schema: string;
  /** The oldest schema a replica must know to run on this database (see OLDEST_COMPATIBLE_SCHEMA). */
  oldestCompatible: string;
  /** The release that last migrated it, and when. */
  migratedBy: string;
  migratedAt: Date;
}

/**
 * How this code stands to the database: `current` (it knows every migration applied), `older` (the
 * database was migrated by newer code, which allows this one: it may serve, and says so), or
 * `refused` (newer code marked this code too old for the schema).
 */
export interface SchemaCheck {
  state: 'current' | 'older' | 'refused';
  /** The newest migration this code knows. */
  known: string;
  release: SchemaRelease | undefined;
  /** For people: what is running on what. */
  message: string;
}

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
          await client.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [m.version, m.name, m.checksum]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(broken);
          throw new Error(`migration ${m.file} failed: ${messageOf(err)}`, { cause: err });
        }
        applied.push(`${m.version}_${m.name}`);
      }
      await recordRelease(client, migrations);
      return { applied };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY.toString()]).catch(broken); // the session lock dies with the connection
    }
  });
}

const RELEASE_TABLE = `
  CREATE TABLE IF NOT EXISTS schema_release (
    id                boolean     PRIMARY KEY DEFAULT true CHECK (id),
    schema            text        NOT NULL,
    oldest_compatible text        NOT NULL,
    migrated_by       text        NOT NULL,
    migrated_at       timestamptz NOT NULL DEFAULT now()
  )`;

/**
 * Records, under the migration lock, the newest schema applied, the oldest schema a replica must know
 * (never lowered: an older replica starting later does not undo what newer code required), and the
 * release that migrated it — when this code knows the newest migration applied (an older replica
 * records nothing).
 */
async function recordRelease(client: pg.PoolClient, migrations: readonly Migration[]): Promise<void> {
  await client.query(RELEASE_TABLE);
  const known = migrations.at(-1)?.version ?? '0000';
  const { rows } = await client.query<{ newest: string | null }>('SELECT max(version) AS newest FROM schema_migrations');
  const newest = rows[0]?.newest ?? '0000';
  if (newest > known) return;
  await client.query(
    `INSERT INTO schema_release (schema, oldest_compatible, migrated_by) VALUES ($1, $2, $3)
     ON CONFLICT (id) DO UPDATE SET schema = EXCLUDED.schema,
       oldest_compatible = GREATEST(schema_release.oldest_compatible, EXCLUDED.oldest_compatible),
       migrated_by = CASE WHEN schema_release.schema = EXCLUDED.schema AND schema_release.oldest_compatible >= EXCLUDED.oldest_compatible THEN schema_release.migrated_by ELSE EXCLUDED.migrated_by END,
       migrated_at = CASE WHEN schema_release.schema = EXCLUDED.schema AND schema_release.oldest_compatible >= EXCLUDED.oldest_compatible THEN schema_release.migrated_at ELSE now() END`,
    [newest, OLDEST_COMPATIBLE_SCHEMA, RELEASE],
  );
}

/** How this code (its migrations in `dir`) stands to the database's schema. */
export async function checkSchema(pool: pg.Pool, opts: { dir?: string } = {}): Promise<SchemaCheck> {
  const migrations = await loadMigrations(opts.dir);
  const known = migrations.at(-1)?.version ?? '0000';
  const { rows: applied } = await pool.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version');
  const unknown = applied.map((r) => r.version).filter((v) => !migrations.some((m) => m.version === v));
  const { rows } = await pool
    .query<{ schema: string; oldest_compatible: string; migrated_by: string; migrated_at: Date }>(
      `SELECT schema, oldest_compatible, migrated_by, migrated_at FROM schema_release`,
    )
    .catch(() => ({ rows: [] as Array<{ schema: string; oldest_compatible: string; migrated_by: string; migrated_at: Date }> }));
  const r = rows[0];
  const release = r ? { schema: r.schema, oldestCompatible: r.oldest_compatible, migratedBy: r.migrated_by, migratedAt: r.migrated_at } : undefined;
  const newest = applied.at(-1)?.version ?? '0000';
  if (unknown.length === 0) return { state: 'current', known, release, message: `schema ${newest}, known to this release (${RELEASE})` };
  const by = release ? `release ${release.migratedBy} migrated it to schema ${release.schema}` : `newer code migrated it to schema ${newest}`;
  if (release && known < release.oldestCompatible) {
    return {
      state: 'refused',
      known,
      release,
      message: `this replica (release ${RELEASE}, schema up to ${known}) is too old for the database: ${by} and requires replicas that know schema ${release.oldestCompatible} or newer (migrations ${unknown.join(', ')} are unknown here). Run the newer image`,
    };
  }
  return {
    state: 'older',
    known,
    release,
    message: `this replica (release ${RELEASE}, schema up to ${known}) is older than the database: ${by} (migrations ${unknown.join(', ')} are unknown here); it may serve until it is upgraded`,
  };
}
