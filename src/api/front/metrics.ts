/**
 * The HTTP front's series, on the registry each port is given (the server's, or the sidecar's own):
 * - dnsplane_http_connections{port}                    connections held now (at scrape time)
 * - dnsplane_http_connections_refused_total{port,reason} refused at accept: per_address, total; or
 *                                                        at their first bytes: proxy_untrusted (a PROXY
 *                                                        header from a peer not trusted), proxy_malformed
 * - dnsplane_http_connections_closed_total{port,reason}  closed by the front's clocks: headers (not
 *                                                        complete in time), request (the body not
 *                                                        all sent in time), idle, linger (a refused
 *                                                        body still arriving when its drain ended)
 * Ports sharing a registry share the series (one declaration per registry), told apart by `port`.
 */
import type { Counter, Registry } from 'prom-client';
import { seriesOn } from '../../metrics/metrics.js';

export type CloseReason = 'headers' | 'request' | 'idle' | 'linger';

interface Series {
  refused: Counter<'port' | 'reason'>;
  closed: Counter<'port' | 'reason'>;
  /** The open-connection count of each port on this registry, read at scrape time. */
  open: Map<string, () => number>;
}

const declared = new WeakMap<Registry, Series>();

function seriesFor(registry: Registry): Series {
  let series = declared.get(registry);
  if (series) return series;
  const s = seriesOn(registry);
  const open = new Map<string, () => number>();
  s.gauge('dnsplane_http_connections', 'Connections an HTTP port (api, webhook) holds now', ['port'], async (g) => {
    for (const [port, size] of open) g.set({ port }, size());
  });
  series = {
    refused: s.counter(
      'dnsplane_http_connections_refused_total',
      'Connections refused when accepted, over DNSPLANE_MAX_CONNECTIONS_PER_ADDRESS (per_address) or DNSPLANE_MAX_CONNECTIONS (total), or at their first bytes: a PROXY header from a peer not in DNSPLANE_TRUSTED_PROXIES (proxy_untrusted) or a malformed one (proxy_malformed)',
      ['port', 'reason'],
    ),
    closed: s.counter(
      'dnsplane_http_connections_closed_total',
      "Connections the HTTP front closed on its clocks: headers or request not complete in time, idle, or a refused body's drain ended",
      ['port', 'reason'],
    ),
    open,
  };
  declared.set(registry, series);
  return series;
}

export class FrontMetrics {
  private readonly series: Series | undefined;

  constructor(
    registry: Registry | undefined,
    private readonly port: string,
    size: () => number,
  ) {
    this.series = registry && seriesFor(registry);
    this.series?.open.set(port, size);
  }

  refused(reason: 'per_address' | 'total' | 'proxy_untrusted' | 'proxy_malformed'): void {
    this.series?.refused.inc({ port: this.port, reason });
  }

  closed(reason: CloseReason): void {
    this.series?.closed.inc({ port: this.port, reason });
  }
}
