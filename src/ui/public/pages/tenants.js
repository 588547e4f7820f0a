// Tenants (AdminService.ListTenants): scopes, zones, suffixes, disabled, token rotation; and each
// tenant's TSIG keys (AdminService.ListTsigKeys): name, algorithm, scope, created, last used — never a
// secret, which dnsplane shows only once, when a key is created or rotated.
import { adminApi } from '../api.js';
import { badge, fmtTime, h } from '../dom.js';
import { pagedTable } from '../table.js';

export async function tenantsPage(page, { stale }) {
  const [res, keyRes] = await Promise.all([adminApi('ListTenants', {}), adminApi('ListTsigKeys', {})]);
  if (stale()) return;
  const keys = keyRes.keys ?? [];
  const keysOf = (t) => keys.filter((k) => k.tenant === t.name).length;
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
        { title: 'TSIG keys', class: 'num', cell: (t) => String(keysOf(t)) },
      ],
    }),
    h('h2', null, 'TSIG keys'),
    h('p', { class: 'muted' },
      'Keys that DNS UPDATE clients (cert-manager, lego, certbot, external-dns, nsupdate) sign with; each acts as its tenant. ',
      'A secret is shown once, by `dnsplane tenant tsig create TENANT` or `rotate NAME`, and kept sealed. ',
      'An acme-only key may only write _acme-challenge TXT records. "Last used" is recorded to within a minute.'),
    pagedTable({
      testid: 'tsig-keys',
      rows: keys,
      pageSize: 100,
      empty: 'No TSIG key (dnsplane tenant tsig create TENANT).',
      rowAttrs: (k) => ({ 'data-key': k.name }),
      columns: [
        { title: 'Tenant', cell: (k) => k.tenant },
        { title: 'Key name', cell: (k) => `${k.name}.` },
        { title: 'Algorithm', cell: (k) => k.algorithm },
        { title: 'Scope', cell: (k) => (k.acmeOnly ? badge('acme-only', 'shared') : badge('tenant', 'pending')) },
        { title: 'Created', class: 'time', cell: (k) => fmtTime(k.createdAt) },
        { title: 'Rotated', class: 'time', cell: (k) => fmtTime(k.rotatedAt) },
        { title: 'Last used', class: 'time', cell: (k) => (k.lastUsedAt ? fmtTime(k.lastUsedAt) : 'never') },
      ],
    }),
  );
}
