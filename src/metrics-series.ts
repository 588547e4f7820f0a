/**
 * What metrics.ts measures, as its callers hand it over (the samples read at scrape time, the
 * outcomes counted), and seriesOn(): one dnsplane series declared in one line on a registry.
 * A leaf module, like metrics.ts: it imports nothing of dnsplane.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** One checked target, as the target_health table holds it (core/health/). */
export interface HealthSample {
  zone: string;
  name: string;
  target: string;
  passing: boolean;
}

/** What the OVH client reports per HTTP call (structurally the client's OvhCallInfo). */
export interface OvhCallSample {
  method: string;
  route: string;
  status: number;
  durationMs: number;
  waitedMs: number;
  attempt: number;
}

export interface ZoneSample {
  zone: string;
  generation: bigint | number;
  records: number;
}

export interface InFlightSample {
  zone: string;
  count: number;
  oldestSeconds: number;
}

export type DriftStatus = 'unchanged' | 'changed' | 'busy' | 'skipped';

export type ApplyOutcome = 'applied' | 'no_changes' | 'stale' | 'failed' | 'dry_run' | 'refused' | 'error';
export type CacheReadResult = 'hit' | 'not_modified' | 'miss';

export const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Each series on one line: the options every dnsplane series repeats (registry, label names, buckets). */
export function seriesOn(registry: Registry) {
  const registers = [registry];
  return {
    /** collect, when given, runs at each scrape (to add what was counted elsewhere). */
    counter: <L extends string = string>(name: string, help: string, labelNames: readonly L[] = [], collect?: (c: Counter<L>) => void) =>
      new Counter<L>({
        name,
        help,
        labelNames,
        registers,
        ...(collect && {
          collect(this: Counter<L>) {
            collect(this);
          },
        }),
      }),
    histogram: <L extends string = string>(name: string, help: string, labelNames: readonly L[], buckets: number[]) =>
      new Histogram<L>({ name, help, labelNames, buckets, registers }),
    /** collect, when given, runs at each scrape and sets the gauge's values then. */
    gauge: <L extends string = string>(name: string, help: string, labelNames: readonly L[] = [], collect?: (g: Gauge<L>) => Promise<void>) =>
      new Gauge<L>({
        name,
        help,
        labelNames,
        registers,
        ...(collect && {
          collect(this: Gauge<L>) {
            return collect(this);
          },
        }),
      }),
  };
}
