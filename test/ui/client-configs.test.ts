/**
 * src/ui/public/client-configs.js is the one source of the client configurations (the console loads it
 * as it is; cli/key-configs.ts imports it through client-configs.d.ts): the
 * .d.ts declares exactly what the module exports, each of the kind it says; the console serves the
 * module and never the .d.ts; and the module tells an IPv4 or IPv6 address from a name as node:net does.
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONSOLE_DIR, loadConsoleAssets } from '../../src/ui/static.js';

const MODULE = pathToFileURL('src/ui/public/client-configs.js').href;
const load = async () => (await import(MODULE)) as Record<string, unknown>;

describe('client-configs.js, the one source of the client configurations', () => {
  it('exports exactly what its .d.ts declares, each a function or a constant of the declared type', async () => {
    const dts = readFileSync('src/ui/public/client-configs.d.ts', 'utf8');
    const declared = new Map([...dts.matchAll(/^export (function|const) (\w+)(?:: (\w+))?/gm)].map((m) => [m[2]!, m[1] === 'function' ? 'function' : m[3]!]));
    const mod = await load();
    expect(
      Object.fromEntries(
        Object.keys(mod)
          .sort()
          .map((k) => [k, typeof mod[k]]),
      ),
    ).toEqual(Object.fromEntries([...declared].sort(([a], [b]) => (a < b ? -1 : 1))));
  });

  it('is served by the console (the same bytes the command line imports); its .d.ts is not', () => {
    const assets = loadConsoleAssets(CONSOLE_DIR);
    expect(assets.get('client-configs.js')?.body.equals(readFileSync('src/ui/public/client-configs.js'))).toBe(true);
    expect(assets.has('client-configs.d.ts')).toBe(false);
    expect([...assets.keys()].filter((k) => k.endsWith('.ts'))).toEqual([]);
  });

  it('tells an IPv4 or IPv6 address from a name as node:net does', async () => {
    const { isIP } = await import('node:net');
    const { ipVersion } = (await load()) as { ipVersion: (h: string) => number };
    for (const host of [
      '192.0.2.1',
      '255.255.255.255',
      '256.1.1.1',
      '01.2.3.4',
      '::',
      '::1',
      '2001:db8::53',
      '::ffff:192.0.2.1',
      'fe80::1:2:3:4',
      'dns.example.net',
      'REPLACE_ME_DNS_HOST',
      'a:b',
      '1.2.3',
      '',
    ]) {
      expect([host, ipVersion(host)]).toEqual([host, isIP(host)]);
    }
  });
});
