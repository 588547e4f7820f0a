/**
 * What metrics.ts measures, as its callers hand it over (the samples read at scrape time, the
 * outcomes counted), and seriesOn(): one dnsplane series declared in one line on a registry;
 * seriesTable() declares a whole table of them (metrics-table.ts: the series Metrics keeps).
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

/** One series as a table holds it (metrics-table.ts): its kind, name, help, label names and, for a histogram, its buckets. */
export type SeriesSpec = { name: string; help: string; labels: readonly string[] } & (
  | { kind: 'counter' | 'gauge' }
  | { kind: 'histogram'; buckets: readonly number[] }
);

/** The prom-client series a spec declares, typed by its label names. */
export type SeriesOf<S extends SeriesSpec> = S['kind'] extends 'histogram'
  ? Histogram<S['labels'][number]>
  : S['kind'] extends 'gauge'
    ? Gauge<S['labels'][number]>
    : Counter<S['labels'][number]>;

/**
 * Every series of `table` declared on the registry, in the table's order (the order /metrics lists
 * them in), each under its key. collect, per key of a counter, runs at each scrape as seriesOn's does.
 */
export function seriesTable<T extends Record<string, SeriesSpec>>(
  registry: Registry,
  table: T,
  collect: { [K in keyof T as T[K]['kind'] extends 'counter' ? K : never]?: (series: SeriesOf<T[K]>) => void } = {},
): { [K in keyof T]: SeriesOf<T[K]> } {
  const s = seriesOn(registry);
  const out: Record<string, Counter | Gauge | Histogram> = {};
  for (const [key, spec] of Object.entries(table)) {
    const hook = (collect as Record<string, ((series: Counter) => void) | undefined>)[key];
    out[key] =
      spec.kind === 'histogram'
        ? s.histogram(spec.name, spec.help, spec.labels, [...spec.buckets])
        : spec.kind === 'gauge'
          ? s.gauge(spec.name, spec.help, spec.labels)
          : s.counter(spec.name, spec.help, spec.labels, hook);
  }
  return out as { [K in keyof T]: SeriesOf<T[K]> };
}
