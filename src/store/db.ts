/**
 * Opening the database: a pool on DATABASE_URL, or an embedded Postgres kept in the data dir.
 *
 * Type parsing: no global pg type parser is installed. int8 columns come back from pg as decimal
 * strings (pg's default); the store functions convert per column: record/tenant/journal ids stay
 * strings, generations and SOA serials become JS bigint, counts become numbers.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { reachableByPostgresUser } from './embedded/as-root.js';
import { EmbeddedInUseError } from './embedded/owner-lock.js';
import { startEmbeddedPostgres, type EmbeddedServer } from './embedded/server.js';
import { errorCode, type LogFn } from './internal.js';
import { messageOf } from '../lib/error-message.js';

export type { LogFn, Queryable } from './internal.js';

export interface Database {
  pool: pg.Pool;
  /** Connection URL. For the embedded server it carries the generated password: never log it (use displayUrl). */
  url: string;
  /** url with the password masked, for logs. */
  displayUrl: string;
  /**
   * Which database, for the start banner and logs, never with a password: "embedded Postgres at
   * <cluster dir>" or "Postgres <host>:<port>/<database> (DATABASE_URL)".
   */
  label: string;
  embedded: boolean;
  /** Ends the pool, then stops the embedded server (if any). Idempotent. */
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** When set, dnsplane uses this server and starts nothing. */
  databaseUrl?: string;
  /** dnsplane's data directory; the embedded cluster lives in `${dataDir}/pg`. */
  dataDir: string;
  log?: LogFn;
  /** Pool size (default 10). */
  poolMax?: number;
  /**
   * Embedded only: write CONNECTION_FILE in the data dir (URL with password, this pid; mode 0600)
   * while the server runs, so that CLI commands can work beside it. `dnsplane serve` sets it.
   */
  publishConnection?: boolean;
  /**
   * Embedded only: when another live dnsplane process drives the data dir's cluster, connect
   * through the CONNECTION_FILE it published instead of failing. CLI commands set it.
   */
  shareRunning?: boolean;
}

/** Written by a serving process in its data dir: how other dnsplane commands reach its embedded Postgres. */
export const CONNECTION_FILE = 'connection.json';

export const EMBEDDED_DATABASE = 'dnsplane';
/** How long opening a connection may take before the request fails as "database unavailable". */
const CONNECT_TIMEOUT_MS = 5_000;
export const EMBEDDED_USER = 'dnsplane';
const PASSWORD_FILE = 'pg.password';

export async function openDatabase(opts: OpenDatabaseOptions): Promise<Database> {
  const log: LogFn = opts.log ?? (() => undefined);

  if (opts.databaseUrl !== undefined && opts.databaseUrl !== '') {
    const url = opts.databaseUrl;
    const pool = createPool(url, log, opts.poolMax);
    try {
      await pool.query('SELECT 1');
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw new Error(`cannot connect to ${redactUrl(url)}: ${messageOf(err)}`, { cause: err });
    }
    log('database: using external Postgres', { url: redactUrl(url) });
    return { pool, url, displayUrl: redactUrl(url), label: `${describeUrl(url)} (DATABASE_URL)`, embedded: false, close: once(() => pool.end()) };
  }

  const dataDir = path.resolve(opts.dataDir);
  await fs.mkdir(dataDir, { recursive: true });
  const pgDir = clusterDir(dataDir, log);
  const password = await loadOrCreatePassword(path.join(dataDir, PASSWORD_FILE), pgDir, log);
  const connectionFile = path.join(dataDir, CONNECTION_FILE);
  let server: EmbeddedServer;
  try {
    server = await startEmbeddedPostgres({ pgDir, user: EMBEDDED_USER, password, log });
  } catch (err) {
    if (opts.shareRunning && err instanceof EmbeddedInUseError && err.pid !== process.pid) {
      return openShared(connectionFile, err, log, opts.poolMax);
    }
    throw err;
  }
  try {
    await ensureDatabase(server, EMBEDDED_DATABASE, log);
    const url = server.url(EMBEDDED_DATABASE);
    // We hold the cluster: a connection file still there was left by a run that is gone.
    await fs.rm(connectionFile, { force: true });
    if (opts.publishConnection) await writeConnectionFile(connectionFile, { url, pid: process.pid });
    const pool = createPool(url, log, opts.poolMax);
    const close = once(async () => {
      try {
        await pool.end();
      } finally {
        if (opts.publishConnection) await removeOwnConnectionFile(connectionFile);
        await server.stop();
      }
    });
    return { pool, url, displayUrl: redactUrl(url), label: `embedded Postgres at ${server.pgDir}`, embedded: true, close };
  } catch (err) {
    await server.stop();
    throw err;
  }
}

interface ConnectionInfo {
  url: string;
  pid: number;
}

/** Written to a 0600 temp file, then renamed: a reader sees the whole file or none. */
async function writeConnectionFile(file: string, info: ConnectionInfo): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.rm(tmp, { force: true });
  await fs.writeFile(tmp, `${JSON.stringify({ ...info, written: new Date().toISOString() })}\n`, { flag: 'wx', mode: 0o600 });
  await fs.rename(tmp, file);
}

async function removeOwnConnectionFile(file: string): Promise<void> {
  const info = await readConnectionFile(file).catch(() => undefined);
  if (info?.pid === process.pid) await fs.rm(file, { force: true });
}

async function readConnectionFile(file: string): Promise<ConnectionInfo | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if (typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v === 'object' && v !== null && 'url' in v && typeof v.url === 'string' && 'pid' in v && typeof v.pid === 'number') {
      return { url: v.url, pid: v.pid };
    }
  } catch {
    // unreadable: treated as absent
  }
  return undefined;
}

/**
 * The data dir's cluster is driven by another live dnsplane process: use the server it published in
 * its connection file. Every failure names the ways out.
 */
async function openShared(file: string, inUse: EmbeddedInUseError, log: LogFn, poolMax = 2): Promise<Database> {
  const owner = inUse.pid;
  const wayOut = `stop that process (pid ${owner}) and run the command again, or set DATABASE_URL to the Postgres to use`;
  let info: ConnectionInfo | undefined;
  try {
    info = await readConnectionFile(file);
  } catch (err) {
    throw new Error(
      `${inUse.message}, and its connection file ${file} cannot be read (${messageOf(err)}); run as the user that runs the server, or ${wayOut}`,
      { cause: err },
    );
  }
  if (info === undefined) {
    throw new Error(
      `${inUse.message}, which publishes no connection file (${file}): only "dnsplane serve" does, once its database is up. ` +
        `If it is a serve still starting, run the command again in a moment; otherwise ${wayOut}`,
    );
  }
  if (info.pid !== owner) {
    throw new Error(
      `${inUse.message}, but ${file} was written by pid ${info.pid}, not by it (left by an earlier run, or a serve still starting); run the command again in a moment, or ${wayOut}`,
    );
  }
  const pool = createPool(info.url, log, poolMax);
  try {
    await pool.query('SELECT 1');
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw new Error(
      `cannot reach the embedded Postgres of the running dnsplane process (pid ${owner}) through ${file}: ${messageOf(err)}; ` +
        `if it is stopping, run the command again once it has stopped; otherwise ${wayOut}`,
      { cause: err },
    );
  }
  log('database: using the embedded Postgres of a running dnsplane serve', { pid: owner, file });
  return {
    pool,
    url: info.url,
    displayUrl: redactUrl(info.url),
    label: `embedded Postgres of the running dnsplane serve (pid ${owner})`,
    embedded: true,
    close: once(() => pool.end()),
  };
}

function createPool(connectionString: string, log: LogFn, max = 10): pg.Pool {
  // connectionTimeoutMillis: an unreachable server (packets dropped during a failover) fails a
  // request within seconds instead of hanging on the OS's TCP timeout; keepAlive: a dead peer is
  // noticed on idle connections too.
  const pool = new pg.Pool({ connectionString, max, application_name: 'dnsplane', connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true });
  // An idle client whose connection dies emits 'error' on the pool; unhandled, it would crash the process.
  pool.on('error', (err) => log('database: idle connection error', { error: err.message }));
  return pool;
}

/** The embedded superuser's password: generated once, kept in the data dir with mode 0600. */
/**
 * Where the embedded cluster lives: `${dataDir}/pg`. As root, Postgres runs as the OS user
 * `postgres`; when that user cannot traverse the data directory (a clone under /root, a mktemp -d
 * folder), the cluster goes to /var/lib/dnsplane/pg-<hash of the data dir> instead, so that
 * `npm start` still works and the same data dir always finds the same cluster.
 */
function clusterDir(dataDir: string, log: LogFn): string {
  const preferred = path.join(dataDir, 'pg');
  if (reachableByPostgresUser(dataDir)) return preferred;
  const id = createHash('sha256').update(dataDir).digest('hex').slice(0, 16);
  const fallback = path.join(ROOT_CLUSTER_BASE, `pg-${id}`);
  mkdirSync(ROOT_CLUSTER_BASE, { recursive: true, mode: 0o755 });
  log('embedded postgres: running as root and the OS user "postgres" cannot reach the data dir; the cluster lives elsewhere', {
    dataDir,
    clusterDir: fallback,
  });
  return fallback;
}

const ROOT_CLUSTER_BASE = '/var/lib/dnsplane';

async function loadOrCreatePassword(file: string, pgDir: string, log: LogFn): Promise<string> {
  if (await exists(file)) {
    const stat = await fs.stat(file);
    if ((stat.mode & 0o077) !== 0) {
      await fs.chmod(file, 0o600);
      log('database: tightened the mode of the password file to 0600', { file });
    }
    const password = (await fs.readFile(file, 'utf8')).trim();
    if (password === '') throw new Error(`embedded postgres: the password file ${file} is empty`);
    return password;
  }
  if (await exists(path.join(pgDir, 'PG_VERSION'))) {
    throw new Error(`embedded postgres: ${pgDir} holds a cluster but its password file ${file} is missing; restore it, or move ${pgDir} away to start afresh`);
  }
  const password = randomBytes(24).toString('base64url');
  await fs.writeFile(file, `${password}\n`, { flag: 'wx', mode: 0o600 });
  log('database: generated the embedded server password', { file });
  return password;
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

async function ensureDatabase(server: EmbeddedServer, name: string, log: LogFn): Promise<void> {
  const client = new pg.Client({ connectionString: server.url('postgres'), application_name: 'dnsplane' });
  client.on('error', () => undefined); // a failure surfaces through the awaited calls below
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount === 0) {
      try {
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
        log('database: created the database', { database: name });
      } catch (err) {
        if (errorCode(err) !== '42P04') throw err; // duplicate_database: created meanwhile
      }
    }
  } finally {
    await client.end();
  }
}

/** "Postgres host:port/database" of a connection URL: no user, no password, no parameters. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    const database = decodeURIComponent(u.pathname.replace(/^\//, '')) || '(default database)';
    return `Postgres ${u.hostname || '(socket)'}:${u.port || '5432'}/${database}`;
  } catch {
    return 'Postgres <unparseable database url>';
  }
}

/** The URL with its password replaced by `***`. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return '<unparseable database url>';
  }
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => (running ??= fn());
}

/**
 * A small second pool on the same database as `pool`, for the few autocommitted writes made while a
 * zone-lock transaction holds a connection of `pool` (the apply journal's in_flight row). With one
 * pool, N zone locks held at once could take all N connections and wait forever for one more.
 */
export function createSidePool(pool: pg.Pool, opts: { max?: number; log?: LogFn } = {}): pg.Pool {
  const side = new pg.Pool({ ...pool.options, max: opts.max ?? 2 });
  const log = opts.log ?? (() => undefined);
  side.on('error', (err) => log('database: idle side-pool connection error', { error: err.message }));
  return side;
}
