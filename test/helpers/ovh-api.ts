/**
 * An OvhApi (the real client, over real HTTPS) pointed at a simulator, for the test files of test/ovh:
 * the simulator's endpoint, credentials and CA, a rate and a concurrency no test reaches; each test
 * file adds its own options (sleep, retry, logging, expanded lists) in opts.
 */
import { OvhApi, type OvhApiOptions } from '../../src/ovh/client.js';
import type { OvhSimulator } from '../../src/ovhsim/index.js';

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
