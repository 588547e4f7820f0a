/**
 * Propagation: on OVH a refresh is not answered at once. Each zone is served by two authoritative
 * servers (dnsNN.ovh.net / nsNN.ovh.net), and each picks the refresh up after its own lag — seconds to
 * minutes, per server and per refresh. Here each of the simulator's DNS servers serves its own copy of
 * each zone (records and serial), which a refresh reaches after that server's lag:
 * - a fixed lag, or a random one in [min, max] drawn per server and per refresh (DNSPLANE_SIM_PROPAGATION
 *   in demo mode); 0 (the default): at once, within the refresh call;
 * - `never`: this server keeps what it had (a server stuck on old data);
 * - held (`hold`): refreshes wait until `release`, so that a test decides exactly when a server
 *   publishes, without sleeping.
 * A copy never goes back: a refresh that lands after a later one is dropped. Until its first refresh a
 * server serves the zone as published.
 */
import type { StoredRecord, ZoneState } from './state.js';
import type { Lag } from './types.js';

export type { Lag };

/** What one server serves of a zone. */
export interface ServedZone {
  name: string;
  serial: number;
  published: readonly StoredRecord[];
}

/** A refresh that reached a server. */
export interface Delivery {
  server: string;
  zone: string;
  serial: number;
  /** ms since the epoch. */
  at: number;
}

interface ServerCopy {
  name: string;
  lag: Lag;
  held: boolean;
  /** Refreshes waiting for release (held), oldest first. */
  pending: ServedZone[];
  zones: Map<string, ServedZone>;
  timers: Set<NodeJS.Timeout>;
}

export class Propagation {
  private readonly servers: ServerCopy[];
  private readonly log: Delivery[] = [];

  constructor(names: readonly string[], lag: Lag = 0) {
    this.servers = names.map((name) => ({ name, lag, held: false, pending: [], zones: new Map(), timers: new Set() }));
  }

  /** The servers' names, in order (the zone's name servers). */
  get names(): string[] {
    return this.servers.map((s) => s.name);
  }

  /** Sets a server's lag (by name or index) for the refreshes to come; every server when omitted. */
  setLag(lag: Lag, server?: string | number): void {
    checkLag(lag);
    for (const s of this.pick(server)) s.lag = lag;
  }

  /** Refreshes wait for `release` on this server (every server when omitted). */
  hold(server?: string | number): void {
    for (const s of this.pick(server)) s.held = true;
  }

  /** Publishes on this server (every server when omitted) what waited, and lets later refreshes through. */
  release(server?: string | number): void {
    for (const s of this.pick(server)) {
      s.held = false;
      const waiting = s.pending.splice(0);
      for (const copy of waiting) this.deliver(s, copy);
    }
  }

  /** What `server` serves of `zone` (undefined: as published). */
  served(server: string | number, zone: ZoneState): ServedZone {
    const s = this.pick(server)[0]!;
    return s.zones.get(zone.name) ?? zone;
  }

  /** The serial `server` serves of `zone`. */
  servedSerial(server: string | number, zone: ZoneState): number {
    return this.served(server, zone).serial;
  }

  /** Refreshes that reached a server, in order. Copies. */
  deliveries(): Delivery[] {
    return this.log.map((d) => ({ ...d }));
  }

  /**
   * A refresh: `before` is what the zone served until now (each server keeps it until the refresh
   * reaches it), `zone` the zone as just published.
   */
  published(zone: ZoneState, before: ServedZone): void {
    const copy: ServedZone = { name: zone.name, serial: zone.serial, published: zone.published };
    for (const s of this.servers) {
      if (!s.zones.has(zone.name)) s.zones.set(zone.name, before);
      const lag = drawLag(s.lag);
      if (lag === 'never') continue;
      if (s.held) s.pending.push(copy);
      else if (lag === 0) this.deliver(s, copy);
      else {
        const timer = setTimeout(() => {
          s.timers.delete(timer);
          if (s.held) s.pending.push(copy);
          else this.deliver(s, copy);
        }, lag);
        timer.unref();
        s.timers.add(timer);
      }
    }
  }

  /** A zone removed: the servers forget it. */
  forget(zone: string): void {
    for (const s of this.servers) s.zones.delete(zone);
  }

  stop(): void {
    for (const s of this.servers) {
      for (const t of s.timers) clearTimeout(t);
      s.timers.clear();
    }
  }

  private deliver(s: ServerCopy, copy: ServedZone): void {
    const current = s.zones.get(copy.name);
    if (current && current.serial >= copy.serial) return;
    s.zones.set(copy.name, copy);
    this.log.push({ server: s.name, zone: copy.name, serial: copy.serial, at: Date.now() });
  }

  private pick(server?: string | number): ServerCopy[] {
    if (server === undefined) return this.servers;
    const s = typeof server === 'number' ? this.servers[server] : this.servers.find((x) => x.name === server);
    if (!s) throw new Error(`unknown name server ${String(server)}; the simulator's are ${this.names.join(', ')}`);
    return [s];
  }
}

function checkLag(lag: Lag): void {
  if (lag === 'never') return;
  const ok =
    typeof lag === 'number' ? Number.isFinite(lag) && lag >= 0 : Number.isFinite(lag.min) && Number.isFinite(lag.max) && lag.min >= 0 && lag.max >= lag.min;
  if (!ok) throw new Error(`propagation lag: expected milliseconds >= 0, a range {min, max} with 0 <= min <= max, or "never"; got ${JSON.stringify(lag)}`);
}

function drawLag(lag: Lag): number | 'never' {
  if (lag === 'never' || typeof lag === 'number') return lag;
  return Math.round(lag.min + Math.random() * (lag.max - lag.min));
}

/**
 * DNSPLANE_SIM_PROPAGATION's form: `0`, a duration (`5s`, `500ms`, `2m`) or a range `2s..8s`, each
 * server drawing its own lag per refresh. Throws a message naming the rule.
 */
export function parseLag(text: string): Lag {
  const t = text.trim();
  if (t === 'never') return 'never';
  const range = t.split('..');
  if (range.length === 2) {
    const lag = { min: parseMs(range[0]!), max: parseMs(range[1]!) };
    checkLag(lag);
    return lag;
  }
  return parseMs(t);
}

function parseMs(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!m) throw new Error(`expected 0, a duration (500ms, 5s, 2m) or a range (2s..8s), got ${JSON.stringify(text)}`);
  const n = Number(m[1]);
  if (m[2] === undefined && n !== 0) throw new Error(`a duration needs its unit (500ms, 5s, 2m), got ${JSON.stringify(text)}`);
  return Math.round(m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : m[2] === 's' ? n * 1000 : n);
}
