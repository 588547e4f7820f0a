// Zones: generation, record count, last sync, drift state, applies waiting for their rollback, the
// latest publishes' delays until the zone's authoritative servers answered them, and the zone's OVH account. For an admin, the
// protected names (AdminService.ListProtectedNames): a change there needs a second admin's approval;
// protected and lifted here (ProtectNames, UnprotectNames) through write.js's confirm step.
import { adminApi, zoneApi } from '../api.js';
import { ago, badge, clear, fmtTime, h } from '../dom.js';
import { pagedTable } from '../table.js';
import { recentCell } from '../visibility.js';
import { field, list, writeDialog } from '../write.js';

const DRIFT_TEXT = { unchecked: 'not checked yet', in_sync: 'in sync', drift_found: 'drift found' };

function driftCell(z) {
  const d = z.drift ?? {};
  const state = d.state ?? 'unchecked';
  const parts = [badge(DRIFT_TEXT[state] ?? state, state)];
  if (d.lastCheck) parts.push(h('div', { class: 'muted small', title: ago(d.lastCheck) }, `checked ${fmtTime(d.lastCheck)}`));
  if (d.lastFound) {
    parts.push(
      h('div', { class: 'muted small', title: ago(d.lastFound) }, `last found ${fmtTime(d.lastFound)}: +${d.added ?? 0} −${d.removed ?? 0} ~${d.updated ?? 0}`),
    );
  }
  return parts;
}

export async function zonesPage(page, { who, stale }) {
  const res = await zoneApi('ListZones', {});
  if (stale()) return;
  const zones = res.zones ?? [];
  page.append(
    h('h1', null, 'Zones'),
    h(
      'p',
      { class: 'muted' },
      who.admin ? 'Every zone dnsplane manages.' : `The zones of tenant "${who.tenant}".`,
      (res.suffixes ?? []).length ? ` Writes limited to: ${res.suffixes.join(', ')}.` : '',
    ),
    pagedTable({
      testid: 'zones',
      rows: zones,
      empty: 'No zone.',
      rowAttrs: (z) => ({ 'data-zone': z.name }),
      columns: [
        { title: 'Zone', cell: (z) => h('a', { href: `#/zones/${encodeURIComponent(z.name)}` }, z.unicodeName ? `${z.unicodeName} (${z.name})` : z.name) },
        { title: 'State', cell: (z) => badge(z.state ?? 'unsynced') },
        { title: 'Generation', class: 'num', cell: (z) => z.generation ?? '0' },
        { title: 'Records', class: 'num', cell: (z) => String(z.recordCount ?? 0) },
        { title: 'Last sync', class: 'time', cell: (z) => h('span', { title: ago(z.lastSync) }, fmtTime(z.lastSync)) },
        { title: 'Drift', cell: driftCell },
        {
          title: 'Applies in flight',
          class: 'num',
          cell: (z) => ((z.inFlightApplies ?? 0) > 0 ? badge(`${z.inFlightApplies} awaiting rollback`, 'in_flight') : '0'),
        },
        { title: 'Publish → visible (latest first)', cell: (z) => recentCell(z.recentPublishes) },
        // Its OVH account (issue 44), and why the zone is unavailable when its account cannot call OVH.
        {
          title: 'OVH account',
          cell: (z) => [z.account || 'default', z.unavailable ? h('div', { class: 'wrap' }, badge('unavailable', 'failed'), ` ${z.unavailable}`) : null],
        },
      ],
    }),
  );
  // OVH accounts (issue 44): an admin manages them on their own page.
  if (who.admin)
    page.append(
      h('p', { class: 'muted' }, 'Each zone is in one OVH account: ', h('a', { href: '#/accounts', 'data-testid': 'accounts-link' }, 'OVH accounts'), '.'),
    );
  if (who.admin)
    await protectedSection(
      page,
      zones.map((z) => z.name),
      stale,
    );
}

/** The protected names, with Protect and Unprotect (an admin's). */
async function protectedSection(page, zoneNames, stale) {
  const view = h('div', { 'data-testid': 'protected-view' });
  page.append(
    h('h2', null, 'Protected names'),
    h(
      'p',
      { class: 'muted' },
      'A plan that changes a record set at one of these names (or below one marked so) is refused — under the change threshold and with force too — ',
      'until an admin other than the one who asked approves it (Plans, or `dnsplane plan approve PLAN_ID`).',
    ),
    h(
      'div',
      { class: 'toolbar' },
      h('button', { type: 'button', class: 'primary', 'data-testid': 'protect-names', 'data-write': '', onclick: () => protect() }, '+ Protect names'),
    ),
    view,
  );
  const refresh = async () => {
    const res = await adminApi('ListProtectedNames', {});
    if (stale()) return;
    clear(view);
    view.append(
      pagedTable({
        testid: 'protected-names',
        rows: res.names ?? [],
        empty: 'No protected name.',
        rowAttrs: (p) => ({ 'data-name': p.name }),
        columns: [
          { title: 'Zone', cell: (p) => p.zone },
          { title: 'Name', cell: (p) => p.name },
          { title: 'Below too', cell: (p) => (p.suffix ? 'yes' : 'no') },
          { title: 'Since', class: 'time', cell: (p) => fmtTime(p.createdAt) },
          { title: 'By', cell: (p) => p.createdBy || 'the command line' },
          {
            title: 'Actions',
            class: 'actions-cell',
            cell: (p) =>
              h(
                'button',
                { type: 'button', class: 'small-button danger', 'data-testid': 'unprotect', 'data-write': '', onclick: () => unprotect(p) },
                'Unprotect',
              ),
          },
        ],
      }),
    );
  };
  const protect = () => {
    const zone = h(
      'select',
      { id: 'pn-zone', 'data-testid': 'pn-zone' },
      zoneNames.map((z) => h('option', { value: z }, z)),
    );
    const names = h('input', {
      id: 'pn-names',
      'data-testid': 'pn-names',
      type: 'text',
      autocomplete: 'off',
      spellcheck: 'false',
      placeholder: 'e.g. www.example.com, api.example.com ("@": the apex)',
    });
    const suffix = h('input', { id: 'pn-suffix', 'data-testid': 'pn-suffix', type: 'checkbox' });
    writeDialog(page, {
      title: 'Protect names',
      testid: 'dialog-protect-names',
      fields: [
        field('Zone', zone),
        field('Names', names, 'Absolute names in the zone, separated by commas or spaces.'),
        h('div', { class: 'field check' }, suffix, h('label', { for: 'pn-suffix' }, 'And every name below them')),
      ],
      read: () => ({ zone: zone.value, names: list(names.value), suffix: suffix.checked }),
      describe: (r) =>
        `protect ${r.names.join(', ') || '(no name)'}${r.suffix ? ' and every name below them' : ''} in zone ${r.zone}: a plan changing a record set there needs a second admin's approval, whatever its size, with force too.`,
      method: 'ProtectNames',
      verb: 'Protect',
      refresh,
    });
  };
  const unprotect = (p) =>
    writeDialog(page, {
      title: `Unprotect ${p.name}`,
      testid: 'dialog-unprotect-names',
      read: () => ({ zone: p.zone, names: [p.name] }),
      describe: () => `lift the protection of ${p.name} in zone ${p.zone}: its changes apply again like any other (the change threshold still holds).`,
      method: 'UnprotectNames',
      verb: 'Unprotect',
      danger: true,
      refresh,
    });
  await refresh();
}
