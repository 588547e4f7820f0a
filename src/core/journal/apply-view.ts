/**
 * One apply as its tenant (or an admin) sees it, by its journal id: the journal row and where its
 * publish stands on the zone's authoritative servers (ZoneService.GetApply, `dnsplane journal show`).
 * A tenant sees its own applies; an admin, anyone's; any other id is not found, so that a tenant
 * learns nothing of others' ids. And each zone's latest publishes (ZoneService.ListZones).
 */
import { InvalidInputError } from '../../dns/errors.js';
import * as store from '../../store/index.js';
import { journalView, type JournalView } from './journal.js';
import { tenantNames } from '../tenants/gate.js';
import type { CoreContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import { isAdmin, type Tenant } from '../tenants/tenants.js';
import { readVisibility, visibilityOf, type Visibility } from '../visibility/visibility.js';

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

/** How many of a zone's latest publishes ListZones shows. */
export const RECENT_PUBLISHES = 5;

/** zone -> its latest publishes, newest first, and where each stands (two queries for every zone). */
export async function latestPublishes(ctx: CoreContext, zones: readonly string[]): Promise<Map<string, Visibility[]>> {
  const ids = await store.recentPublishes(ctx.pool, zones, RECENT_PUBLISHES);
  const all = new Map((await readVisibility(ctx, [...ids.values()].flat())).map((v) => [v.journalId, v]));
  return new Map([...ids].map(([zone, list]) => [zone, list.map((id) => all.get(id)).filter((v): v is Visibility => v !== undefined)]));
}
