/**
 * The DNS door's Prometheus series, on the server's registry (served on the API port's /metrics).
 *
 * - dnsplane_dns_requests_total{opcode,transport,rcode}   every message answered, by its RCODE
 * - dnsplane_dns_request_duration_seconds{opcode}         from the message to its (last) answer
 * - dnsplane_dns_dropped_total{reason}                    messages not answered: rate_limited (an
 *                                                         unsigned sender over its rate), malformed (no
 *                                                         header), response (QR set), busy (too many in
 *                                                         flight)
 * - dnsplane_dns_tsig_errors_total{error}                 BADKEY, BADSIG, BADTIME, BADTRUNC
 * - dnsplane_dns_refusals_total{zone,tenant,rcode}        the one refusal path (dnsserver/refusal.ts):
 *                                                         UPDATEs and transfers refused, prerequisites
 *                                                         failed; zone '' when not a managed zone
 */
import type { Counter, Histogram, Registry } from 'prom-client';
import { seriesOn } from '../metrics/metrics.js';

export type DropReason = 'rate_limited' | 'malformed' | 'response' | 'busy';

/** One DnsMetrics per registry: a door started again on the same registry (the demo's port fallback) counts on the same series. */
const onRegistry = new WeakMap<Registry, DnsMetrics>();

export function dnsMetricsOn(registry: Registry): DnsMetrics {
  let m = onRegistry.get(registry);
  if (!m) onRegistry.set(registry, (m = new DnsMetrics(registry)));
  return m;
}

export class DnsMetrics {
  private readonly requests: Counter<'opcode' | 'transport' | 'rcode'>;
  private readonly duration: Histogram<'opcode'>;
  private readonly dropped: Counter<'reason'>;
  private readonly tsigErrors: Counter<'error'>;
  private readonly refusals: Counter<'zone' | 'tenant' | 'rcode'>;

  constructor(registry: Registry) {
    const s = seriesOn(registry);
    this.requests = s.counter('dnsplane_dns_requests_total', 'DNS messages answered on DNSPLANE_DNS_LISTEN, by opcode, transport and RCODE', [
      'opcode',
      'transport',
      'rcode',
    ]);
    this.duration = s.histogram(
      'dnsplane_dns_request_duration_seconds',
      'DNS messages, from their arrival to their (last) answer, by opcode',
      ['opcode'],
      [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    );
    this.dropped = s.counter(
      'dnsplane_dns_dropped_total',
      'DNS messages not answered: rate_limited (unsigned sender over its rate), malformed, response, busy',
      ['reason'],
    );
    this.tsigErrors = s.counter('dnsplane_dns_tsig_errors_total', 'Signed DNS messages refused: BADKEY, BADSIG, BADTIME, BADTRUNC', ['error']);
    this.refusals = s.counter('dnsplane_dns_refusals_total', "DNS UPDATEs and zone transfers refused (the refusal's RCODE; zone empty when not managed)", [
      'zone',
      'tenant',
      'rcode',
    ]);
  }

  answered(opcode: string, transport: string, rcode: string, seconds: number): void {
    this.requests.inc({ opcode, transport, rcode });
    this.duration.observe({ opcode }, seconds);
  }

  drop(reason: DropReason): void {
    this.dropped.inc({ reason });
  }

  tsigError(error: string): void {
    this.tsigErrors.inc({ error });
  }

  refused(zone: string, tenant: string, rcode: string): void {
    this.refusals.inc({ zone, tenant, rcode });
  }
}
