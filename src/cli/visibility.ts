/**
 * Where a publish stands on the zone's authoritative servers, as a person reads it (`dnsplane apply
 * --wait`, `dnsplane journal show`, `dnsplane nsm publish --wait`), and the `--wait` options those
 * commands share. Pure: a Visibility message in, lines out (docs/propagation.md says what the states
 * mean).
 */
import { durationFromMs, timestampMs, type Timestamp } from '@bufbuild/protobuf/wkt';
import { parseDuration } from '../config/config.js';
import { InvalidInputError } from '../dns/errors.js';
import { VisibilityState, Wait, type Visibility } from '../gen/dnsplane/v1/visibility_pb.js';

export const WAIT_OPTIONS = {
  wait: { type: 'boolean' },
  'wait-timeout': { type: 'string' },
} as const;

export const WAIT_OPTIONS_HELP = `  --wait                answer once the change is visible on the zone's authoritative servers (or
                        final otherwise: not visible, unverified, superseded), or at --wait-timeout
                        with the state so far; the change is applied either way
  --wait-timeout D      the longest wait, e.g. 90s or 10m (at most 1h) [5m]`;

/** Exit code of a command that waited and whose change is applied but not (yet) shown visible. */
export const EXIT_NOT_VISIBLE = 2;

/** The wait fields of a request, from `--wait` and `--wait-timeout`. */
export function waitFromArgs(values: { wait?: boolean; 'wait-timeout'?: string }): { wait: Wait; waitTimeout?: ReturnType<typeof durationFromMs> } {
  const timeout = values['wait-timeout'];
  if (timeout !== undefined && !values.wait) throw new InvalidInputError('--wait-timeout', 'goes with --wait');
  if (!values.wait) return { wait: Wait.UNSPECIFIED };
  if (timeout === undefined) return { wait: Wait.VISIBLE };
  const ms = parseDuration(timeout, '--wait-timeout');
  if (ms <= 0 || ms > 3_600_000) throw new InvalidInputError('--wait-timeout', `must be more than 0 and at most 1h, got "${timeout}"`);
  return { wait: Wait.VISIBLE, waitTimeout: durationFromMs(ms) };
}

/**
 * Whether a publish is shown visible. A superseded one is not: the servers answer a later change of
 * the same names, not this one.
 */
export function isVisible(v: Visibility | undefined): boolean {
  return v?.state === VisibilityState.VISIBLE;
}

/** "2026-12-02 01:02:03.456Z". */
export function fmtTimestamp(ts: Timestamp | undefined): string {
  return ts ? new Date(timestampMs(ts)).toISOString().replace('T', ' ') : '—';
}

/** A delay as people read it: "4.2 s", "2 min 05 s". */
export function fmtDelay(ms: number): string {
  if (ms < 60_000) return `${(Math.max(ms, 0) / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/** How long after the publish a time came, or undefined when either is unset. */
export function delayOf(v: Visibility, at: Timestamp | undefined): number | undefined {
  return at && v.publishedAt ? timestampMs(at) - timestampMs(v.publishedAt) : undefined;
}

const MAX_NAMES = 8;

function names(list: readonly string[]): string {
  return list.length <= MAX_NAMES ? list.join(', ') : `${list.slice(0, MAX_NAMES).join(', ')} and ${list.length - MAX_NAMES} more`;
}

/** The state in one line. */
export function visibilityHeadline(v: Visibility): string {
  const published = `published ${fmtTimestamp(v.publishedAt)}`;
  switch (v.state) {
    case VisibilityState.VISIBLE: {
      const delay = delayOf(v, v.visibleAt);
      return `visible on every authoritative server ${delay === undefined ? '' : `${fmtDelay(delay)} after publishing `}(${published}, visible ${fmtTimestamp(v.visibleAt)})`;
    }
    case VisibilityState.PUBLISHED:
      return `${published}; not yet visible on every authoritative server`;
    case VisibilityState.NOT_VISIBLE:
      return `NOT visible (${published})${v.reason ? `: ${v.reason}` : ''}`;
    case VisibilityState.UNVERIFIED:
      return `unverified (${published})${v.reason ? `: ${v.reason}` : ''}`;
    case VisibilityState.SUPERSEDED:
      return `superseded by apply ${v.supersededBy || '?'}, a later change of the same names (${published})`;
    default:
      return 'no visibility known';
  }
}

/** The headline, then one line per server: when it first answered, or what it still answers old. */
export function visibilityLines(v: Visibility, indent = '  '): string[] {
  const lines = [`${indent}${visibilityHeadline(v)}`];
  const width = Math.max(0, ...v.servers.map((s) => s.server.length));
  for (const s of v.servers) {
    const delay = delayOf(v, s.firstAnsweredAt);
    let what: string;
    if (s.firstAnsweredAt) what = `answered ${delay === undefined ? '' : `${fmtDelay(delay)} after publishing `}(${fmtTimestamp(s.firstAnsweredAt)})`;
    else if (s.behind.length > 0) what = `behind on ${names(s.behind)}`;
    else what = 'not answered yet';
    lines.push(`${indent}  ${s.server.padEnd(width)}  ${what}${s.error ? `; ${s.error}` : ''}`);
  }
  return lines;
}
