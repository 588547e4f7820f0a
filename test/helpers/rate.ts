/**
 * The rate check the rate-limit tests share: at `ratePerSecond`, any `k` consecutive calls (in time
 * order) must span at least (k - 1) / rate seconds — no burst. Give it the times where the limiter
 * decides (its grant times, on its own clock): there the bound holds exactly, whatever the load does
 * to the delivery of the calls afterwards. Only floating-point rounding is allowed for (1e-6 ms).
 */
export function rateViolations(times: readonly number[], ratePerSecond: number, k = 6): string[] {
  const sorted = [...times].sort((a, b) => a - b);
  const minSpan = ((k - 1) * 1000) / ratePerSecond - 1e-6;
  const out: string[] = [];
  for (let i = 0; i + k - 1 < sorted.length; i++) {
    const span = sorted[i + k - 1]! - sorted[i]!;
    if (span < minSpan) out.push(`calls ${i + 1}..${i + k} within ${span.toFixed(3)} ms (at ${ratePerSecond}/s they need ${(minSpan + 1e-6).toFixed(0)} ms)`);
  }
  return out;
}
