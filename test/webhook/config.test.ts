/**
 * DNSPLANE_WEBHOOK_LISTEN, and `dnsplane serve` starting and stopping the webhook listener with the API.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { InvalidInputError } from '../../src/dns/errors.js';
import { startHarness } from '../helpers/server.js';
import { MEDIA_TYPE } from '../helpers/external-dns.js';

describe('DNSPLANE_WEBHOOK_LISTEN', () => {
  it('defaults to 127.0.0.1:8888, takes host:port, "off" disables it', () => {
    expect(loadConfig({}).webhookListen).toEqual({ host: '127.0.0.1', port: 8888 });
    expect(loadConfig({ DNSPLANE_WEBHOOK_LISTEN: '0.0.0.0:9888' }).webhookListen).toEqual({ host: '0.0.0.0', port: 9888 });
    expect(loadConfig({ DNSPLANE_WEBHOOK_LISTEN: '[::1]:8888' }).webhookListen).toEqual({ host: '::1', port: 8888 });
    expect(loadConfig({ DNSPLANE_WEBHOOK_LISTEN: 'OFF' }).webhookListen).toBeUndefined();
  });

  it('gets an ephemeral port when the API has one (servers side by side in tests and benches)', () => {
    expect(loadConfig({ DNSPLANE_LISTEN: '127.0.0.1:0' }).webhookListen).toEqual({ host: '127.0.0.1', port: 0 });
    expect(loadConfig({ DNSPLANE_LISTEN: '127.0.0.1:0', DNSPLANE_WEBHOOK_LISTEN: '127.0.0.1:8899' }).webhookListen).toEqual({ host: '127.0.0.1', port: 8899 });
  });

  it('refuses a bad value, naming the variable', () => {
    expect(() => loadConfig({ DNSPLANE_WEBHOOK_LISTEN: '8888' })).toThrow(InvalidInputError);
    expect(() => loadConfig({ DNSPLANE_WEBHOOK_LISTEN: 'localhost:99999' })).toThrow(/^DNSPLANE_WEBHOOK_LISTEN: must be host:port/);
  });
});

describe('dnsplane serve and the webhook listener', () => {
  it('serves it beside the API (/healthz, negotiation), closes it with the server, or not at all when off', async () => {
    const h = await startHarness({ zones: { 'example.com': [] } });
    const url = h.webhookUrl;
    try {
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(url).not.toBe(h.server.url);
      const health = await fetch(`${url}/healthz`);
      expect([health.status, await health.text()]).toEqual([200, 'ok\n']);
      const anonymous = await fetch(url, { headers: { accept: MEDIA_TYPE } });
      expect(anonymous.status).toBe(401);
    } finally {
      await h.close();
    }
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();

    const off = await startHarness({ zones: { 'example.com': [] }, env: { DNSPLANE_WEBHOOK_LISTEN: 'off' } });
    try {
      expect(off.server.webhookUrl).toBeUndefined();
    } finally {
      await off.close();
    }
  });
});
