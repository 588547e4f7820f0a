// PlanAs: what a tenant's desired state would do, as that tenant (its grants and ownership), shown as
// the diff with the OVH calls of each change. A dry run: the plan is stored (AdminService.PlanAs) and
// never applied from here. The document is read by the server (ParseDesiredState), exactly as
// `dnsplane plan -f` reads a file.
import { adminApi } from '../api.js';
import { clear, errorBox, h } from '../dom.js';
import { planDiff } from '../diff.js';

const EXAMPLE = `# a list of endpoints, or {zones, policy, endpoints}
- dnsName: www.example.test
  recordType: A
  targets: [192.0.2.1, 192.0.2.2]
  ttl: 300
`;

const POLICIES = [
  ['', 'as the document says (sync when it names none)'],
  ['POLICY_SYNC', "sync — the tenant's other records in these zones are deleted"],
  ['POLICY_UPSERT_ONLY', 'upsert-only — create and update, never delete'],
  ['POLICY_CREATE_ONLY', 'create-only — only names that do not exist yet'],
];

export async function planAsPage(page, { stale }) {
  const res = await adminApi('ListTenants', {});
  if (stale()) return;
  // Tenants without the admin scope first: PlanAs is mostly for seeing what a cluster's state would do.
  const isAdmin = (t) => (t.scopes ?? []).includes('admin');
  const tenants = (res.tenants ?? []).filter((t) => !t.disabled).sort((a, b) => Number(isAdmin(a)) - Number(isAdmin(b)) || a.name.localeCompare(b.name));
  const tenant = h(
    'select',
    { id: 'planas-tenant', 'data-testid': 'planas-tenant', required: true },
    tenants.map((t) => h('option', { value: t.name }, t.name)),
  );
  const doc = h('textarea', { id: 'planas-document', 'data-testid': 'planas-document', rows: '14', spellcheck: 'false', placeholder: EXAMPLE });
  const policy = h(
    'select',
    { id: 'planas-policy', 'data-testid': 'planas-policy' },
    POLICIES.map(([v, text]) => h('option', { value: v }, text)),
  );
  const zones = h('input', { id: 'planas-zones', 'data-testid': 'planas-zones', type: 'text', placeholder: 'e.g. example.test (optional, comma separated)' });
  const out = h('div', { 'data-testid': 'planas-result' });
  const button = h('button', { type: 'submit', 'data-testid': 'planas-submit' }, 'Plan (dry run)');

  const form = h(
    'form',
    {
      class: 'planas',
      onsubmit: async (ev) => {
        ev.preventDefault();
        clear(out);
        button.disabled = true;
        out.append(h('p', { class: 'muted' }, 'Planning…'));
        try {
          const parsed = await adminApi('ParseDesiredState', { document: doc.value });
          const request = parsed.request ?? {};
          if (policy.value !== '') request.policy = policy.value;
          const extra = zones.value
            .split(',')
            .map((z) => z.trim())
            .filter((z) => z !== '');
          if (extra.length) request.desired = { ...(request.desired ?? {}), zones: [...(request.desired?.zones ?? []), ...extra] };
          const planned = await adminApi('PlanAs', { tenant: tenant.value, request });
          clear(out);
          out.append(
            h(
              'p',
              { class: 'muted' },
              'Dry run: nothing was sent to OVH and nothing will be from here. The plan is stored (Plans page); the tenant could apply it with the command on the last line.',
            ),
            planDiff(planned.plan ?? {}),
          );
        } catch (e) {
          clear(out);
          out.append(errorBox(e));
        } finally {
          button.disabled = false;
        }
      },
    },
    h('label', { for: 'planas-tenant' }, 'Tenant'),
    tenant,
    h('label', { for: 'planas-document' }, 'Desired state (YAML or JSON, as for dnsplane plan -f)'),
    doc,
    h('label', { for: 'planas-policy' }, 'Policy'),
    policy,
    h('label', { for: 'planas-zones' }, "Zones covered (added to the document's)"),
    zones,
    h('div', null, button),
  );
  page.append(
    h('h1', null, 'PlanAs — dry run for a tenant'),
    h(
      'p',
      { class: 'muted' },
      "Plans a desired state with the chosen tenant's grants and ownership and shows what applying it would change, with the exact OVH calls. Nothing is applied.",
    ),
    form,
    out,
  );
}
