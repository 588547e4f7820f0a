// Tenants (AdminService.ListTenants): scopes, zones, suffixes, disabled, token rotation, change
// threshold, withdraw after silence (and when it was last seen); the workload identities tenants trust
// (ListTrustedSubjects: issuer, subject, audience, where the keys come from, last seen; trust-writes.js);
// each tenant's TSIG keys (AdminService.ListTsigKeys) and OVH keys (ListOvhKeys): created,
// last used — never a secret, which dnsplane shows only once, when a key is created or rotated; and
// the writes staged through the served OVH API that no refresh has published yet (ListOvhDrafts).
//
// The writes (this page's buttons, an admin's only: the RPCs refuse anyone else) are in
// tenant-writes.js (the tenants'), key-writes.js (their keys') and lifecycle-writes.js (hand over,
// drain, retire); after each the view below is redrawn from the API.
import { adminApi, zoneApi } from '../api.js';
import { badge, clear, fmtTime, h } from '../dom.js';
import { pagedTable } from '../table.js';
import { keyWrites } from './key-writes.js';
import { tenantWrites, thresholdText, withdrawAfterText } from './tenant-writes.js';
import { trustWrites } from './trust-writes.js';
import { lifecycleWrites } from './lifecycle-writes.js';

/** A key rotated with a grace: until when its old secret still works. */
const oldSecret = (k) =>
  k.oldSecretValidUntil
    ? h('div', { class: 'muted small wrap', 'data-testid': 'old-secret' }, `old secret valid until ${fmtTime(k.oldSecretValidUntil)}`)
    : null;

export async function tenantsPage(page, { stale, who }) {
  const view = h('div', { 'data-testid': 'tenants-view' });
  page.append(
    h('h1', null, 'Tenants'),
    who.admin
      ? h(
          'div',
          { class: 'toolbar' },
          h('button', { type: 'button', class: 'primary', 'data-testid': 'new-tenant', 'data-write': '', onclick: () => w.newTenant() }, '+ New tenant'),
        )
      : null,
    view,
  );
  let tenants = [];
  let zones = [];

  const refresh = async () => {
    const [res, keyRes, ovhRes, draftRes, zoneRes, trustRes] = await Promise.all([
      adminApi('ListTenants', {}),
      adminApi('ListTsigKeys', {}),
      adminApi('ListOvhKeys', {}),
      adminApi('ListOvhDrafts', {}),
      zoneApi('ListZones', {}),
      adminApi('ListTrustedSubjects', {}),
    ]);
    if (stale()) return;
    tenants = res.tenants ?? [];
    zones = (zoneRes.zones ?? []).map((z) => z.name);
    clear(view);
    draw(view, tenants, keyRes.keys ?? [], ovhRes.keys ?? [], draftRes.drafts ?? [], trustRes.subjects ?? []);
  };
  const tenantOf = (name) => tenants.find((t) => t.name === name) ?? { name, zones: [] };

  const w = {
    ...tenantWrites(page, { refresh, zones: () => zones, who }),
    ...keyWrites(page, { refresh, tenantOf }),
    ...trustWrites(page, { refresh }),
    ...lifecycleWrites(page, { refresh }),
  };
  const act = (text, testid, onclick, kind) =>
    who.admin ? h('button', { type: 'button', class: `small-button${kind ? ` ${kind}` : ''}`, 'data-testid': testid, 'data-write': '', onclick }, text) : null;

  function draw(into, tenantRows, keys, ovhKeys, drafts, subjects) {
    const keysOf = (t) => keys.filter((k) => k.tenant === t.name).length;
    const ovhKeysOf = (t) => ovhKeys.filter((k) => k.tenant === t.name).length;
    const actions = (cells) => (who.admin ? [{ title: 'Actions', class: 'actions-cell', cell: cells }] : []);
    into.append(
      h(
        'p',
        { class: 'muted' },
        'Who may call dnsplane. Tokens are never shown again after they are issued: dnsplane keeps only their sha-256 (Rotate token, or `dnsplane tenant rotate NAME`, issues a new one).',
      ),
      pagedTable({
        testid: 'tenants',
        rows: tenantRows,
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
          {
            title: 'Token rotated',
            class: 'time',
            cell: (t) => [
              fmtTime(t.tokenRotatedAt),
              t.previousTokenValidUntil
                ? h('div', { class: 'muted small wrap', 'data-testid': 'old-token' }, `old token valid until ${fmtTime(t.previousTokenValidUntil)}`)
                : null,
            ],
          },
          { title: 'TSIG keys', class: 'num', cell: (t) => String(keysOf(t)) },
          { title: 'OVH keys', class: 'num', cell: (t) => String(ovhKeysOf(t)) },
          { title: 'Change threshold', class: 'num', cell: (t) => thresholdText(t) },
          {
            title: 'Withdraw after',
            cell: (t) => [
              withdrawAfterText(t),
              h(
                'div',
                { class: 'muted small wrap', 'data-testid': 'last-seen' },
                t.lastSeenAt ? `last seen ${fmtTime(t.lastSeenAt)}${t.lastSeenFrom ? ` from ${t.lastSeenFrom}` : ''}` : 'never seen',
              ),
            ],
          },
          ...actions((t) => [
            act(t.disabled ? 'Enable' : 'Disable', 'disable-tenant', () => w.toggle(t)),
            act('Rotate token', 'rotate-token', () => w.rotateToken(t)),
            act('Threshold', 'set-threshold', () => w.threshold(t)),
            act('Withdraw after', 'set-withdraw-after', () => w.withdrawAfter(t)),
            act('+ Workload', 'trust-subject', () => w.trust(t)),
            act('+ TSIG key', 'new-tsig-key', () => w.newTsigKey(t)),
            act('+ OVH key', 'new-ovh-key', () => w.newOvhKey(t)),
            // A cluster's life, last: hand over, drain, retire (not the signed-in tenant: the RPC refuses an admin retiring itself).
            act('Hand over', 'handover-tenant', () => w.handover(t)),
            act('Drain / undrain', 'drain-tenant', () => w.drain(t)),
            t.name === who.tenant ? null : act('Retire', 'retire-tenant', () => w.retire(t), 'danger'),
          ]),
        ],
      }),
      h('h2', null, 'Workload identities'),
      h(
        'p',
        { class: 'muted' },
        'Subjects of JWT issuers whose tokens act as a tenant instead of its token: a Kubernetes projected ServiceAccount token, a SPIRE JWT-SVID — no long-lived secret in the cluster. ',
        'Each token is checked against its own issuer\'s keys, for its audience, and lives at most an hour (`dnsplane tenant trust NAME --issuer URL --subject SUBJECT`). "Last seen" is recorded to within a minute.',
      ),
      pagedTable({
        testid: 'trusted-subjects',
        rows: subjects,
        pageSize: 100,
        empty: 'No workload identity (+ Workload on a tenant, or dnsplane tenant trust NAME).',
        rowAttrs: (s) => ({ 'data-subject': s.subject }),
        columns: [
          { title: 'Tenant', cell: (s) => s.tenant },
          { title: 'Subject', cell: (s) => h('span', { class: 'wrap' }, s.subject) },
          { title: 'Issuer', cell: (s) => h('span', { class: 'wrap' }, s.issuer) },
          { title: 'Audience', cell: (s) => s.audience },
          { title: 'Keys', cell: (s) => s.keys },
          { title: 'Trusted since', class: 'time', cell: (s) => fmtTime(s.createdAt) },
          { title: 'Last seen', class: 'time', cell: (s) => (s.lastSeenAt ? fmtTime(s.lastSeenAt) : 'never') },
          ...actions((s) => [act('Untrust', 'untrust-subject', () => w.untrust(s), 'danger')]),
        ],
      }),
      h('h2', null, 'TSIG keys'),
      h(
        'p',
        { class: 'muted' },
        'Keys that DNS UPDATE clients (cert-manager, lego, certbot, external-dns, nsupdate) sign with; each acts as its tenant. ',
        'A secret is shown once, when the key is created or rotated (here, or by `dnsplane tenant tsig create TENANT` or `rotate NAME`), and kept sealed. ',
        'An acme-only key may only write _acme-challenge TXT records. "Last used" is recorded to within a minute.',
      ),
      pagedTable({
        testid: 'tsig-keys',
        rows: keys,
        pageSize: 100,
        empty: 'No TSIG key (+ TSIG key on a tenant, or dnsplane tenant tsig create TENANT).',
        rowAttrs: (k) => ({ 'data-key': k.name }),
        columns: [
          { title: 'Tenant', cell: (k) => k.tenant },
          { title: 'Key name', cell: (k) => `${k.name}.` },
          { title: 'Algorithm', cell: (k) => k.algorithm },
          { title: 'Scope', cell: (k) => (k.acmeOnly ? badge('acme-only', 'shared') : badge('tenant', 'pending')) },
          { title: 'Created', class: 'time', cell: (k) => fmtTime(k.createdAt) },
          { title: 'Rotated', class: 'time', cell: (k) => [fmtTime(k.rotatedAt), oldSecret(k)] },
          { title: 'Last used', class: 'time', cell: (k) => (k.lastUsedAt ? fmtTime(k.lastUsedAt) : 'never') },
          ...actions((k) => [act('Rotate', 'rotate-tsig-key', () => w.rotateTsigKey(k)), act('Delete', 'delete-tsig-key', () => w.deleteTsigKey(k), 'danger')]),
        ],
      }),
      h('h2', null, 'OVH keys'),
      h(
        'p',
        { class: 'muted' },
        'Keys that tools speaking the OVH API (external-dns --provider=ovh, cert-manager-webhook-ovh, lego, Traefik, Caddy, Terraform) use against the OVH API dnsplane serves at /ovh/1.0; each acts as its tenant. ',
        "The secret and the consumer key are shown once, when the key is created or rotated (here, or by `dnsplane tenant ovh-key create TENANT` or `rotate APPLICATION_KEY`); dnsplane keeps the secret sealed and the consumer key's sha-256.",
      ),
      pagedTable({
        testid: 'ovh-keys',
        rows: ovhKeys,
        pageSize: 100,
        empty: 'No OVH key (+ OVH key on a tenant, or dnsplane tenant ovh-key create TENANT).',
        rowAttrs: (k) => ({ 'data-key': k.applicationKey }),
        columns: [
          { title: 'Tenant', cell: (k) => k.tenant },
          { title: 'Application key', cell: (k) => k.applicationKey },
          { title: 'Created', class: 'time', cell: (k) => fmtTime(k.createdAt) },
          { title: 'Rotated', class: 'time', cell: (k) => [fmtTime(k.rotatedAt), oldSecret(k)] },
          { title: 'Last used', class: 'time', cell: (k) => (k.lastUsedAt ? fmtTime(k.lastUsedAt) : 'never') },
          { title: 'Expires', class: 'time', cell: (k) => (k.expiresAt ? fmtTime(k.expiresAt) : 'never') },
          ...actions((k) => [act('Rotate', 'rotate-ovh-key', () => w.rotateOvhKey(k)), act('Delete', 'delete-ovh-key', () => w.deleteOvhKey(k), 'danger')]),
        ],
      }),
      h('h2', null, 'Staged OVH API writes'),
      h(
        'p',
        { class: 'muted' },
        "Writes made through the served OVH API that no refresh has published yet: the tenant's next POST …/refresh publishes them as one apply. ",
        'One that waits past its expiry (DNSPLANE_OVH_API_DRAFT_TTL) is dropped, never published.',
      ),
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

  await refresh();
}
