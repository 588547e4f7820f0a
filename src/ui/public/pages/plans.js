// Stored plans (AdminService.ListPlans) and one plan's terraform-style diff (GetPlan).
import { adminApi } from '../api.js';
import { badge, clear, errorBox, fmtTime, h } from '../dom.js';
import { planDiff, policyName } from '../diff.js';
import { pagedTable } from '../table.js';
import { writeDialog } from '../write.js';

const STATUSES = ['pending', 'applied', 'stale', 'expired', 'failed', 'superseded'];

export async function plansPage(page, { stale }) {
  const tenants = await adminApi('ListTenants', {});
  if (stale()) return;
  const tenant = h(
    'select',
    { 'data-testid': 'filter-tenant', 'aria-label': 'tenant filter' },
    h('option', { value: '' }, 'any tenant'),
    (tenants.tenants ?? []).map((t) => h('option', { value: t.name }, t.name)),
  );
  const status = h(
    'select',
    { 'data-testid': 'filter-status', 'aria-label': 'status filter' },
    h('option', { value: '' }, 'any status'),
    STATUSES.map((s) => h('option', { value: s }, s)),
  );
  const holder = h('div');
  const load = async () => {
    const res = await adminApi('ListPlans', { tenant: tenant.value, status: status.value, limit: 1000 });
    if (stale()) return;
    clear(holder);
    holder.append(
      pagedTable({
        testid: 'plans',
        rows: res.plans ?? [],
        pageSize: 50,
        empty: 'No stored plan matches.',
        rowAttrs: (p) => ({ 'data-id': p.id }),
        columns: [
          { title: 'Plan', cell: (p) => h('a', { href: `#/plans/${encodeURIComponent(p.id)}` }, p.id) },
          { title: 'Tenant', cell: (p) => p.tenant },
          { title: 'Requested by', cell: (p) => p.requestedBy },
          { title: 'Status', cell: (p) => badge(p.status) },
          { title: 'Policy', cell: (p) => policyName(p.policy) },
          { title: 'Zones', cell: (p) => (p.zones ?? []).join(', ') },
          { title: 'Changes', class: 'num', cell: (p) => String(p.changeCount ?? 0) },
          { title: 'Conflicts', class: 'num', cell: (p) => String(p.conflictCount ?? 0) },
          { title: 'OVH calls', class: 'num', cell: (p) => String(p.operationCount ?? 0) },
          { title: 'Created', class: 'time', cell: (p) => fmtTime(p.createdAt) },
          { title: 'Applied', class: 'time', cell: (p) => fmtTime(p.appliedAt) },
        ],
      }),
    );
  };
  for (const f of [tenant, status])
    f.addEventListener('change', () =>
      load().catch((e) => {
        clear(holder);
        holder.append(errorBox(e));
      }),
    );
  page.append(
    h('h1', null, 'Plans'),
    h('p', { class: 'muted' }, 'Stored plans, newest first (the latest 1000). Click one for its diff and the OVH calls it makes.'),
    h('div', { class: 'filters' }, tenant, status),
    holder,
  );
  await load();
}

export async function planPage(page, { arg: id, stale }) {
  const res = await adminApi('GetPlan', { id });
  if (stale()) return;
  const s = res.summary ?? {};
  page.append(
    h('p', null, h('a', { href: '#/plans' }, '← Plans')),
    h('h1', null, `Plan ${id}`),
    h(
      'dl',
      { class: 'facts' },
      h('dt', null, 'Tenant'),
      h('dd', null, s.tenant ?? ''),
      h('dt', null, 'Requested by'),
      h('dd', null, s.requestedBy ?? ''),
      h('dt', null, 'Status'),
      h('dd', null, badge(s.status ?? '')),
      h('dt', null, 'Created'),
      h('dd', null, fmtTime(s.createdAt)),
      h('dt', null, 'Expires'),
      h('dd', null, fmtTime(s.expiresAt)),
      h('dt', null, 'Applied'),
      h('dd', null, fmtTime(s.appliedAt)),
      h('dt', null, 'Digest'),
      h('dd', { class: 'mono small' }, s.digest ?? ''),
      h('dt', null, 'Approved'),
      h('dd', { 'data-testid': 'approved' }, s.approvedBy ? `by ${s.approvedBy} at ${fmtTime(s.approvedAt)}` : '—'),
    ),
    s.status === 'pending' && !s.approvedBy
      ? h(
          'p',
          { 'data-testid': 'approve-row' },
          h('button', { type: 'button', 'data-testid': 'approve', onclick: () => approveDialog(page, id, s) }, 'Approve…'),
        )
      : null,
    planDiff(res.plan ?? {}),
  );
}

/**
 * The two-person rule (AdminService.ApprovePlan): an admin other than the one who asked approves a
 * plan the change threshold refuses; its tenant then applies it. The server refuses (and the dialog
 * shows why) an own plan, one under the threshold, a stale or expired one.
 */
function approveDialog(page, id, s) {
  writeDialog(page, {
    title: `Approve plan ${id}`,
    testid: 'dialog-approve',
    read: () => ({ id }),
    describe: () => [
      `approve plan ${id} of tenant "${s.tenant ?? ''}" (asked by ${s.requestedBy ?? ''}, digest ${(s.digest ?? '').slice(0, 12)}…): `,
      'its tenant may then apply it although it is over the change threshold. The approval is journaled with you as approver, and is void if what the plan touches changes before it is applied.',
    ],
    method: 'ApprovePlan',
    verb: 'Approve',
    danger: true,
    result: (a) => h('p', { 'data-testid': 'approve-result' }, `Approved by ${a.summary?.approvedBy ?? ''} at ${fmtTime(a.summary?.approvedAt)}.`),
    // The facts redrawn in place (the dialog, which shows the result, stays open).
    refresh: async () => {
      const now = (await adminApi('GetPlan', { id })).summary ?? {};
      const dd = page.querySelector('[data-testid=approved]');
      if (dd) dd.textContent = now.approvedBy ? `by ${now.approvedBy} at ${fmtTime(now.approvedAt)}` : '—';
      if (now.approvedBy) page.querySelector('[data-testid=approve-row]')?.remove();
    },
  });
}
