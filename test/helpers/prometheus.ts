/**
 * Reading Prometheus's text format as a test needs it: the value of one series, named with exactly
 * these labels.
 */

/** The value of the series `name` whose labels are exactly `labels` in `text`; undefined when absent. */
export function seriesValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels);
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (want.every(([k, v]) => have[k] === v) && Object.keys(have).length === want.length) return Number(m[3]);
  }
  return undefined;
}

/** One scrape of `${baseUrl}/metrics`, read with seriesValue. */
export async function scrape(baseUrl: string): Promise<(name: string, labels?: Record<string, string>) => number | undefined> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  return (name, labels) => seriesValue(text, name, labels);
}
