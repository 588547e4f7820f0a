/**
 * The visibility settings (src/config/visibility.ts through loadConfig): defaults, the forms each
 * takes, and bad values refused naming the setting and the rule.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';

const BASE = { DNSPLANE_DEMO: 'true' };
const visibility = (env: Record<string, string>) => loadConfig({ ...BASE, ...env }).visibility;

describe('visibility settings', () => {
  it('defaults: the zone name servers from OVH, 15 minutes, 16 questions, 1s..30s, the demo at 2s..8s', () => {
    expect(visibility({})).toEqual({ timeoutMs: 900_000, probeQueries: 16, backoff: { minMs: 1000, maxMs: 30_000 }, simPropagation: { min: 2000, max: 8000 } });
  });

  it('reads servers (port 53 by default, IPv6 in brackets), durations, ranges and never', () => {
    expect(
      visibility({
        DNSPLANE_AUTHORITATIVE_SERVERS: '192.0.2.53:5353, ns1.example.net,[2001:db8::53]:53',
        DNSPLANE_VISIBLE_TIMEOUT: '2m',
        DNSPLANE_PROBE_QUERIES: '4',
        DNSPLANE_PROBE_BACKOFF: '500ms..10s',
        DNSPLANE_SIM_PROPAGATION: 'never',
      }),
    ).toEqual({
      authoritativeServers: [
        { host: '192.0.2.53', port: 5353 },
        { host: 'ns1.example.net', port: 53 },
        { host: '2001:db8::53', port: 53 },
      ],
      timeoutMs: 120_000,
      probeQueries: 4,
      backoff: { minMs: 500, maxMs: 10_000 },
      simPropagation: 'never',
    });
    expect(visibility({ DNSPLANE_SIM_PROPAGATION: '0' }).simPropagation).toBe(0);
  });

  it('refuses bad values, naming the setting and the rule', () => {
    expect(() => visibility({ DNSPLANE_AUTHORITATIVE_SERVERS: '192.0.2.53:99999' })).toThrow(/DNSPLANE_AUTHORITATIVE_SERVERS\[0\].*host\[:port\]/);
    expect(() => visibility({ DNSPLANE_PROBE_QUERIES: '0' })).toThrow(/DNSPLANE_PROBE_QUERIES.*positive integer/);
    expect(() => visibility({ DNSPLANE_PROBE_BACKOFF: '30s..1s' })).toThrow(/DNSPLANE_PROBE_BACKOFF.*least first/);
    expect(() => visibility({ DNSPLANE_PROBE_BACKOFF: '0..1s' })).toThrow(/DNSPLANE_PROBE_BACKOFF.*above 0/);
    expect(() => visibility({ DNSPLANE_VISIBLE_TIMEOUT: 'soon' })).toThrow(/DNSPLANE_VISIBLE_TIMEOUT.*duration/);
    expect(() => visibility({ DNSPLANE_SIM_PROPAGATION: '8s..2s' })).toThrow(/DNSPLANE_SIM_PROPAGATION/);
  });
});
