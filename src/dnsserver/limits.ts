/**
 * Bounds on what anonymous senders cost the DNS door:
 * - SourceLimiter: a token bucket per source (an IPv4 address, an IPv6 /64) for unsigned UDP messages
 *   and failed authentications over UDP; once spent, messages from that source are dropped unanswered
 *   (answering them would make the port an amplifier, or a reflector towards a forged source). At most 10,000
 *   sources are tracked; the least recently seen go first.
 * - Notices: what is dropped or refused without a tenant to name (malformed, rate limited, bad
 *   signatures, unsigned writes) is logged as one summary line per 10 s with counts and the busiest
 *   sources, never as a line per message; and failures of the server's own (a zone that cannot be
 *   read from OVH, the database away) at most 5 lines per 10 s, the rest counted in the summary —
 *   every query of a flood would otherwise log its own.
 */
import type { Logger } from 'pino';
import { KeyedTokenBucket } from '../lib/token-bucket.js';
import { hostOf } from '../net/address.js';

/** The bucket key of an address: IPv4 as is, IPv6 by its /64 (one host holds a whole /64). */
export function sourceKey(peer: string): string {
  const address = hostOf(peer);
  if (!address.includes(':')) return address;
  const [head = '', tail = ''] = address.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::') ? [...left, ...new Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

export class SourceLimiter {
  private readonly bucket: KeyedTokenBucket;

  constructor(
    perSecond: number,
    burst: number,
    private readonly maxSources = 10_000,
  ) {
    this.bucket = new KeyedTokenBucket(perSecond, burst);
  }

  /** Whether `address` may send one more message now (spends a token). */
  take(address: string, now = performance.now()): boolean {
    const { allowed } = this.bucket.take(sourceKey(address), now);
    const { buckets } = this.bucket;
    while (buckets.size > this.maxSources) buckets.delete(buckets.keys().next().value!);
    return allowed;
  }

  get size(): number {
    return this.bucket.buckets.size;
  }
}

export class Notices {
  private counts = new Map<string, number>();
  private errors = 0;
  private sources = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: Logger,
    private readonly everyMs = 10_000,
  ) {}

  note(reason: string, source: string): void {
    this.counts.set(reason, (this.counts.get(reason) ?? 0) + 1);
    const key = sourceKey(source);
    // Bounded: once 1,000 sources are counted in a window, new ones are counted under "other".
    const at = this.sources.has(key) || this.sources.size < 1000 ? key : 'other';
    this.sources.set(at, (this.sources.get(at) ?? 0) + 1);
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), this.everyMs);
      this.timer.unref();
    }
  }

  /** A failure of the server's own: logged, unless 5 were logged in this window (then counted). */
  error(fields: Record<string, unknown>, message: string, source: string): void {
    if (this.errors++ < 5) this.log.error(fields, message);
    else this.note('errors not logged one by one', source);
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), this.everyMs);
      this.timer.unref();
    }
  }

  flush(): void {
    this.errors = 0;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.counts.size === 0) return;
    const busiest = [...this.sources.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5);
    this.log.warn(
      { counts: Object.fromEntries(this.counts), sources: Object.fromEntries(busiest), windowSeconds: this.everyMs / 1000 },
      'dns: messages dropped or refused without a key (summary)',
    );
    this.counts = new Map();
    this.sources = new Map();
  }

  close(): void {
    this.flush();
  }
}
