/**
 * A tenant's checks as its requests state them, written under the zone lock in the apply's
 * transaction (core/apply/prepare.ts, send.ts). Every record set a tenant WRITES states its check:
 * the label dnsplane/health-check, or none (a desired state is whole; an external-dns update carries
 * its provider-specific properties). A DNS UPDATE and the served OVH API carry no labels: their
 * requests leave checks as they are (an admin sets those: `dnsplane health-check set`). A change of
 * the check alone is an ownership change: no OVH call, the generation + 1 (Records shows it).
 */
import { healthCheckOf } from '../../dns/health-check.js';
import type { Endpoint } from '../../dns/types.js';
import * as store from '../../store/index.js';
import type { RoutedInput } from '../plan/input.js';

/** The checks a routed request states for its record sets of `zone` (empty: it states none). */
export function statedChecks(routed: RoutedInput, zone: string): store.HealthCheckWrite[] {
  const written: readonly Endpoint[] =
    routed.kind === 'desired'
      ? (routed.byZone.get(zone) ?? [])
      : routed.kind === 'changes'
        ? [...(routed.byZone.get(zone)?.create ?? []), ...(routed.byZone.get(zone)?.updateNew ?? [])]
        : [];
  return written.map((e) => ({ dnsName: e.dnsName, recordType: e.recordType, check: healthCheckOf(e) ?? null }));
}

/** Writes the checks a request states on the tenant's ownership rows of `zone`; the record sets whose check changed. */
export function recordStatedChecks(
  tx: store.Queryable,
  zone: string,
  tenantId: string,
  routed: RoutedInput,
): Promise<Array<{ dnsName: string; recordType: string }>> {
  return store.setHealthChecks(tx, zone, tenantId, statedChecks(routed, zone));
}
