/**
 * What metrics/metrics.ts measures, as its callers hand it over (the samples read at scrape time, the
 * outcomes counted), and seriesOn(): one dnsplane series declared in one line on a registry;
 * seriesTable() declares a whole table of them (metrics/table.ts: the series Metrics keeps).
 * A leaf module, like metrics/metrics.ts: it imports nothing of dnsplane.
 */
import { Counter, Gauge, Histogram, type Metric, type Registry } from 'prom-client';

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

/**
 * A histogram of one label observed on a hot path (every request's RPC time): observe() is a map
 * lookup and a few additions, where prom-client's Histogram validates and hashes a labels object on
 * every call (about 3 % of a not-modified poll's server CPU). It registers itself as a prom-client
 * metric, answering get() and getForPromString() in Histogram's own shapes, so /metrics prints it as
 * prom-client prints a Histogram, byte for byte (test/metrics/keyed-histogram.test.ts holds the two
 * side by side).
 */
export class KeyedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly byKey = new Map<string, { buckets: number[]; sum: number; count: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly label: string,
    private readonly upperBounds: readonly number[],
    registry: Pick<Registry, 'registerMetric'>,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  observe(key: string, value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    let e = this.byKey.get(key);
    if (e === undefined) this.byKey.set(key, (e = { buckets: this.upperBounds.map(() => 0), sum: 0, count: 0 }));
    for (let i = 0; i < this.upperBounds.length; i++) {
      if (value <= this.upperBounds[i]!) {
        e.buckets[i]!++;
        break;
      }
    }
    e.sum += value;
    e.count++;
  }

  reset(): void {
    this.byKey.clear();
  }

  /** As Histogram.getForPromString(): per key its cumulative buckets, +Inf, sum and count, the key as a shared label. */
  async getForPromString(): Promise<HistogramData> {
    const values: HistogramValue[] = [];
    for (const [key, e] of this.byKey) {
      const sharedLabels = { [this.label]: key };
      let acc = 0;
      for (let i = 0; i < this.upperBounds.length; i++) {
        acc += e.buckets[i]!;
        values.push({ labels: { le: this.upperBounds[i]! }, sharedLabels, value: acc, metricName: `${this.name}_bucket`, exemplar: null });
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels, value: e.count, metricName: `${this.name}_bucket`, exemplar: null });
      values.push({ labels: {}, sharedLabels, value: e.sum, metricName: `${this.name}_sum`, exemplar: undefined });
      values.push({ labels: {}, sharedLabels, value: e.count, metricName: `${this.name}_count`, exemplar: undefined });
    }
    return { name: this.name, help: this.help, type: 'histogram', values, aggregator: 'sum' };
  }

  /** As Histogram.get(): the same values, the key among each value's labels. */
  async get(): Promise<HistogramData> {
    const data = await this.getForPromString();
    data.values = data.values.map(({ sharedLabels, ...rest }) => ({ ...rest, labels: { ...rest.labels, ...sharedLabels } }));
    return data;
  }
}

/** One value of a histogram as prom-client's registry reads it (Histogram's own shape). */
interface HistogramValue {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName: string;
  /** null on buckets, undefined on sum and count: as Histogram without exemplars. */
  exemplar: null | undefined;
}

interface HistogramData {
  name: string;
  help: string;
  type: 'histogram';
  values: HistogramValue[];
  aggregator: 'sum';
}

/** One series as a table holds it (metrics/table.ts): its kind, name, help, label names and, for a histogram, its buckets. */
export type SeriesSpec = { name: string; help: string; labels: readonly string[] } & (
  | { kind: 'counter' | 'gauge' }
  | { kind: 'histogram'; buckets: readonly number[] }
  | { kind: 'keyedHistogram'; labels: readonly [string]; buckets: readonly number[] }
);

/** The prom-client series a spec declares, typed by its label names. */
export type SeriesOf<S extends SeriesSpec> = S['kind'] extends 'keyedHistogram'
  ? KeyedHistogram
  : S['kind'] extends 'histogram'
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
  const out: Record<string, Counter | Gauge | Histogram | KeyedHistogram> = {};
  for (const [key, spec] of Object.entries(table)) {
    const hook = (collect as Record<string, ((series: Counter) => void) | undefined>)[key];
    out[key] =
      spec.kind === 'keyedHistogram'
        ? new KeyedHistogram(spec.name, spec.help, spec.labels[0], spec.buckets, registry)
        : spec.kind === 'histogram'
          ? s.histogram(spec.name, spec.help, spec.labels, [...spec.buckets])
          : spec.kind === 'gauge'
            ? s.gauge(spec.name, spec.help, spec.labels)
            : s.counter(spec.name, spec.help, spec.labels, hook);
  }
  return out as { [K in keyof T]: SeriesOf<T[K]> };
}

/**
 * `read`, shared by the gauges one scrape collects (the registry starts every collect in one turn):
 * while a read is under way, its callers share it; the next scrape reads again.
 */
export function onePerScrape<T>(read: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () =>
    (pending ??= read().finally(() => {
      pending = undefined;
    }));
}
