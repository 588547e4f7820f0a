/**
 * How many connections one HTTP port holds at once: at most `perAddress` from one client address and
 * `total` in all (DNSPLANE_MAX_CONNECTIONS_PER_ADDRESS, DNSPLANE_MAX_CONNECTIONS). A connection over
 * either cap is closed as soon as it is accepted, before anything is read from it; each refusal is
 * counted (dnsplane_http_connections_refused_total) and the refusals of SUMMARY_MS are logged as one
 * line with the busiest addresses, never a line per connection.
 *
 * A trusted proxy's connection (DNSPLANE_TRUSTED_PROXIES) counts against the total only: the proxy
 * carries every client's. Once its PROXY header names the client, it counts as that client's too
 * (assign), and is closed if that client holds its share already.
 */
import type { Logger } from 'pino';

export interface ConnectionLimits {
  perAddress: number;
  total: number;
}

export type Refusal = 'per_address' | 'total';

/** Refusals are summed over this long, then logged in one line (if there were any). */
const SUMMARY_MS = 10_000;
/** Addresses named in a summary line. */
const TOP = 5;

export class ConnectionCaps {
  private readonly byAddress = new Map<string, number>();
  private open = 0;
  private refusedBy = new Map<string, number>();
  private refusedReasons: Record<Refusal, number> = { per_address: 0, total: 0 };
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly port: string,
    private readonly log: Logger,
    private readonly onRefused: (reason: Refusal) => void = () => undefined,
  ) {}

  /** Connections held now. */
  get size(): number {
    return this.open;
  }

  /**
   * Takes a place for a connection from `host` (undefined: a trusted proxy's, the total only);
   * undefined when taken (release it once, with the host it was last assigned), else why not.
   */
  take(host: string | undefined, shown = host ?? 'unknown'): Refusal | undefined {
    const mine = host === undefined ? 0 : (this.byAddress.get(host) ?? 0);
    const reason: Refusal | undefined = this.open >= this.limits.total ? 'total' : mine >= this.limits.perAddress ? 'per_address' : undefined;
    if (reason) {
      this.refused(shown, reason);
      return reason;
    }
    this.open++;
    if (host !== undefined) this.byAddress.set(host, mine + 1);
    return undefined;
  }

  /** A proxy's connection (taken with no host) turns out to be `host`'s: undefined, or why it may not be (then release it with no host). */
  assign(host: string): Refusal | undefined {
    const mine = this.byAddress.get(host) ?? 0;
    if (mine >= this.limits.perAddress) {
      this.refused(host, 'per_address');
      return 'per_address';
    }
    this.byAddress.set(host, mine + 1);
    return undefined;
  }

  release(host: string | undefined): void {
    this.open--;
    if (host === undefined) return;
    const mine = (this.byAddress.get(host) ?? 1) - 1;
    if (mine > 0) this.byAddress.set(host, mine);
    else this.byAddress.delete(host);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.flush();
  }

  private refused(host: string, reason: Refusal): void {
    this.onRefused(reason);
    this.refusedReasons[reason]++;
    this.refusedBy.set(host, (this.refusedBy.get(host) ?? 0) + 1);
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), SUMMARY_MS);
      this.timer.unref();
    }
  }

  private flush(): void {
    this.timer = undefined;
    if (this.refusedBy.size === 0) return;
    const top = [...this.refusedBy]
      .sort((a, b) => b[1] - a[1])
      .slice(0, TOP)
      .map(([address, refused]) => ({ address, refused }));
    const refused = this.refusedReasons.per_address + this.refusedReasons.total;
    this.log.warn(
      { port: this.port, refused, reasons: this.refusedReasons, addresses: this.refusedBy.size, top, limits: this.limits, windowSeconds: SUMMARY_MS / 1000 },
      `http: ${refused} connections refused over the connection caps (summary)`,
    );
    this.refusedBy = new Map();
    this.refusedReasons = { per_address: 0, total: 0 };
  }
}
