/**
 * ZoneService requests as the tests and the benches send them, built in one place.
 */
import type { CallOptions, Client } from '@connectrpc/connect';
import { Policy, type Endpoint, type ZoneService } from '../../src/gen/dnsplane/v1/zone_pb.js';

/** Apply of a plan computed from desired endpoints (`zones` empty: the zones the endpoints fall in). */
export function applyDesired(
  client: Client<typeof ZoneService>,
  endpoints: Endpoint[],
  policy = Policy.UPSERT_ONLY,
  zones: string[] = [],
  options?: CallOptions,
) {
  return client.apply({ source: { case: 'plan', value: { policy, input: { case: 'desired', value: { zones, endpoints } } } } }, options);
}
