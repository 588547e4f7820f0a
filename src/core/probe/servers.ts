/**
 * Which servers the prober asks for a zone: DNSPLANE_AUTHORITATIVE_SERVERS when set (host:port each,
 * for split horizons, tests and the demo), else the zone's name servers — its apex NS records as the
 * cache holds them (no OVH call; followed when they change: a zone moved to other name servers is
 * probed on the new ones at the next round), port 53, each name resolved to an address. Only a zone
 * whose cache holds no apex NS record asks OVH (GET /domain/zone/{zone} nameServers). The addresses
 * are kept per zone for as long as its name servers stay the same. A failure to learn them (OVH, or a
 * name that does not resolve) is logged once and kept for a while, doubling from RETRY_MIN_MS to
 * RETRY_MAX_MS: the rounds meanwhile are answered the same reason without asking again.
 */
import { resolveHost, type DnsServerAddress } from '../../dnsclient/index.js';
import { messageOf } from '../../lib/error-message.js';
import { ovhTargetToCanonical } from '../../ovh/mapping.js';
import * as store from '../../store/index.js';
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
  /** Clock (tests). */
  now?: () => number;
}

/** A failure to learn a zone's servers is answered again, without asking, for this long at first… */
export const RETRY_MIN_MS = 30_000;
/** …doubling each time up to this. */
export const RETRY_MAX_MS = 15 * 60_000;

interface Failure {
  error: Error;
  retryAt: number;
  delayMs: number;
}

/** One zone: its name servers as last read (sorted, joined), their addresses once resolved, the failure being waited out. */
interface ZoneServers {
  names?: string;
  servers?: Promise<ProbeServer[]>;
  failure?: Failure;
}

export class ServerDirectory {
  private readonly zones = new Map<string, ZoneServers>();
  private fixed?: Promise<ProbeServer[]>;
  private readonly now: () => number;

  constructor(
    private readonly ctx: CoreContext,
    private readonly opts: ServerDirectoryOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
  }

  /** The zone's servers; throws an Error saying why they could not be learnt. */
  async of(zone: string): Promise<ProbeServer[]> {
    const fixed = this.opts.fixed;
    if (fixed) {
      this.fixed ??= Promise.all(fixed.map(async (a) => ({ label: hostPort(a), address: { host: await resolveHost(a.host), port: a.port } })));
      this.fixed.catch(() => (this.fixed = undefined));
      return this.fixed;
    }
    let z = this.zones.get(zone);
    if (!z) this.zones.set(zone, (z = {}));
    const cached = await this.cachedNames(zone);
    if (cached !== undefined && cached.join(' ') !== z.names) {
      // First read, or the zone's name servers changed: learnt again from the new names.
      if (z.names !== undefined)
        this.ctx.log.info({ zone, was: z.names.split(' '), now: cached }, "probe: the zone's name servers changed; asking the new ones");
      z.names = cached.join(' ');
      z.servers = undefined;
      z.failure = undefined;
    }
    if (z.servers) return z.servers;
    if (z.failure && this.now() < z.failure.retryAt) throw z.failure.error;
    const learning = (z.servers = this.learn(zone, cached));
    const entry = z;
    learning.then(
      () => {
        if (entry.failure) this.ctx.log.info({ zone }, "probe: the zone's name servers are known again");
        entry.failure = undefined;
      },
      (e: unknown) => {
        if (entry.servers === learning) entry.servers = undefined;
        const delayMs = entry.failure ? Math.min(entry.failure.delayMs * 2, RETRY_MAX_MS) : RETRY_MIN_MS;
        const error = e instanceof Error ? e : new Error(String(e));
        // Logged once per streak of failures; the rounds until the retry are answered this reason.
        if (!entry.failure) this.ctx.log.warn({ zone, err: error.message, retryInMs: delayMs }, "probe: the zone's name servers could not be learnt");
        entry.failure = { error, retryAt: this.now() + delayMs, delayMs };
      },
    );
    return learning;
  }

  /** The zone's apex NS hosts from the cache, sorted; undefined when it holds none (never read, or OVH lists none). */
  private async cachedNames(zone: string): Promise<string[] | undefined> {
    const rows = await store.listRecordsForNames(this.ctx.pool, zone, [{ subDomain: '', fieldType: 'NS' }]);
    const names = [...new Set(rows.map((r) => (ovhTargetToCanonical('NS', r.target, zone) ?? r.target).replace(/\.$/, '').toLowerCase()))].sort();
    return names.length > 0 ? names : undefined;
  }

  private async learn(zone: string, cached: string[] | undefined): Promise<ProbeServer[]> {
    let names = cached;
    if (!names) {
      try {
        names = (await this.ctx.ovh.getZoneInfo(zone)).nameServers;
      } catch (e) {
        throw new Error(`the zone's name servers could not be read from OVH (GET /domain/zone/${zone}): ${messageOf(e)}`);
      }
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
