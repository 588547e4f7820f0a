/**
 * AdminService.ListJournal: the journal, newest first, by zone, tenant, state, a page at a time,
 * each row decoded (journal/journal.ts) with where its publish stands. Refuses a caller without the
 * admin scope first (tenants/gate.ts).
 */
import { InvalidInputError } from '../../dns/errors.js';
import * as store from '../../store/index.js';
import type { CoreContext } from '../context.js';
import { journalView, type JournalView } from '../journal/journal.js';
import { Slicer } from '../slices.js';
import { limitOf, managedZone, requireAdmin, tenantNamed, tenantNames } from '../tenants/gate.js';
import type { Tenant } from '../tenants/tenants.js';
import { readVisibility } from '../visibility/visibility.js';

const JOURNAL_STATES: readonly store.JournalState[] = ['in_flight', 'done', 'failed', 'recovered'];

export interface JournalQuery {
  zone: string;
  tenant: string;
  limit: number;
  /** Only entries older than this id (the last id of the previous page); '' for the newest. */
  beforeId?: string;
  /** Only entries in this state; '' for any. */
  state?: string;
}

export async function listJournal(ctx: CoreContext, actor: Tenant, q: JournalQuery): Promise<JournalView[]> {
  requireAdmin(actor);
  const limit = limitOf(q.limit);
  const beforeId = q.beforeId ?? '';
  if (beforeId !== '' && !/^[1-9][0-9]{0,18}$/.test(beforeId))
    throw new InvalidInputError('beforeId', `must be a journal entry id (digits), got "${beforeId}"`);
  const state = q.state ?? '';
  if (state !== '' && !(JOURNAL_STATES as readonly string[]).includes(state)) {
    throw new InvalidInputError('state', `unknown state "${state}" (known: ${JOURNAL_STATES.join(', ')})`);
  }
  const zone = q.zone === '' ? undefined : await managedZone(ctx, q.zone, 'zone');
  const tenantId = q.tenant === '' ? undefined : (await tenantNamed(ctx, q.tenant, 'tenant')).id;
  const rows = await store.listJournal(ctx.pool, {
    limit,
    ...(zone === undefined ? {} : { zone }),
    ...(tenantId === undefined ? {} : { tenantId }),
    ...(beforeId === '' ? {} : { beforeId }),
    ...(state === '' ? {} : { state: state as store.JournalState }),
  });
  const names = await tenantNames(ctx);
  // Where each publish stands (the rows that published; an admin action has none): one query.
  const published = new Map(
    (
      await readVisibility(
        ctx,
        rows.map((r) => r.id),
      )
    )
      .filter((v) => v.publishedAt)
      .map((v) => [v.journalId, v]),
  );
  // Up to 1,000 entries of up to an apply batch's calls each: read in slices.
  return new Slicer().map(rows, (r) => journalView(r, names, published.get(r.id)), 16);
}
