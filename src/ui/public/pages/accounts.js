// OVH accounts (AdminService.ListOvhAccounts; issue 44): beside `default` (the OVH_* variables), each
// account's endpoint, application key, rate, zones and state as this replica last saw it (ok,
// refused, down, disabled, unreadable) — never a secret. An admin adds one (AddOvhAccount: the
// credentials pasted as the three lines of a credentials file, proved by one OVH call before anything
// is stored), rotates its credentials, disables, enables or removes it, each through write.js's
// confirm step; the view is redrawn from the API after each.
import { adminApi } from '../api.js';
import { badge, clear, fmtTime, h } from '../dom.js';
import { pagedTable } from '../table.js';
import { field, list, writeDialog } from '../write.js';

const CREDENTIALS_HINT =
  'The three lines OVH_APPLICATION_KEY=…, OVH_APPLICATION_SECRET=…, OVH_CONSUMER_KEY=…; sent to the server, sealed there, never shown again.';

function credentialsInput(id) {
  return h('textarea', { id, 'data-testid': id, rows: 3, autocomplete: 'off', spellcheck: 'false', placeholder: 'OVH_APPLICATION_KEY=…' });
}

export async function accountsPage(page, { stale, who }) {
  const view = h('div', { 'data-testid': 'accounts-view' });
  const button = (text, testid, onclick, kind) =>
    who.admin ? h('button', { type: 'button', class: `small-button${kind ? ` ${kind}` : ''}`, 'data-testid': testid, 'data-write': '', onclick }, text) : null;
  page.append(
    h('h1', null, 'OVH accounts'),
    h(
      'p',
      { class: 'muted' },
      'The account "default" is the OVH_* variables. Each account below calls its own endpoint with its own credentials, at its own rate, for its own zones; ',
      'one that OVH refuses or that is down makes only its zones unavailable.',
    ),
    // A write control only for an admin (a tenant token is refused the page: it gets none).
    who.admin
      ? h(
          'div',
          { class: 'toolbar' },
          h('button', { type: 'button', class: 'primary', 'data-testid': 'new-account', 'data-write': '', onclick: () => add() }, '+ Add account'),
        )
      : null,
    view,
  );
  const refresh = async () => {
    const res = await adminApi('ListOvhAccounts', {});
    if (stale()) return;
    clear(view);
    view.append(
      pagedTable({
        testid: 'accounts',
        rows: res.accounts ?? [],
        empty: 'No OVH account beside "default".',
        rowAttrs: (a) => ({ 'data-account': a.name }),
        columns: [
          { title: 'Name', cell: (a) => a.name },
          { title: 'Endpoint', cell: (a) => a.endpoint },
          { title: 'Application key', cell: (a) => a.applicationKey },
          { title: 'Rate', class: 'num', cell: (a) => (a.rate ? `${a.rate}/s` : 'default') },
          { title: 'Zones', cell: (a) => (a.zones ?? []).join(', ') || '-' },
          {
            title: 'State',
            cell: (a) => [
              badge(a.status ?? 'ok', a.status === 'ok' ? undefined : 'failed'),
              a.reason ? h('div', { class: 'muted small wrap' }, a.reason) : null,
            ],
          },
          { title: 'Rotated', class: 'time', cell: (a) => fmtTime(a.rotatedAt) },
          {
            title: 'Actions',
            class: 'actions-cell',
            cell: (a) => [
              button('Rotate', 'rotate-account', () => rotate(a)),
              button(a.enabled ? 'Disable' : 'Enable', a.enabled ? 'disable-account' : 'enable-account', () => setEnabled(a, !a.enabled)),
              button('Remove', 'remove-account', () => remove(a), 'danger'),
            ],
          },
        ],
      }),
    );
  };
  const add = () => {
    const name = h('input', { id: 'ac-name', 'data-testid': 'ac-name', type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: 'staging' });
    const endpoint = h('input', { id: 'ac-endpoint', 'data-testid': 'ac-endpoint', type: 'text', autocomplete: 'off', spellcheck: 'false', value: 'ovh-eu' });
    const rate = h('input', { id: 'ac-rate', 'data-testid': 'ac-rate', type: 'number', min: '0', value: '0' });
    const zones = h('input', {
      id: 'ac-zones',
      'data-testid': 'ac-zones',
      type: 'text',
      autocomplete: 'off',
      spellcheck: 'false',
      placeholder: 'every zone it holds',
    });
    const credentials = credentialsInput('ac-credentials');
    writeDialog(page, {
      title: 'Add an OVH account',
      testid: 'dialog-add-account',
      fields: [
        field('Name', name),
        field('Endpoint', endpoint, 'ovh-eu, ovh-ca, ovh-us or an https:// URL.'),
        field('Rate', rate, 'Calls per second, shared by every replica; 0: DNSPLANE_OVH_RATE.'),
        field('Zones', zones, 'Separated by commas or spaces; empty: every zone the account holds.'),
        field('Credentials', credentials, CREDENTIALS_HINT),
      ],
      read: () => ({
        name: name.value.trim(),
        endpoint: endpoint.value.trim(),
        rate: Number(rate.value || 0),
        zones: list(zones.value),
        credentials: credentials.value,
      }),
      // The request shown before it is sent holds the credentials: the confirm step shows it, as the admin pasted it.
      describe: (r) => `add OVH account ${r.name} at ${r.endpoint}: its credentials are proved with one OVH call first; nothing is stored if OVH refuses them.`,
      method: 'AddOvhAccount',
      verb: 'Add account',
      refresh,
    });
  };
  const rotate = (a) => {
    const credentials = credentialsInput('ac-rotate-credentials');
    writeDialog(page, {
      title: `Rotate ${a.name}`,
      testid: 'dialog-rotate-account',
      fields: [field('New credentials', credentials, CREDENTIALS_HINT)],
      read: () => ({ name: a.name, credentials: credentials.value }),
      describe: () => `replace the credentials of OVH account ${a.name} (proved with one OVH call first); every replica uses them within seconds.`,
      method: 'RotateOvhAccount',
      verb: 'Rotate',
      refresh,
    });
  };
  const setEnabled = (a, enabled) =>
    writeDialog(page, {
      title: `${enabled ? 'Enable' : 'Disable'} ${a.name}`,
      testid: 'dialog-enable-account',
      read: () => ({ name: a.name, enabled }),
      describe: () =>
        enabled
          ? `enable OVH account ${a.name}: its zones are called again.`
          : `disable OVH account ${a.name}: its calls stop at once and its zones are unavailable.`,
      method: 'SetOvhAccountEnabled',
      verb: enabled ? 'Enable' : 'Disable',
      danger: !enabled,
      refresh,
    });
  const remove = (a) =>
    writeDialog(page, {
      title: `Remove ${a.name}`,
      testid: 'dialog-remove-account',
      read: () => ({ name: a.name }),
      describe: () => `remove OVH account ${a.name}: its calls stop; its zones stay, unavailable, until an account holding them is added.`,
      method: 'RemoveOvhAccount',
      verb: 'Remove',
      danger: true,
      refresh,
    });
  await refresh();
}
