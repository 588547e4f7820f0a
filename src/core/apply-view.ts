/**
 * One apply as its tenant (or an admin) sees it, by its journal id: the journal row and where its
 * publish stands on the zone's authoritative servers (ZoneService.GetApply, `dnsplane journal show`).
 * A tenant sees its own applies; an admin, anyone's; any other id is not found, so that a tenant
 * learns nothing of others' ids.
 */
import { InvalidInputError } from '../dns/errors.js';
import * as store from '../store/index.js';
import { journalView, tenantNames, type JournalView } from './admin.js';
import type { CoreContext } from './context.js';
import { NotFoundError } from './errors.js';
import { isAdmin, type Tenant } from './tenants.js';
import { visibilityOf, type Visibility } from './visibility.js';

export interface ApplyView extends JournalView {
  /** Its visibility now (an apply in flight: published, not yet; one that published nothing: unverified, and why). */
  visibility: Visibility;
}

export async function getApply(ctx: CoreContext, actor: Tenant, journalId: string): Promise<ApplyView> {
  if (!/^[1-9][0-9]{0,18}$/.test(journalId)) throw new InvalidInputError('journalId', `must be a journal id (digits), got "${journalId}"`);
  const row = await store.getJournalEntry(ctx.pool, journalId);
  const view = row && journalView(row, await tenantNames(ctx));
  if (!row || !view || view.kind !== 'apply' || (row.tenantId !== actor.id && !isAdmin(actor))) {
    throw new NotFoundError('apply', journalId, `no apply with journal id ${journalId}${isAdmin(actor) ? '' : ` among tenant "${actor.name}"'s`}`);
  }
  const visibility = await visibilityOf(ctx, journalId);
  if (!visibility) throw new NotFoundError('apply', journalId);
  return { ...view, visibility };
}
