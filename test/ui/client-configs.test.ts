/**
 * The console's client configurations (src/ui/public/client-configs.js, plain JS the browser loads)
 * are the CLI's (src/cli/tsig-config.ts, src/cli/ovh-key-config.ts), line for line, for the same key:
 * every TSIG algorithm, acme-only or not, a tenant of some zones or of every zone, a server given as a
 * name, an IPv4 or an IPv6 address, or a placeholder; OVH keys with an endpoint or a placeholder.
 */
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { renderOvhKeyConfigs, type OvhApiEndpoint, type OvhKeyForConfig } from '../../src/cli/ovh-key-config.js';
import { renderTsigConfigs, type DnsServer, type KeyForConfig } from '../../src/cli/tsig-config.js';
import { TSIG_ALGORITHMS } from '../../src/core/tsig-keys.js';

interface Block { tool: string; title: string; text?: string; unsupported?: string }
interface ConsoleConfigs {
  ipVersion(host: string): number;
  tsigConfigBlocks(k: KeyForConfig, s: DnsServer): { note: string; blocks: Block[] };
  ovhKeyConfigBlocks(k: OvhKeyForConfig, e: OvhApiEndpoint): { note: string; blocks: Block[] };
}

// A plain JS module of the console's, loaded as the browser loads it (no types of its own).
const MODULE = pathToFileURL('src/ui/public/client-configs.js').href;
const load = async () => (await import(MODULE)) as ConsoleConfigs;

/** The CLI's rendering rebuilt from the console's blocks (the note line aside). */
function asCliLines({ blocks }: { blocks: Block[] }): string[] {
  return blocks.flatMap((b) => ['', `=== ${b.title} ===`, b.text ?? `(not for this key: ${b.unsupported})`]);
}

describe('the console\'s client configurations are the CLI\'s', () => {
  it('TSIG: every algorithm, scope, zone list and kind of server', async () => {
    const c = await load();
    const servers: DnsServer[] = [
      { host: 'dns.example.net', port: 53, source: '--server' },
      { host: '192.0.2.53', port: 5353, source: 'DNSPLANE_DNS_ADVERTISE' },
      { host: '2001:db8::53', port: 53, source: 'DNSPLANE_DNS_LISTEN' },
      { host: 'REPLACE_ME_DNS_HOST', port: 53, source: 'placeholder' },
    ];
    let compared = 0;
    for (const algorithm of TSIG_ALGORITHMS) {
      for (const acmeOnly of [false, true]) {
        for (const zones of [['example.test', 'other.test'], []]) {
          for (const s of servers) {
            const k: KeyForConfig = { name: 'cluster1.team-a.dnsplane', algorithm, secret: 'c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0IQ==', tenant: 'Team_A', zones, acmeOnly };
            const mine = c.tsigConfigBlocks(k, s);
            const cli = renderTsigConfigs(k, s);
            expect(asCliLines(mine)).toEqual(cli.slice(1));
            if (s.source !== 'placeholder') expect(mine.note).toBe(cli[0]);
            compared++;
          }
        }
      }
    }
    expect(compared).toBe(TSIG_ALGORITHMS.length * 2 * 2 * servers.length);
  });

  it('OVH keys: with an endpoint and with the placeholder, for a tenant of some zones or of every zone', async () => {
    const c = await load();
    for (const e of [{ url: 'https://dnsplane.example.net/ovh/1.0', source: 'DNSPLANE_OVH_API_ADVERTISE' }, { url: 'https://REPLACE_ME_DNSPLANE_HOST/ovh/1.0', source: 'placeholder' }]) {
      for (const zones of [['example.test'], []]) {
        const k: OvhKeyForConfig = { applicationKey: 'AbCdEf0123456789', applicationSecret: 's3cr3tS3cr3tS3cr3tS3cr3tS3cr3t00', consumerKey: 'ck0123456789abcdef0123456789abcd', tenant: 'team-a', zones };
        const mine = c.ovhKeyConfigBlocks(k, e);
        const cli = renderOvhKeyConfigs(k, e);
        expect(asCliLines(mine)).toEqual(cli.slice(1));
        if (e.source !== 'placeholder') expect(mine.note).toBe(cli[0]);
      }
    }
  });

  it('tells an IPv4 or IPv6 address from a name as node:net does', async () => {
    const { isIP } = await import('node:net');
    const c = await load();
    for (const host of ['192.0.2.1', '255.255.255.255', '256.1.1.1', '01.2.3.4', '::', '::1', '2001:db8::53', '::ffff:192.0.2.1', 'fe80::1:2:3:4', 'dns.example.net', 'REPLACE_ME_DNS_HOST', 'a:b', '1.2.3', '']) {
      expect([host, c.ipVersion(host)]).toEqual([host, isIP(host)]);
    }
  });
});
