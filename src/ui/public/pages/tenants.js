// Tenants (AdminService.ListTenants): scopes, zones, suffixes, disabled, token rotation; each tenant's
// TSIG keys (AdminService.ListTsigKeys) and OVH keys (ListOvhKeys): created, last used — never a
// secret, which dnsplane shows only once, when a key is created or rotated; and the writes staged
// through the served OVH API that no refresh has published yet (ListOvhDrafts), with their expiry.
import { adminApi } from '../api.js';
import { badge, fmtTime, h } from '../dom.js';
import { pagedTable } from '../table.js';

export async function tenantsPage(page, { stale }) {
  const [res, keyRes, ovhRes, draftRes] = await Promise.all([
    adminApi('ListTenants', {}),
    adminApi('ListTsigKeys', {}),
    adminApi('ListOvhKeys', {}),
    adminApi('ListOvhDrafts', {}),
  ]);
  if (stale()) return;
  const keys = keyRes.keys ?? [];
  const ovhKeys = ovhRes.keys ?? [];
  const drafts = draftRes.drafts ?? [];
  const keysOf = (t) => keys.filter((k) => k.tenant === t.name).length;
  const ovhKeysOf = (t) => ovhKeys.filter((k) => k.tenant === t.name).length;
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
        { title: 'Token rotated', class: 'time', cell: (t) => [fmtTime(t.tokenRotatedAt), t.previousTokenValidUntil ? h('div', { class: 'muted', 'data-testid': 'old-token' }, `old token valid until ${fmtTime(t.previousTokenValidUntil)}`) : null] },
        { title: 'TSIG keys', class: 'num', cell: (t) => String(keysOf(t)) },
        { title: 'OVH keys', class: 'num', cell: (t) => String(ovhKeysOf(t)) },
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
    h('h2', null, 'OVH keys'),
    h('p', { class: 'muted' },
      'Keys that tools speaking the OVH API (external-dns --provider=ovh, cert-manager-webhook-ovh, lego, Traefik, Caddy, Terraform) use against the OVH API dnsplane serves at /ovh/1.0; each acts as its tenant. ',
      'The secret and the consumer key are shown once, by `dnsplane tenant ovh-key create TENANT` or `rotate APPLICATION_KEY`; dnsplane keeps the secret sealed and the consumer key\'s sha-256.'),
    pagedTable({
      testid: 'ovh-keys',
      rows: ovhKeys,
      pageSize: 100,
      empty: 'No OVH key (dnsplane tenant ovh-key create TENANT).',
      rowAttrs: (k) => ({ 'data-key': k.applicationKey }),
      columns: [
        { title: 'Tenant', cell: (k) => k.tenant },
        { title: 'Application key', cell: (k) => k.applicationKey },
        { title: 'Created', class: 'time', cell: (k) => fmtTime(k.createdAt) },
        { title: 'Rotated', class: 'time', cell: (k) => fmtTime(k.rotatedAt) },
        { title: 'Last used', class: 'time', cell: (k) => (k.lastUsedAt ? fmtTime(k.lastUsedAt) : 'never') },
        { title: 'Expires', class: 'time', cell: (k) => (k.expiresAt ? fmtTime(k.expiresAt) : 'never') },
      ],
    }),
    h('h2', null, 'Staged OVH API writes'),
    h('p', { class: 'muted' },
      'Writes made through the served OVH API that no refresh has published yet: the tenant\'s next POST …/refresh publishes them as one apply. ',
      'One that waits past its expiry (DNSPLANE_OVH_API_DRAFT_TTL) is dropped, never published.'),
    pagedTable({
      testid: 'ovh-drafts',
      rows: drafts,
      pageSize: 100,
      empty: 'Nothing staged.',
      rowAttrs: (d) => ({ 'data-record': d.recordId }),
      columns: [
        { title: 'Tenant', cell: (d) => d.tenant },
        { title: 'Zone', cell: (d) => d.zone },
        { title: 'Record id', cell: (d) => d.recordId },
        { title: 'Action', cell: (d) => badge(d.action, d.action === 'delete' ? 'disabled' : 'pending') },
        { title: 'Record', cell: (d) => (d.fieldType ? `${d.subDomain || '@'} ${d.fieldType} ${d.target} (TTL ${d.ttl ?? 0})` : '—') },
        { title: 'Staged', class: 'time', cell: (d) => fmtTime(d.stagedAt) },
        { title: 'Expires', class: 'time', cell: (d) => fmtTime(d.expiresAt) },
      ],
    }),
  );
}
