/**
 * The cluster directory of an embedded Postgres: whether it holds a cluster, and what a killed run
 * left in it — a stale `postmaster.pid` (process gone, or its pid reused by an unrelated process) is
 * removed; an orphaned postmaster of this directory (its dnsplane died without stopping it) is shut
 * down cleanly (SIGINT = fast shutdown).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { errorCode, type LogFn } from '../internal.js';
import { acquireOwnerLock, type OwnerLock } from './owner-lock.js';
import { isAlive, procCwd, waitGone } from './processes.js';

export async function isCluster(pgDir: string): Promise<boolean> {
  try {
    await fs.access(path.join(pgDir, 'PG_VERSION'));
    return true;
  } catch {
    return false;
  }
}

/** initdb may run only where there is nothing yet: a directory holding something else is refused. */
export async function assertEmptyOrAbsent(pgDir: string): Promise<void> {
  let entries: string[];
  try {
    entries = await fs.readdir(pgDir);
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return;
    throw err;
  }
  if (entries.length > 0) {
    throw new Error(
      `embedded postgres: ${pgDir} is not empty but holds no Postgres cluster (no PG_VERSION); move it away (an interrupted first start?) and start again`,
    );
  }
}

/**
 * Called while we hold the owner lock, so no live dnsplane process drives this cluster.
 * A postmaster.pid left behind by a killed run is removed when its process is gone (or its pid now
 * belongs to someone else); a postmaster still running on this directory is an orphan of a dead
 * dnsplane process and is shut down cleanly.
 */
export async function clearStalePostmaster(pgDir: string, log: LogFn): Promise<void> {
  const pidFile = path.join(pgDir, 'postmaster.pid');
  let text: string;
  try {
    text = await fs.readFile(pidFile, 'utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return;
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
