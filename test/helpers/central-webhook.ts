/**
 * A central webhook listener of a test's own on a harness's core: with a logger whose lines the test
 * reads, a fresh metrics registry and chosen limits.
 */
import { Registry } from 'prom-client';
import { startCentralWebhook, type WebhookListener } from '../../src/webhook/index.js';
import { captureLogger, type LogLine } from './log-capture.js';
import type { Harness } from './server.js';

export interface TestWebhook {
  listener: WebhookListener;
  lines: LogLine[];
  registry: Registry;
  /** The URL external-dns would be given for this tenant. */
  url(tenant: string, token: string): string;
  /** One series' value, by labels, from the registry ('' when absent). */
  metric(name: string, labels: Record<string, string>): Promise<number | undefined>;
  close(): Promise<void>;
}

export async function centralWebhook(h: Harness, opts: { maxBodyBytes?: number; deadlineMs?: number } = {}): Promise<TestWebhook> {
  const { log, lines } = captureLogger();
  const registry = new Registry();
  const listener = await startCentralWebhook(h.server.ctx, { listen: { host: '127.0.0.1', port: 0 }, log, registry, ...opts });
  return {
    listener,
    lines,
    registry,
    url(tenant, token) {
      const u = new URL(listener.url);
      u.username = tenant;
      u.password = token;
      return u.toString();
    },
    async metric(name, labels) {
      const m = await registry.getSingleMetric(name)?.get();
      const v = m?.values.find((x) => Object.entries(labels).every(([k, val]) => String(x.labels[k]) === val));
      return v?.value;
    },
    close: () => listener.close(),
  };
}
