/**
 * The webhook's Prometheus series, registered on the registry they are given: the server's (served on
 * the API listener's /metrics, beside core's series) or, in the sidecar, one of its own (served on the
 * sidecar's /metrics).
 *
 * - dnsplane_webhook_requests_total{route,status}       every webhook request: negotiate, records,
 *                                                        apply, adjust, other
 * - dnsplane_webhook_request_duration_seconds{route}
 * - dnsplane_webhook_conflicts_total{tenant,zone,action} changes refused because someone else (or
 *                                                        nobody) owns the record set; the rest applied
 * - dnsplane_webhook_rejected_total{tenant,list}         change-set entries refused as invalid (a bad
 *                                                        target, a name outside the tenant's grant, …)
 * - dnsplane_webhook_threshold_refusals_total{tenant,zone} change sets answered 503 because they were
 *                                                        over the tenant's change threshold
 */
import { Counter, Histogram, type Registry } from 'prom-client';

export type WebhookRoute = 'negotiate' | 'records' | 'apply' | 'adjust' | 'other';

export class WebhookMetrics {
  private readonly requests: Counter<'route' | 'status'>;
  private readonly duration: Histogram<'route'>;
  private readonly conflicts: Counter<'tenant' | 'zone' | 'action'>;
  private readonly rejected: Counter<'tenant' | 'list'>;
  private readonly overThreshold: Counter<'tenant' | 'zone'>;

  constructor(readonly registry: Registry) {
    const registers = [registry];
    this.requests = new Counter({
      name: 'dnsplane_webhook_requests_total',
      help: 'external-dns webhook requests, by route (negotiate, records, apply, adjust, other) and HTTP status',
      labelNames: ['route', 'status'],
      registers,
    });
    this.duration = new Histogram({
      name: 'dnsplane_webhook_request_duration_seconds',
      help: 'Duration of external-dns webhook requests, by route',
      labelNames: ['route'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
      registers,
    });
    this.conflicts = new Counter({
      name: 'dnsplane_webhook_conflicts_total',
      help: 'Changes external-dns asked for on record sets another tenant (or nobody) owns; refused, the other changes applied',
      labelNames: ['tenant', 'zone', 'action'],
      registers,
    });
    this.rejected = new Counter({
      name: 'dnsplane_webhook_rejected_total',
      help: 'Change-set entries refused as invalid (bad target, name outside the grant, duplicate); the other changes applied',
      labelNames: ['tenant', 'list'],
      registers,
    });
    this.overThreshold = new Counter({
      name: 'dnsplane_webhook_threshold_refusals_total',
      help: "Change sets answered 503 because they would update or delete more than the tenant's change threshold; nothing was sent",
      labelNames: ['tenant', 'zone'],
      registers,
    });
  }

  thresholdRefusal(tenant: string, zone: string): void {
    this.overThreshold.inc({ tenant, zone });
  }

  request(route: WebhookRoute, status: number, seconds: number): void {
    this.requests.inc({ route, status: String(status) });
    this.duration.observe({ route }, seconds);
  }

  conflict(tenant: string, zone: string, action: string): void {
    this.conflicts.inc({ tenant, zone, action });
  }

  rejection(tenant: string, list: string): void {
    this.rejected.inc({ tenant, list });
  }
}
