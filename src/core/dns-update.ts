/**
 * DNS UPDATE (RFC 2136) in core, what the DNS door calls once a key authenticated its tenant: the
 * message becomes ONE apply through core (core/apply.ts) — the zone lock, the journal, the minimal OVH
 * operations, coalescing with the zone's other applies, one refresh, rollback on failure — whose
 * planning step, under the lock, checks the prerequisites against the cache and turns the update
 * section into the tenant's changes (core/dns-update-plan.ts). Never cut into batches: all or nothing.
 *
 * The outcome is an RCODE: NOERROR once the refresh has published (or when nothing had to change: a
 * resent UPDATE, a value already there); the prerequisite's or the refusal's code; SERVFAIL when OVH or
 * the database failed (the apply rolled back, nothing published) or dnsplane is stopping.
 */
import { messageOf } from '../error-message.js';
import * as store from '../store/index.js';
import { apply } from './apply/index.js';
import type { CoreContext } from './context.js';
import { DnsUpdateRefused, type DnsRcode, type DnsUpdate } from './dns-update-plan.js';
import { PermissionDeniedError, ThresholdError } from './errors.js';
import type { Tenant } from './tenants.js';

export { ACME_PREFIX, DnsUpdateRefused, type DnsPrerequisite, type DnsRcode, type DnsUpdate, type DnsUpdateOp } from './dns-update-plan.js';

export type DnsUpdateOutcome =
  | { rcode: 'NOERROR'; applied: boolean; generation: bigint; calls: number }
  | { rcode: DnsRcode; reason: string; name?: string; type?: string };

export async function applyDnsUpdate(ctx: CoreContext, tenant: Tenant, update: DnsUpdate): Promise<DnsUpdateOutcome> {
  let zone;
  try {
    zone = (await apply(ctx, tenant, { input: { kind: 'update', update, policy: 'sync' } })).zones[0];
  } catch (e) {
    if (e instanceof PermissionDeniedError) return { rcode: 'REFUSED', reason: e.message };
    return { rcode: 'SERVFAIL', reason: messageOf(e) };
  }
  if (!zone) return { rcode: 'SERVFAIL', reason: 'the apply answered no zone' };
  const error = zone.error;
  if (error instanceof DnsUpdateRefused) return { rcode: error.rcode, reason: error.reason, ...error.at };
  switch (zone.status) {
    case 'applied':
      return { rcode: 'NOERROR', applied: true, generation: zone.generation, calls: zone.calls.length };
    case 'no_changes':
      return { rcode: 'NOERROR', applied: false, generation: zone.generation, calls: 0 };
    case 'refused':
      return { rcode: 'REFUSED', reason: error instanceof ThresholdError ? `change threshold: ${error.message}` : messageOf(error ?? 'refused') };
    case 'dry_run':
      return { rcode: 'REFUSED', reason: 'DNSPLANE_DRY_RUN is on: nothing was sent to OVH' };
    default:
      return { rcode: 'SERVFAIL', reason: messageOf(error ?? zone.status) };
  }
}

/**
 * A refused UPDATE or transfer of a tenant in a managed zone, written to the journal (the audit log)
 * as a finished row: `kind` dns-refusal, the summary in words, the detail (name, type, key, RCODE).
 */
export async function journalDnsRefusal(ctx: CoreContext, zone: string, tenant: Tenant, summary: string, detail: Record<string, unknown>): Promise<void> {
  await store.withTransaction(ctx.pool, async (tx) => {
    const id = await store.insertIntent(tx, { zone, tenantId: tenant.id, intent: { kind: 'dns-refusal', summary, detail, operations: [], names: [] } });
    await store.finishJournal(tx, id, 'failed', { summary, refused: detail });
  });
}
