/**
 * The DNS door's mapping of core's answer to a DNS UPDATE (core/dns-door/dns-update.ts) onto an RCODE, as the
 * Connect door maps core's errors to its codes: NOERROR once the refresh has published (or when
 * nothing had to change: a resent UPDATE, a value already there); the prerequisite's or the
 * refusal's code; REFUSED for a permission or the change threshold (or a dry run); SERVFAIL when OVH
 * or the database failed (the apply rolled back, nothing published) or dnsplane is stopping.
 */
import type { ZoneApplyResult } from '../core/apply/index.js';
import { DnsUpdateRefused, type DnsRcode } from '../core/dns-door/dns-update.js';
import { PermissionDeniedError } from '../core/errors.js';
import { messageOf } from '../lib/error-message.js';

export type DnsUpdateOutcome =
  /** journalId: the publish's journal row, when the update changed something. */
  | { rcode: 'NOERROR'; applied: boolean; generation: bigint; calls: number; journalId?: string }
  | { rcode: DnsRcode; reason: string; name?: string; type?: string };

/** What the door answers an UPDATE whose apply threw `e`. */
export function outcomeOfError(e: unknown): DnsUpdateOutcome {
  if (e instanceof PermissionDeniedError) return { rcode: 'REFUSED', reason: e.message };
  return { rcode: 'SERVFAIL', reason: messageOf(e) };
}

/** What the door answers an UPDATE whose apply answered `zone` (undefined: no zone). */
export function outcomeOf(zone: ZoneApplyResult | undefined): DnsUpdateOutcome {
  if (!zone) return { rcode: 'SERVFAIL', reason: 'the apply answered no zone' };
  const error = zone.error;
  if (error instanceof DnsUpdateRefused) return { rcode: error.rcode, reason: error.reason, ...error.at };
  switch (zone.status) {
    case 'applied':
      return {
        rcode: 'NOERROR',
        applied: true,
        generation: zone.generation,
        calls: zone.calls.length,
        ...(zone.journalId ? { journalId: zone.journalId } : {}),
      };
    case 'no_changes':
      return { rcode: 'NOERROR', applied: false, generation: zone.generation, calls: 0 };
    case 'refused':
      // ThresholdError's message names itself ("change threshold: …", core/plan/guard.ts).
      return { rcode: 'REFUSED', reason: messageOf(error ?? 'refused') };
    case 'dry_run':
      return { rcode: 'REFUSED', reason: 'DNSPLANE_DRY_RUN is on: nothing was sent to OVH' };
    default:
      return { rcode: 'SERVFAIL', reason: messageOf(error ?? zone.status) };
  }
}
