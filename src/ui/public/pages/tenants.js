// Tenants (AdminService.ListTenants): scopes, zones, suffixes, disabled, token rotation.
import { adminApi } from '../api.js';
import { badge, fmtTime, h } from '../dom.js';
import { pagedTable } from '../table.js';

export async function tenantsPage(page, { stale }) {
  const res = await adminApi('ListTenants', {});
  if (stale()) return;
  page.append(
    h('h1', null, 'Tenants'),
    h('p', { class: 'muted' }, 'Who may call dnsplane. Tokens are never shown: dnsplane keeps only their sha-256 (`dnsplane tenant rotate NAME` issues a new one).'),
    pagedTable({
      testid: 'tenants',
      rows: res.tenants ?? [],
      pageSize: 100,
      empty: 'No tenant.',
      rowAttrs: (t) => ({ 'data-tenant': t.name }),
      columns: [
        { title: 'Tenant', cell: (t) => t.name },
        { title: 'Scopes', cell: (t) => (t.scopes ?? []).join(', ') },
        { title: 'Zones', cell: (t) => ((t.zones ?? []).length ? t.zones.join(', ') : (t.scopes ?? []).includes('admin') ? 'all' : '—') },
        { title: 'Suffixes', cell: (t) => ((t.suffixes ?? []).length ? t.suffixes.join(', ') : 'whole zones') },
        { title: 'Status', cell: (t) => (t.disabled ? badge('disabled') : badge('active')) },
        { title: 'Created', class: 'time', cell: (t) => fmtTime(t.createdAt) },
        { title: 'Token rotated', class: 'time', cell: (t) => fmtTime(t.tokenRotatedAt) },
      ],
    }),
  );
}
