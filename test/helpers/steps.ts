/**
 * Proving long work is sliced (dns/steps.ts, core/slices.ts) without timing it: a computation's pause
 * points counted, and its run in slices of no time at all, with whether the event loop turned (a
 * setImmediate ran) before it ended. A tenant as core's pure passes read it.
 */
import { Slicer } from '../../src/core/slices.js';
import type { Tenant } from '../../src/core/tenants/tenants.js';
import type { Steps } from '../../src/dns/steps.js';

/** Runs steps to the end, counting its pause points. */
export function pauses<T>(steps: Steps<T>): { value: T; pauses: number } {
  let n = 0;
  for (;;) {
    const r = steps.next();
    if (r.done) return { value: r.value, pauses: n };
    n++;
  }
}

/** Runs steps in slices of no time at all: its value, whether the event loop turned before the end, how often it yielded. */
export async function sliced<T>(steps: Steps<T>): Promise<{ value: T; turned: boolean; yields: number }> {
  const slicer = new Slicer(0);
  let turned = false;
  setImmediate(() => (turned = true));
  const value = await slicer.run(steps);
  return { value, turned, yields: slicer.yields };
}

/** A tenant of `zones` with no scope, suffix or threshold (fields given override). */
export function aTenant(id: string, name: string, zones: string[], fields: Partial<Tenant> = {}): Tenant {
  return { id, name, scopes: [], zones, suffixes: [], disabled: false, createdAt: new Date(0), tokenRotatedAt: new Date(0), maxChangePercent: null, ...fields };
}
