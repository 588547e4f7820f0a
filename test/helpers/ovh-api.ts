/**
 * An OvhApi (the real client, over real HTTPS) pointed at a simulator, for the test files of test/ovh:
 * the simulator's endpoint, credentials and CA, a rate and a concurrency no test reaches; each test
 * file adds its own options (sleep, retry, logging, expanded lists) in opts.
 */
import { OvhApi, type OvhApiOptions } from '../../src/ovh/client.js';
import type { OvhSimulator, SimCall } from '../../src/ovhsim/index.js';

export function ovhApiFor(sim: OvhSimulator, opts: Partial<OvhApiOptions> = {}): OvhApi {
  return new OvhApi({
    endpoint: { host: '127.0.0.1', port: sim.apiPort, basePath: '/1.0', label: 'sim' },
    credentials: sim.credentials,
    extraCaPems: [sim.caPem],
    ratePerSecond: 10_000,
    maxConcurrent: 64,
    ...opts,
  });
}

/** One call as "METHOD path?query status" plus what more(call) adds. */
const callLine =
  (more: (c: SimCall) => string) =>
  (c: SimCall): string => {
    const q = new URLSearchParams(c.query).toString();
    return `${c.method} ${c.path}${q ? `?${q}` : ''} ${c.status}${more(c)}`;
  };

/**
 * The simulator's log as "METHOD path?query status" (plus what more(call) adds), /auth/time left out:
 * what the test files of test/ovh assert call sequences against.
 */
export function simCalls(sim: OvhSimulator, more: (c: SimCall) => string = () => ''): string[] {
  return sim
    .calls()
    .filter((c) => c.path !== '/auth/time')
    .map(callLine(more));
}

/** simCalls of one zone's paths (/domain/zone/ZONE…) only. */
export function simZoneCalls(sim: OvhSimulator, zone: string, more: (c: SimCall) => string = () => ''): string[] {
  return sim
    .calls()
    .filter((c) => c.path.startsWith(`/domain/zone/${zone}`))
    .map(callLine(more));
}
