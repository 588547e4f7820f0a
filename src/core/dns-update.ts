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
 *
 * With DNSPLANE_DNS_UPDATE_WAIT, NOERROR waits until the publish is visible on the zone's
 * authoritative servers (core/visibility.ts), at most as long as the door allows once the apply is
 * done (that setting, and what is left of the client's own timeout); at the bound it is NOERROR
 * anyway: the change is applied, and an error would only make the client send it again.
 */
import { messageOf } from '../error-message.js';
import * as store from '../store/index.js';
import { apply, type ZoneApplyResult } from './apply/index.js';
import type { CoreContext } from './context.js';
import { DnsUpdateRefused, type DnsRcode, type DnsUpdate } from './dns-update-plan.js';
import { PermissionDeniedError } from './errors.js';
import type { Tenant } from './tenants.js';
import { waitVisible } from './visibility.js';

export { ACME_PREFIX, DnsUpdateRefused, type DnsPrerequisite, type DnsRcode, type DnsUpdate, type DnsUpdateOp } from './dns-update-plan.js';

export type DnsUpdateOutcome =
  /** journalId: the publish's journal row, when the update changed something. */
  | { rcode: 'NOERROR'; applied: boolean; generation: bigint; calls: number; journalId?: string }
  | { rcode: DnsRcode; reason: string; name?: string; type?: string };

/**
 * keyName: the TSIG key that signed it (the journal says `DNS UPDATE signed by KEY.`); waitMs: asked
 * once the apply is done, how long NOERROR may still wait for visibility (≤ 0: not at all).
 */
export async function applyDnsUpdate(ctx: CoreContext, tenant: Tenant, update: DnsUpdate, keyName: string, waitMs: () => number = () => 0): Promise<DnsUpdateOutcome> {
  const outcome = await applyOnce(ctx, tenant, update, `DNS UPDATE signed by ${keyName}.`);
  if (outcome.rcode === 'NOERROR' && outcome.journalId) {
    const ms = Math.floor(waitMs());
    if (ms > 0) await waitForUpdate(ctx, outcome.journalId, ms);
  }
  return outcome;
}

/** The wait before NOERROR: until visible (or final otherwise), the bound, or the server stopping. */
async function waitForUpdate(ctx: CoreContext, journalId: string, waitMs: number): Promise<void> {
  const stopping = new AbortController();
  const unsubscribe = ctx.lifecycle?.onStop(() => stopping.abort()) ?? (() => undefined);
  try {
    const [v] = await waitVisible(ctx, [journalId], { timeoutMs: waitMs, signal: stopping.signal });
    if (v && v.state !== 'visible') ctx.log.info({ journalId, zone: v.zone, state: v.state }, 'dns update: answered NOERROR before its change was shown visible');
  } catch (e) {
    // The change is applied: a failed wait does not make the answer an error.
    ctx.log.warn({ journalId, err: messageOf(e) }, 'dns update: the wait for visibility failed; answered NOERROR');
  } finally {
    unsubscribe();
  }
}

async function applyOnce(ctx: CoreContext, tenant: Tenant, update: DnsUpdate, origin: string): Promise<DnsUpdateOutcome> {
  let zone: ZoneApplyResult | undefined;
  try {
    zone = (await apply(ctx, tenant, { input: { kind: 'update', update, policy: 'sync', origin } })).zones[0];
  } catch (e) {
    if (e instanceof PermissionDeniedError) return { rcode: 'REFUSED', reason: e.message };
    return { rcode: 'SERVFAIL', reason: messageOf(e) };
  }
  if (!zone) return { rcode: 'SERVFAIL', reason: 'the apply answered no zone' };
  const error = zone.error;
  if (error instanceof DnsUpdateRefused) return { rcode: error.rcode, reason: error.reason, ...error.at };
  switch (zone.status) {
    case 'applied':
      return { rcode: 'NOERROR', applied: true, generation: zone.generation, calls: zone.calls.length, ...(zone.journalId ? { journalId: zone.journalId } : {}) };
    case 'no_changes':
      return { rcode: 'NOERROR', applied: false, generation: zone.generation, calls: 0 };
    case 'refused':
      // ThresholdError's message names itself ("change threshold: …", core/guard.ts).
      return { rcode: 'REFUSED', reason: messageOf(error ?? 'refused') };
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
