/**
 * The settings of visibility (core/probe/, issue 24), read for config/config.ts (which lists them in SETTINGS
 * with their help): DNSPLANE_AUTHORITATIVE_SERVERS, DNSPLANE_VISIBLE_TIMEOUT, DNSPLANE_PROBE_QUERIES,
 * DNSPLANE_PROBE_BACKOFF, and the demo simulator's DNSPLANE_SIM_PROPAGATION.
 */
import { InvalidInputError } from '../dns/errors.js';

export interface VisibilityConfig {
  /** DNSPLANE_AUTHORITATIVE_SERVERS: ask these for every zone; undefined: each zone's name servers from OVH. */
  authoritativeServers?: Array<{ host: string; port: number }>;
  /** DNSPLANE_VISIBLE_TIMEOUT: not answered by every server within this after its refresh: not_visible (or unverified). */
  timeoutMs: number;
  /** DNSPLANE_PROBE_QUERIES: DNS questions the prober has in flight at most (the process). */
  probeQueries: number;
  /** DNSPLANE_PROBE_BACKOFF: the wait between two rounds of a probe grows from min to max. */
  backoff: { minMs: number; maxMs: number };
  /** DNSPLANE_SIM_PROPAGATION (demo mode): each simulated name server's lag per refresh. */
  simPropagation: number | { min: number; max: number } | 'never';
}

type Duration = (value: string, field: string) => number;

export function visibilityConfig(get: (name: string) => string | undefined, duration: Duration): VisibilityConfig {
  const servers = get('DNSPLANE_AUTHORITATIVE_SERVERS');
  const queries = get('DNSPLANE_PROBE_QUERIES') ?? '16';
  if (!/^\d+$/.test(queries) || Number(queries) < 1) throw new InvalidInputError('DNSPLANE_PROBE_QUERIES', `must be a positive integer, got "${queries}"`);
  const backoff = range(get('DNSPLANE_PROBE_BACKOFF') ?? '1s..30s', 'DNSPLANE_PROBE_BACKOFF', duration);
  if (typeof backoff === 'number' || backoff.min <= 0)
    throw new InvalidInputError('DNSPLANE_PROBE_BACKOFF', 'must be a range like 1s..30s whose least is above 0');
  const sim = get('DNSPLANE_SIM_PROPAGATION') ?? '2s..8s';
  return {
    ...(servers !== undefined ? { authoritativeServers: parseServers(servers) } : {}),
    timeoutMs: duration(get('DNSPLANE_VISIBLE_TIMEOUT') ?? '15m', 'DNSPLANE_VISIBLE_TIMEOUT'),
    probeQueries: Number(queries),
    backoff: { minMs: backoff.min, maxMs: backoff.max },
    simPropagation: sim === 'never' ? 'never' : range(sim, 'DNSPLANE_SIM_PROPAGATION', duration),
  };
}

/** A duration, or a range `least..most` of two. */
function range(value: string, field: string, duration: Duration): number | { min: number; max: number } {
  const parts = value.split('..');
  if (parts.length === 1) return duration(value, field);
  const [min, max] = parts.map((p) => duration(p, field)) as [number, number];
  if (parts.length !== 2 || max < min) throw new InvalidInputError(field, `must be a duration or a range like 2s..8s (least first), got "${value}"`);
  return { min, max };
}

/** `host[:port]` (port 53 by default; an IPv6 address in brackets), comma-separated. */
export function parseServers(value: string, field = 'DNSPLANE_AUTHORITATIVE_SERVERS'): Array<{ host: string; port: number }> {
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) throw new InvalidInputError(field, 'must list at least one host:port');
  return items.map((item, i) => {
    const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+))(?::(\d{1,5}))?$/.exec(item);
    const port = m?.[3] === undefined ? 53 : Number(m[3]);
    if (!m || port < 1 || port > 65535)
      throw new InvalidInputError(`${field}[${i}]`, `must be host[:port] (port 1-65535, default 53; an IPv6 address in brackets), got "${item}"`);
    return { host: m[1] ?? m[2]!, port };
  });
}
