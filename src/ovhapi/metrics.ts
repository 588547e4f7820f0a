/**
 * The served OVH API's Prometheus series, on the server's registry (served on the API port's /metrics):
 *
 * - dnsplane_ovh_api_requests_total{route,status}      every call: route as ovhapi/routes.ts names it
 *                                                       (authTime, records, record, refresh, …; unknown)
 * - dnsplane_ovh_api_request_duration_seconds{route}
 * - dnsplane_ovh_api_refusals_total{tenant,code}       writes refused as not the tenant's (NOT_GRANTED_CALL),
 *                                                       invalid (BAD_REQUEST), or over its rate (TOO_MANY_REQUESTS)
 */
import type { Counter, Histogram, Registry } from 'prom-client';
import { seriesOn } from '../metrics/metrics.js';

export class OvhApiMetrics {
  private readonly requests: Counter<'route' | 'status'>;
  private readonly duration: Histogram<'route'>;
  private readonly refusals: Counter<'tenant' | 'code'>;

  constructor(registry: Registry) {
    const s = seriesOn(registry);
    this.requests = s.counter('dnsplane_ovh_api_requests_total', 'Calls to the OVH API dnsplane serves (/ovh/1.0), by route and HTTP status', [
      'route',
      'status',
    ]);
    this.duration = s.histogram(
      'dnsplane_ovh_api_request_duration_seconds',
      'Duration of calls to the served OVH API, by route',
      ['route'],
      [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    );
    this.refusals = s.counter(
      'dnsplane_ovh_api_refusals_total',
      "Writes through the served OVH API refused: not the tenant's (NOT_GRANTED_CALL), invalid (BAD_REQUEST), or over the tenant's rate (TOO_MANY_REQUESTS)",
      ['tenant', 'code'],
    );
  }

  done(route: string, status: number, seconds: number): void {
    this.requests.inc({ route, status: String(status) });
    this.duration.observe({ route }, seconds);
  }

  refused(tenant: string, code: string): void {
    this.refusals.inc({ tenant, code });
  }
}
