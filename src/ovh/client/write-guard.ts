/**
 * Write guards (fencing): something that must agree before each write attempt to OVH leaves, set for
 * a stretch of async work (core's zone fence while a zone lock is held, the shutdown deadline).
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Something that must agree before each write attempt (anything but a GET) leaves: core's zone fence
 * (the zone lock is still held) and the shutdown deadline. It runs after the rate limiter, right
 * before the request, for every attempt (retries included), and refuses by throwing: the attempt is
 * not sent and the error (not an OvhError) ends the call without retries.
 */
export interface WriteGuard {
  beforeWrite(method: string, path: string): Promise<void>;
}

const guardStore = new AsyncLocalStorage<WriteGuard>();

/** Runs fn with `guard` consulted before every write attempt fn makes through any OvhApi (async context). */
export function withWriteGuard<T>(guard: WriteGuard, fn: () => Promise<T>): Promise<T> {
  return guardStore.run(guard, fn);
}

/** The guard of the work running here, if any. */
export function currentWriteGuard(): WriteGuard | undefined {
  return guardStore.getStore();
}
