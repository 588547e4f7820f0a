// The journal (audit log): each apply with its OVH calls and outcome, and where its publish stands on
// the zone's authoritative servers (published -> visible, per server); admin actions; newest first, a
// page at a time (AdminService.ListJournal with before_id).
import { adminApi, zoneApi } from '../api.js';
import { badge, clear, errorBox, fmtTime, h } from '../dom.js';
import { pagedLines, pagedTable } from '../table.js';
import { visibilityCell, visibilityDetail } from '../visibility.js';
import { writeDialog } from '../write.js';

const PAGE = 50;
const STATES = ['in_flight', 'done', 'failed', 'recovered'];

const callLine = (op) => `${op.method} ${op.path}${op.body ? ` ${op.body}` : ''}${op.status ? ` → ${op.status}` : ''}${op.error ? ` (${op.error})` : ''}`;

/**
 * Undo (AdminService.PlanRevert): a stored plan for the apply's tenant that puts back what the apply
 * changed, never applied here — the tenant applies it like any stored plan. Record sets a later apply
 * touched are left as they are and listed.
 */
function revertDialog(page, e, refresh) {
  writeDialog(page, {
    title: `Revert apply ${e.id}`,
    testid: 'dialog-revert',
    read: () => ({ journalId: e.id }),
    describe: () => [
      `store a plan for tenant "${e.tenant}" that puts back what apply ${e.id} changed in ${e.zone}, owned as before. `,
      'Record sets a later apply touched are left as they are and listed. Nothing is applied: the tenant applies the plan (dnsplane apply PLAN_ID), and it goes stale if what it puts back changes first.',
    ],
    method: 'PlanRevert',
    verb: 'Make the revert plan',
    result: (a) => {
      const conflicts = a.conflicts ?? [];
      return h(
        'div',
        { 'data-testid': 'revert-result' },
        h(
          'p',
          null,
          'Stored plan ',
          h('a', { href: `#/plans/${encodeURIComponent(a.plan?.id ?? '')}`, 'data-testid': 'revert-plan' }, a.plan?.id ?? ''),
          ` for tenant "${e.tenant}": its tenant applies it.`,
        ),
        conflicts.length
          ? h(
              'div',
              null,
              h('p', null, `Left as they are (${conflicts.length}): a later apply touched them.`),
              h(
                'ul',
                { 'data-testid': 'revert-conflicts' },
                conflicts.map((c) => h('li', null, `${c.dnsName} ${c.recordType}: journal ${c.journalId} by ${c.tenant} at ${fmtTime(c.at)}`)),
              ),
            )
          : h('p', { class: 'muted' }, 'No record set was touched since: everything it changed is put back.'),
      );
    },
    refresh,
  });
}

const detailOf = (page, refresh) => (e) => detail(e, page, refresh);

function detail(e, page, refresh) {
  const calls = e.calls ?? [];
  const ops = e.operations ?? [];
  const revertable = e.kind === 'apply' && e.state === 'done' && e.zone && ops.length > 0;
  return h(
    'div',
    { class: 'entry-detail', 'data-testid': 'entry-detail' },
    revertable
      ? h('p', null, h('button', { type: 'button', 'data-testid': 'revert', onclick: () => revertDialog(page, e, refresh) }, 'Revert this apply…'))
      : null,
    e.planId ? h('p', null, 'Plan ', h('a', { href: `#/plans/${encodeURIComponent(e.planId)}` }, e.planId)) : null,
    e.summary ? h('p', null, e.summary) : null,
    e.clientAddress ? h('p', { 'data-testid': 'client-address' }, `From ${e.clientAddress}`) : null,
    e.account && e.account !== 'default' ? h('p', { 'data-testid': 'ovh-account' }, `OVH account ${e.account}`) : null,
    e.error ? h('p', { class: 'error-text' }, e.error) : null,
    visibilityDetail(e.visibility),
    h('h3', null, `OVH calls made (${calls.length})`),
    calls.length
      ? pagedLines(calls, {
          testid: 'calls',
          pageSize: 200,
          lineNode: (op) => h('div', { class: `line ${op.error || op.status >= 400 ? 'remove' : 'call'}` }, callLine(op)),
        })
      : h('p', { class: 'muted' }, 'none'),
    h('h3', null, `OVH operations intended (${ops.length})`),
    ops.length
      ? pagedLines(ops, { testid: 'operations', pageSize: 200, lineNode: (op) => h('div', { class: 'line call' }, callLine(op)) })
      : h('p', { class: 'muted' }, 'none'),
  );
}

export async function journalPage(page, { stale }) {
  const [zones, tenants] = await Promise.all([zoneApi('ListZones', {}), adminApi('ListTenants', {})]);
  if (stale()) return;
  const zone = h(
    'select',
    { 'data-testid': 'filter-zone', 'aria-label': 'zone filter' },
    h('option', { value: '' }, 'any zone'),
    (zones.zones ?? []).map((z) => h('option', { value: z.name }, z.name)),
  );
  const tenant = h(
    'select',
    { 'data-testid': 'filter-tenant', 'aria-label': 'tenant filter' },
    h('option', { value: '' }, 'any tenant'),
    (tenants.tenants ?? []).map((t) => h('option', { value: t.name }, t.name)),
  );
  const state = h(
    'select',
    { 'data-testid': 'filter-state', 'aria-label': 'state filter' },
    h('option', { value: '' }, 'any state'),
    STATES.map((s) => h('option', { value: s }, s)),
  );
  const holder = h('div');
  /** The before_id of each page shown so far ('' for the newest), for "Newer". */
  let cursors = [''];

  const load = async () => {
    const before = cursors[cursors.length - 1];
    const res = await adminApi('ListJournal', { zone: zone.value, tenant: tenant.value, state: state.value, limit: PAGE, beforeId: before });
    if (stale()) return;
    const entries = res.entries ?? [];
    clear(holder);
    holder.append(
      pagedTable({
        testid: 'journal',
        rows: entries,
        pageSize: PAGE,
        pager: false,
        empty: 'No journal entry matches.',
        rowAttrs: (e) => ({ 'data-id': e.id, 'data-state': e.state }),
        detail: detailOf(page, () => reload()),
        columns: [
          { title: 'Id', class: 'num', cell: (e) => e.id },
          { title: 'Started', class: 'time', cell: (e) => fmtTime(e.startedAt) },
          { title: 'Zone', cell: (e) => e.zone },
          { title: 'Tenant', cell: (e) => e.tenant },
          { title: 'Kind', cell: (e) => e.kind },
          { title: 'Outcome', cell: (e) => badge(e.state) },
          { title: 'OVH calls', class: 'num', cell: (e) => String((e.calls ?? []).length) },
          { title: 'Finished', class: 'time', cell: (e) => fmtTime(e.finishedAt) },
          { title: 'Visible', cell: (e) => visibilityCell(e.visibility) },
          {
            title: 'Detail',
            class: 'wrap',
            cell: (e) => e.error || e.summary || (e.planId ? `plan ${e.planId}` : e.kind === 'apply' ? 'inline apply (plan and apply in one call)' : ''),
          },
        ],
      }),
      h(
        'div',
        { class: 'pager' },
        h(
          'button',
          {
            type: 'button',
            'data-testid': 'newer',
            disabled: cursors.length === 1,
            onclick: () => {
              cursors.pop();
              void reload();
            },
          },
          '‹ Newer',
        ),
        h('span', null, cursors.length === 1 ? 'newest entries' : `page ${cursors.length}`),
        h(
          'button',
          {
            type: 'button',
            'data-testid': 'older',
            disabled: entries.length < PAGE,
            onclick: () => {
              cursors.push(entries[entries.length - 1].id);
              void reload();
            },
          },
          'Older ›',
        ),
      ),
    );
  };
  const reload = () =>
    load().catch((e) => {
      clear(holder);
      holder.append(errorBox(e));
    });
  for (const f of [zone, tenant, state])
    f.addEventListener('change', () => {
      cursors = [''];
      void reload();
    });

  page.append(
    h('h1', null, 'Journal'),
    h(
      'p',
      { class: 'muted' },
      "Every zone apply (its OVH calls and outcome: done, failed — rolled back —, recovered after a crash, or still in flight; once published, whether the zone's authoritative servers answer it yet, and how long they took) and every admin action. Click an entry for its calls and each server's answer.",
    ),
    h('div', { class: 'filters' }, zone, tenant, state),
    holder,
  );
  await load();
}
