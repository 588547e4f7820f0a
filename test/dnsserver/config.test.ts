/**
 * DNSPLANE_DNS_LISTEN and DNSPLANE_DNS_RATE, and the DNS door starting and stopping with the server.
 */
import dgram from 'node:dgram';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { RCODE, TYPE } from '../../src/dns/wire/index.js';
import { startHarness } from '../helpers/server.js';
import { query, tcpExchange, udpExchange } from '../helpers/dns-client.js';

const OVH = { OVH_APPLICATION_KEY: 'a', OVH_APPLICATION_SECRET: 'b', OVH_CONSUMER_KEY: 'c' };

describe('DNSPLANE_DNS_LISTEN', () => {
  it('is off unless set; host:port; "off"; in demo mode on, on a kept port', () => {
    expect(loadConfig(OVH).dnsListen).toBeUndefined();
    expect(loadConfig({ ...OVH, DNSPLANE_DNS_LISTEN: '0.0.0.0:5353' }).dnsListen).toEqual({ host: '0.0.0.0', port: 5353 });
    expect(loadConfig({ ...OVH, DNSPLANE_DNS_LISTEN: 'off' }).dnsListen).toBeUndefined();
    expect(loadConfig({}).dnsListen).toBe('demo');
    expect(loadConfig({ DNSPLANE_DNS_LISTEN: 'off' }).dnsListen).toBeUndefined();
    expect(loadConfig({ DNSPLANE_DNS_LISTEN: '127.0.0.1:0' }).dnsListen).toEqual({ host: '127.0.0.1', port: 0 });
    expect(loadConfig(OVH).dnsRate).toBe(50);
    expect(loadConfig({ ...OVH, DNSPLANE_DNS_RATE: '5' }).dnsRate).toBe(5);
    expect(loadConfig(OVH).dnsUpdateWaitMs).toBe(0);
    expect(loadConfig({ ...OVH, DNSPLANE_DNS_UPDATE_WAIT: 'off' }).dnsUpdateWaitMs).toBe(0);
    expect(loadConfig({ ...OVH, DNSPLANE_DNS_UPDATE_WAIT: '120s' }).dnsUpdateWaitMs).toBe(120_000);
    expect(loadConfig(OVH).dnsClientTimeoutMs).toBe(2_000);
    expect(loadConfig({ ...OVH, DNSPLANE_DNS_CLIENT_TIMEOUT: '300s' }).dnsClientTimeoutMs).toBe(300_000);
  });

  it('refuses a bad value, naming the variable', () => {
    expect(() => loadConfig({ ...OVH, DNSPLANE_DNS_LISTEN: '53' })).toThrow(/^DNSPLANE_DNS_LISTEN: must be host:port/);
    expect(() => loadConfig({ ...OVH, DNSPLANE_DNS_RATE: '0' })).toThrow(/^DNSPLANE_DNS_RATE: must be a positive number/);
    expect(() => loadConfig({ ...OVH, DNSPLANE_DNS_UPDATE_WAIT: 'soon' })).toThrow(
      /^DNSPLANE_DNS_UPDATE_WAIT: must be a duration like 500ms, 30s, 15m, 1h or 7d, got "soon"$/,
    );
    expect(() => loadConfig({ ...OVH, DNSPLANE_DNS_CLIENT_TIMEOUT: 'later' })).toThrow(/^DNSPLANE_DNS_CLIENT_TIMEOUT: must be a duration/);
  });
});

describe('dnsplane serve and the DNS door', () => {
  it('answers on UDP and TCP beside the API, stops with the server, is absent when off', async () => {
    // A keyring that cannot open its secrets (DNSPLANE_SECRETS_KEY missing or another): SERVFAIL, logged.
    const broken = { find: () => Promise.reject(new Error('the secret cannot be opened')), cached: () => undefined, noteUsed: () => undefined };
    const h = await startHarness({ zones: { 'example.com': [] }, env: { DNSPLANE_DNS_LISTEN: '127.0.0.1:0' }, dnsKeyring: broken });
    const port = h.server.dns!.port;
    try {
      expect((await udpExchange(port, query('example.com', TYPE.SOA)))?.parsed.message.header.rcode).toBe(RCODE.NOERROR);
      const key = { name: 'k.keys.dnsplane', algorithm: 'hmac-sha256' as const, secret: Buffer.alloc(32) };
      expect((await tcpExchange(port, query('example.com', TYPE.SOA, { key })))[0]?.parsed.message.header.rcode).toBe(RCODE.SERVFAIL);
    } finally {
      await h.close();
    }
    // The port is free again: both protocols were closed.
    const again = dgram.createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      again.once('error', reject);
      again.bind(port, '127.0.0.1', resolve);
    });
    again.close();
    const off = await startHarness({ zones: { 'example.com': [] } });
    try {
      expect(off.server.dns).toBeUndefined();
    } finally {
      await off.close();
    }
  });
});
