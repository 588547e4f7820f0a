/**
 * Which servers the prober asks for a zone: DNSPLANE_AUTHORITATIVE_SERVERS when set (host:port each,
 * for split horizons, tests and the demo), else the zone's name servers as OVH lists them
 * (GET /domain/zone/{zone} nameServers), port 53, each name resolved to an address. Learnt once per
 * zone and process: a probe makes no OVH call. A failure is not kept (the next round asks again).
 */
import { resolveHost, type DnsServerAddress } from '../../dnsclient/index.js';
import { messageOf } from '../../error-message.js';
import type { CoreContext } from '../context.js';

/** A server asked: how the journal names it, and where it is. */
export interface ProbeServer {
  label: string;
  address: DnsServerAddress;
}

export interface ServerDirectoryOptions {
  /** DNSPLANE_AUTHORITATIVE_SERVERS: every zone is asked of these. */
  fixed?: readonly DnsServerAddress[];
  /** Name servers whose address is known without the system resolver (the demo's simulator). */
  known?: ReadonlyMap<string, DnsServerAddress>;
}

export class ServerDirectory {
  private readonly zones = new Map<string, Promise<ProbeServer[]>>();
  private fixed?: Promise<ProbeServer[]>;

  constructor(
    private readonly ctx: CoreContext,
    private readonly opts: ServerDirectoryOptions = {},
  ) {}

  /** The zone's servers; throws an Error saying why they could not be learnt. */
  async of(zone: string): Promise<ProbeServer[]> {
    const fixed = this.opts.fixed;
    if (fixed) {
      this.fixed ??= Promise.all(fixed.map(async (a) => ({ label: hostPort(a), address: { host: await resolveHost(a.host), port: a.port } })));
      this.fixed.catch(() => (this.fixed = undefined));
      return this.fixed;
    }
    let known = this.zones.get(zone);
    if (!known) {
      known = this.learn(zone);
      this.zones.set(zone, known);
      known.catch(() => this.zones.delete(zone));
    }
    return known;
  }

  private async learn(zone: string): Promise<ProbeServer[]> {
    let names: string[];
    try {
      names = (await this.ctx.ovh.getZoneInfo(zone)).nameServers;
    } catch (e) {
      throw new Error(`the zone's name servers could not be read from OVH (GET /domain/zone/${zone}): ${messageOf(e)}`);
    }
    if (names.length === 0) throw new Error(`OVH lists no name server for zone ${zone}`);
    return Promise.all(
      names.map(async (name) => {
        const label = name.replace(/\.$/, '').toLowerCase();
        const given = this.opts.known?.get(label);
        if (given) return { label, address: given };
        try {
          return { label, address: { host: await resolveHost(label), port: 53 } };
        } catch (e) {
          throw new Error(`name server ${label} of zone ${zone} has no address: ${messageOf(e)}`);
        }
      }),
    );
  }
}

export function hostPort(a: DnsServerAddress): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}
