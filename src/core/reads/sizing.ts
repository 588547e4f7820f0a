/**
 * What a replica keeps of its zones, in bytes (docs/records-and-reads.md, "What a replica keeps per
 * zone"): the per-item estimates the read cache accounts with (core/reads/read-cache.ts; a base's own
 * are beside it, core/reads/zone-base.ts baseBytes), the default bound that follows from the heap, and
 * what an estate of zones would take against a bound — what the start log says; the cache's options
 * and counts.
 */
import { getHeapStatistics } from 'node:v8';
import type { ZoneAnswers } from './answers.js';

/** The bound of a cache made without one (tests), and the least the default bound from the heap is. */
export const DEFAULT_READ_CACHE_BYTES = 128 * 2 ** 20;
/** The default bound's share of V8's heap limit: the rest is the process's own, and what requests hold while answered. */
export const READ_CACHE_HEAP_SHARE = 0.25;

/**
 * DNSPLANE_READ_CACHE_BYTES when it is not set: 25% of V8's heap limit (what node's
 * --max-old-space-size says, or what node chose from the machine's or the container's memory), at
 * least DEFAULT_READ_CACHE_BYTES.
 */
export function defaultReadCacheBytes(heapLimit = getHeapStatistics().heap_size_limit): number {
  return Math.max(DEFAULT_READ_CACHE_BYTES, Math.floor(heapLimit * READ_CACHE_HEAP_SHARE));
}

/**
 * What the managed zones would take in the cache read whole (their base and answers, at the
 * per-record estimate of a build; encodings come on top as they are asked for), and how many of them
 * the bound holds, the smallest first: what the start log says, so that an operator sizes a replica
 * before it thrashes.
 */
export function estateFit(maxBytes: number, recordCounts: readonly number[]): { bytes: number; zones: number; fit: number } {
  const sizes = recordCounts.map((n) => n * BUILD_BYTES_PER_RECORD).sort((a, b) => a - b);
  let fit = 0;
  let used = 0;
  for (const s of sizes) {
    if (used + s > maxBytes) break;
    used += s;
    fit++;
  }
  return { bytes: sizes.reduce((a, b) => a + b, 0), zones: sizes.length, fit };
}

/**
 * What a zone's build takes per record until it is accounted as what it is: its base and its answers
 * (the estimates beside baseBytes, core/reads/zone-base.ts, and ANSWER_BYTES_PER_ENDPOINT).
 */
export const BUILD_BYTES_PER_RECORD = 700;

/** An endpoint with its owner label, and its reference in its owner's list (the estimate beside baseBytes, core/reads/zone-base.ts). */
const ANSWER_BYTES_PER_ENDPOINT = 90;

/** What a base's answers are accounted with. */
export function answersBytes(a: ZoneAnswers): number {
  // The endpoint objects of `all` (their strings are the base's) and each owner's list.
  return a.all.length * ANSWER_BYTES_PER_ENDPOINT + a.byOwner.size * 100;
}

/** Counts for tests, the bench and metrics. */
export interface ReadCacheStats {
  /** Bytes accounted now (never above maxBytes once an insertion returns) and the bound. */
  bytes: number;
  maxBytes: number;
  entries: number;
  /**
   * Bases made (read whole from Postgres, or patched from the previous generation's: basePatches of
   * them), answers cut from a base (answerPatches of them from the previous generation's), encodings made.
   */
  baseBuilds: number;
  basePatches: number;
  answerBuilds: number;
  answerPatches: number;
  encodes: number;
  /** Items dropped to stay within the bound. */
  evictions: number;
}

export interface ReadCacheOptions {
  /** Bytes kept at most (bases, answers, encodings); least recently used dropped first. Default DEFAULT_READ_CACHE_BYTES. */
  maxBytes?: number;
  /** Called at each fresh read of the zones' states (metrics). */
  onZoneStatesRead?: () => void;
  /**
   * Whether the replica hears every NOTIFY dnsplane_zone now (store.Listener.live): the zones' states
   * are then kept in memory (ZoneStateSource). Without it, every caller's states are a fresh read.
   */
  listening?: () => boolean;
}
