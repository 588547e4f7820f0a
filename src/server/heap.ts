/**
 * How far V8 lets this process's heap grow past what is live before a full collection
 * (DNSPLANE_HEAP_GROWTH). Left to itself, V8 grows a busy heap up to 4× what survived the last full
 * collection; a replica that keeps an estate's zones in memory (about 1.1 GB live at 20 zones of
 * 50,000 records, docs/records-and-reads.md) then peaks at 2–3 GiB of RSS for ~1 GB of data
 * (bench/README.md, "Heap growth"). With a fixed growth the peak is what is live times (1 + growth):
 * more frequent full collections, which V8 does mostly beside the loop (concurrent marking and
 * sweeping), for a peak the operator can size a container by.
 */
import v8 from 'node:v8';

/** V8's flag; a process started with it (node --heap-growing-percent=N) keeps the operator's own. */
const FLAG = '--heap-growing-percent';

export interface HeapGrowth {
  /** The growth in effect: a percentage, or 'v8' (V8's own, up to 4× what is live). */
  growth: number | 'v8';
  /** Where it comes from: this setting, or node's own flag given at start. */
  source: 'DNSPLANE_HEAP_GROWTH' | 'node flag';
}

/** The flag as node was started with it (its command line or NODE_OPTIONS), if it was. */
function startFlag(execArgv: readonly string[]): number | undefined {
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i]!.replaceAll('_', '-');
    if (arg.startsWith(`${FLAG}=`)) return Number(arg.slice(FLAG.length + 1));
    if (arg === FLAG && execArgv[i + 1] !== undefined) return Number(execArgv[i + 1]);
  }
  return undefined;
}

/**
 * Sets V8's heap growth to `percent` (undefined: V8's own), unless node was started with the flag
 * itself. V8 reads it each time it sets the next limit, so setting it at start, before the zones are
 * read, takes effect for the life of the process.
 */
export function applyHeapGrowth(percent: number | undefined, execArgv: readonly string[] = process.execArgv): HeapGrowth {
  const given = startFlag(execArgv);
  if (given !== undefined) return { growth: given > 0 ? given : 'v8', source: 'node flag' };
  if (percent === undefined) return { growth: 'v8', source: 'DNSPLANE_HEAP_GROWTH' };
  v8.setFlagsFromString(`${FLAG}=${percent}`);
  return { growth: percent, source: 'DNSPLANE_HEAP_GROWTH' };
}
