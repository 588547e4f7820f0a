/**
 * DNS UPDATE (RFC 2136) in core: what the DNS door hands over once it has authenticated a key.
 * (The update itself — prerequisites checked and the update section turned into the tenant's changes
 * under the zone lock — follows with the apply rooms.)
 */
import * as store from '../store/index.js';
import type { CoreContext } from './context.js';
import type { Tenant } from './tenants.js';

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
