/**
 * DNS UPDATE (RFC 2136) in core, what the DNS door calls once a key authenticated its tenant: the
 * message becomes ONE apply through core (core/apply/index.ts) — the zone lock, the journal, the minimal OVH
 * operations, coalescing with the zone's other applies, one refresh, rollback on failure — whose
 * planning step, under the lock, checks the prerequisites against the cache and turns the update
 * section into the tenant's changes (core/plan/dns-update-plan.ts). Never cut into batches: all or nothing.
 *
 * The outcome is the zone's apply result (or the apply's error): the DNS door turns it into an RCODE
 * (src/dnsserver/update-outcome.ts), as the Connect and OVH doors map core's answers to their codes.
 *
 * With DNSPLANE_DNS_UPDATE_WAIT, an applied update waits until the publish is visible on the zone's
 * authoritative servers (core/visibility/visibility.ts), at most as long as the door allows once the apply is
 * done (that setting, and what is left of the client's own timeout); at the bound it is NOERROR
 * anyway: the change is applied, and an error would only make the client send it again.
 */
import { messageOf } from '../../lib/error-message.js';
import * as store from '../../store/index.js';
import { apply, type ZoneApplyResult } from '../apply/index.js';
import type { CoreContext } from '../context.js';
import { DnsUpdateRefused, type DnsUpdate } from '../plan/dns-update-plan.js';
import type { Tenant } from '../tenants/tenants.js';
import { waitVisible } from '../visibility/visibility.js';

export { ACME_PREFIX, DnsUpdateRefused, type DnsPrerequisite, type DnsRcode, type DnsUpdate, type DnsUpdateOp } from '../plan/dns-update-plan.js';

/**
 * keyName: the TSIG key that signed it (the journal says `DNS UPDATE signed by KEY.`); from: the
 * client's address (the journal's too); waitMs: asked
 * once the apply is done, how long an applied update may still wait for visibility (≤ 0: not at all).
 * The zone's result (undefined: the apply answered none); throws what apply throws.
 */
export async function applyDnsUpdate(
  ctx: CoreContext,
  tenant: Tenant,
  update: DnsUpdate,
  keyName: string,
  from: string | undefined,
  waitMs: () => number = () => 0,
): Promise<ZoneApplyResult | undefined> {
  const input = { kind: 'update', update, policy: 'sync', origin: `DNS UPDATE signed by ${keyName}.` } as const;
  const zone = (await apply(ctx, tenant, { input, ...(from !== undefined ? { from } : {}) })).zones[0];
  if (zone?.status === 'applied' && zone.journalId && !(zone.error instanceof DnsUpdateRefused)) {
    const ms = Math.floor(waitMs());
    if (ms > 0) await waitForUpdate(ctx, zone.journalId, ms);
  }
  return zone;
}

/** The wait before NOERROR: until visible (or final otherwise), the bound, or the server stopping. */
async function waitForUpdate(ctx: CoreContext, journalId: string, waitMs: number): Promise<void> {
  const stopping = new AbortController();
  const unsubscribe = ctx.lifecycle?.onStop(() => stopping.abort()) ?? (() => undefined);
  try {
    const [v] = await waitVisible(ctx, [journalId], { timeoutMs: waitMs, signal: stopping.signal });
    if (v && v.state !== 'visible')
      ctx.log.info({ journalId, zone: v.zone, state: v.state }, 'dns update: answered NOERROR before its change was shown visible');
  } catch (e) {
    // The change is applied: a failed wait does not make the answer an error.
    ctx.log.warn({ journalId, err: messageOf(e) }, 'dns update: the wait for visibility failed; answered NOERROR');
  } finally {
    unsubscribe();
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
