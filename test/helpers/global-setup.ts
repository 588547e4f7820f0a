/**
 * vitest globalSetup: one Postgres for the whole run and a migrated template database.
 *
 * - DATABASE_URL set: that server; the URL is the admin connection (needs CREATEDB).
 * - Otherwise: an embedded Postgres in a fresh temp directory (fsync off), removed at teardown.
 *
 * Test files get a database of their own from the template: see test/helpers/db.ts.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { stopAbandonedServer } from '../../src/store/embedded/cluster.js';
import { startEmbeddedPostgres, type EmbeddedServer } from '../../src/store/embedded/server.js';
import { migrate } from '../../src/store/migrate.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Connection URL with CREATE DATABASE rights (may carry a password: never log it). */
    dnsplaneAdminUrl: string;
    /** The migrated template database test databases are created from. */
    dnsplaneTemplate: string;
  }
}

const TEMP_PREFIX = 'dnsplane-test-pg-';
/** Leftovers (from killed runs) older than this are dropped; younger ones may belong to a concurrent run. */
const LEFTOVER_AGE_MS = 2 * 60 * 60 * 1000;

function databaseUrl(base: string, database: string): string {
  const u = new URL(base);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.toString();
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = Date.now();
  let server: EmbeddedServer | undefined;
  let tempDir: string | undefined;
  let adminUrl: string;

  const envUrl = process.env.DATABASE_URL;
  if (envUrl !== undefined && envUrl !== '') {
    adminUrl = envUrl;
  } else {
    await reapAbandonedTempClusters();
    tempDir = mkdtempSync(path.join(tmpdir(), TEMP_PREFIX));
    chmodSync(tempDir, 0o755); // as root, Postgres runs as the OS user "postgres", which must reach it
    try {
      server = await startEmbeddedPostgres({
        pgDir: path.join(tempDir, 'pg'),
        user: 'postgres',
        password: randomBytes(18).toString('base64url'),
        log: (msg, fields) => {
          if (/unexpectedly|orphan|stale|PANIC/.test(msg) || /PANIC/.test(String(fields?.line ?? ''))) console.error(`[test postgres] ${msg}`, fields ?? '');
        },
        settings: {
          fsync: 'off',
          synchronous_commit: 'off',
          full_page_writes: 'off',
          max_connections: '400',
        },
      });
    } catch (err) {
      rmSync(tempDir, { recursive: true, force: true });
      throw err;
    }
    adminUrl = server.url('postgres');
  }

  const template = `dnsplane_template_${started.toString(36)}_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  admin.on('error', () => undefined);
  try {
    await admin.connect();
    await dropLeftovers(admin, started);
    await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(template)}`);
    const pool = new pg.Pool({ connectionString: databaseUrl(adminUrl, template), max: 2 });
    try {
      await migrate(pool);
    } finally {
      await pool.end();
    }
    await waitNoConnections(admin, template);
  } catch (err) {
    await admin.end().catch(() => undefined);
    await server?.stop();
    if (tempDir) rmSync(tempDir, { recursive: true, force: true });
    throw err;
  }

  project.provide('dnsplaneAdminUrl', adminUrl);
  project.provide('dnsplaneTemplate', template);

  return async () => {
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(template)} WITH (FORCE)`);
    } finally {
      await admin.end().catch(() => undefined);
      await server?.stop();
      if (tempDir) rmSync(tempDir, { recursive: true, force: true });
    }
  };
}

/**
 * Drops test databases and templates left by killed runs: named with their creation time
 * (base 36 ms), older than LEFTOVER_AGE_MS, and — for templates — whose run (pid) is gone.
 */
async function dropLeftovers(admin: pg.Client, now: number): Promise<void> {
  const { rows } = await admin.query<{ datname: string }>(
    `SELECT datname FROM pg_database WHERE datname LIKE 'dnsplane\\_t\\_%' OR datname LIKE 'dnsplane\\_template\\_%'`,
  );
  for (const { datname } of rows) {
    const m = /^dnsplane_(?:t|template)_([0-9a-z]+)_([0-9a-z]+)$/.exec(datname);
    if (!m?.[1] || !m[2]) continue;
    const createdAt = Number.parseInt(m[1], 36);
    if (!(now - createdAt > LEFTOVER_AGE_MS)) continue;
    if (datname.startsWith('dnsplane_template_') && pidAlive(Number.parseInt(m[2], 10))) continue;
    await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(datname)} WITH (FORCE)`).catch(() => undefined);
  }
}

/** pool.end() resolves before its connections are closed; CREATE DATABASE … TEMPLATE needs none left. */
async function waitNoConnections(admin: pg.Client, database: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const { rows } = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [database]);
    if (rows[0]?.n === 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return typeof err === 'object' && err !== null && 'code' in err && err.code === 'EPERM';
  }
}

/** Temp clusters of killed runs: stop their orphaned servers and delete them. */
async function reapAbandonedTempClusters(): Promise<void> {
  let entries: string[];
  try {
    entries = readdirSync(tmpdir()).filter((e) => e.startsWith(TEMP_PREFIX));
  } catch {
    return;
  }
  for (const entry of entries) {
    const dir = path.join(tmpdir(), entry);
    try {
      if (Date.now() - statSync(dir).mtimeMs < 60_000) continue; // being set up by a concurrent run
      if (await stopAbandonedServer(path.join(dir, 'pg'), () => undefined)) {
        rmSync(dir, { recursive: true, force: true });
      }
    } catch {
      // best effort
    }
  }
}
