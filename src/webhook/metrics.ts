/**
 * The webhook's Prometheus series, registered on the registry they are given: the server's (served on
 * the API listener's /metrics, beside core's series) or, in the sidecar, one of its own (served on the
 * sidecar's /metrics).
 *
 * - dnsplane_webhook_requests_total{route,status}       every webhook request: negotiate, records,
 *                                                        apply, adjust, other
 * - dnsplane_webhook_request_duration_seconds{route}
 * - dnsplane_webhook_conflicts_total{tenant,zone,action} changes refused because someone else (or
 *                                                        nobody) owns the record set; the rest applied.
 *                                                        action: the list external-dns sent it in
 *                                                        (create, update, delete)
 * - dnsplane_webhook_rejected_total{tenant,list}         change-set entries refused as invalid (a bad
 *                                                        target, a name outside the tenant's grant, …)
 * - dnsplane_webhook_threshold_refusals_total{tenant,zone} change sets answered 503 because they were
 *                                                        over the tenant's change threshold
 */
import type { Counter, Histogram, Registry } from 'prom-client';
import { seriesOn } from '../metrics/metrics.js';

export type WebhookRoute = 'negotiate' | 'records' | 'apply' | 'adjust' | 'other';

export class WebhookMetrics {
  private readonly requests: Counter<'route' | 'status'>;
  private readonly duration: Histogram<'route'>;
  private readonly conflicts: Counter<'tenant' | 'zone' | 'action'>;
  private readonly rejected: Counter<'tenant' | 'list'>;
  private readonly overThreshold: Counter<'tenant' | 'zone'>;

  constructor(readonly registry: Registry) {
    const s = seriesOn(registry);
    this.requests = s.counter(
      'dnsplane_webhook_requests_total',
      'external-dns webhook requests, by route (negotiate, records, apply, adjust, other) and HTTP status',
      ['route', 'status'],
    );
    this.duration = s.histogram(
      'dnsplane_webhook_request_duration_seconds',
      'Duration of external-dns webhook requests, by route',
      ['route'],
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
    );
    this.conflicts = s.counter(
      'dnsplane_webhook_conflicts_total',
      'Changes external-dns asked for on record sets another tenant (or nobody) owns, by the list it sent them in (create, update, delete); refused, the other changes applied',
      ['tenant', 'zone', 'action'],
    );
    this.rejected = s.counter(
      'dnsplane_webhook_rejected_total',
      'Change-set entries refused as invalid (bad target, name outside the grant, duplicate); the other changes applied',
      ['tenant', 'list'],
    );
    this.overThreshold = s.counter(
      'dnsplane_webhook_threshold_refusals_total',
      "Change sets answered 503 because they would update or delete more than the tenant's change threshold; nothing was sent",
      ['tenant', 'zone'],
    );
  }

  thresholdRefusal(tenant: string, zone: string): void {
    this.overThreshold.inc({ tenant, zone });
  }

  request(route: WebhookRoute, status: number, seconds: number): void {
    this.requests.inc({ route, status: String(status) });
    this.duration.observe({ route }, seconds);
  }

  conflict(tenant: string, zone: string, action: string, count = 1): void {
    this.conflicts.inc({ tenant, zone, action }, count);
  }

  rejection(tenant: string, list: string, count = 1): void {
    this.rejected.inc({ tenant, list }, count);
  }
}
