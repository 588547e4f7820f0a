/**
 * Shared bits of the webhook tests: a logger whose lines the test can read, and a central webhook
 * listener of its own (with that logger, a fresh metrics registry and chosen limits) on a harness's core.
 */
import pino, { type Logger } from 'pino';
import { Registry } from 'prom-client';
import { startCentralWebhook, type WebhookListener } from '../../src/webhook/index.js';
import type { Harness } from '../helpers/server.js';

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export function captureLogger(level = 'debug'): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const log = pino({ level }, { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) });
  return { log, lines };
}

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
