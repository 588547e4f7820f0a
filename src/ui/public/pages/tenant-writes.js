// The Tenants page's writes to tenants (an admin's): create a tenant, disable or enable it, rotate
// its token (with a grace), set its change threshold and its withdraw-after. Each opens write.js's
// dialog (form, confirm step, the RPC's answer) and redraws the page after success; a new token is
// shown once, in that dialog. Their TSIG and OVH keys' writes are in key-writes.js.
import { fmtTime, h } from '../dom.js';
import { copyable, field, list, writeDialog } from '../write.js';
import { gracesFor, graceText, onceNote } from './secrets-shown.js';

const GRACES = gracesFor('token');

/** A tenant's change threshold, as the page shows it. */
export const thresholdText = (t) => (t.maxChangePercent === undefined || t.maxChangePercent === null ? 'server default' : `${t.maxChangePercent}%`);

/** A tenant's withdraw_after (a Connect JSON duration, "300s"), as the page shows it. */
export const withdrawAfterText = (t) => {
  if (!t.withdrawAfter) return 'off';
  const s = Number(String(t.withdrawAfter).replace(/s$/, ''));
  return s % 3600 === 0 ? `${s / 3600}h` : s % 60 === 0 ? `${s / 60}m` : `${s}s`;
};

/** "5m", "30s", "1h", "90" (seconds) -> whole seconds; "", "off" -> undefined (off). */
function withdrawSeconds(value) {
  const v = value.trim().toLowerCase();
  if (v === '' || v === 'off') return undefined;
  const m = /^(\d+)(s|m|h)?$/.exec(v);
  if (!m) throw new Error(`withdrawAfter: must be a duration like 30s, 5m or 1h (whole seconds), or empty/off (got "${value.trim()}")`);
  return Number(m[1]) * { s: 1, m: 60, h: 3600 }[m[2] ?? 's'];
}

/**
 * The writes, drawn into `page`. refresh() redraws the view; zones() reads what it last loaded; who is
 * the signed-in tenant (warned when a write concerns its own token).
 */
export function tenantWrites(page, { refresh, zones, who }) {
  const mine = (t) => t.name === who.tenant;
  const newTenant = () => {
    const name = h('input', { id: 'nt-name', 'data-testid': 'nt-name', type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. team-a' });
    const zoneInput = h('input', {
      id: 'nt-zones',
      'data-testid': 'nt-zones',
      type: 'text',
      autocomplete: 'off',
      spellcheck: 'false',
      placeholder: 'e.g. example.com, example.net',
    });
    const suffixes = h('input', {
      id: 'nt-suffixes',
      'data-testid': 'nt-suffixes',
      type: 'text',
      autocomplete: 'off',
      spellcheck: 'false',
      placeholder: 'optional, e.g. team-a.example.com',
    });
    const admin = h('input', { id: 'nt-admin', 'data-testid': 'nt-admin', type: 'checkbox' });
    writeDialog(page, {
      title: 'New tenant',
      testid: 'dialog-create-tenant',
      fields: [
        field('Name', name, '1-63 characters of a-z, 0-9 and "-", starting with a letter or digit.'),
        field('Zones', zoneInput, `Zones it may read and write (managed: ${zones().join(', ') || 'none yet'}). An admin with none: every zone.`),
        field('Suffixes', suffixes, 'Names it may write under; empty: the whole of its zones.'),
        h('div', { class: 'field check' }, admin, h('label', { for: 'nt-admin' }, "Admin scope (may call AdminService: this console's writes, every zone)")),
      ],
      read: () => ({ name: name.value.trim(), zones: list(zoneInput.value), suffixes: list(suffixes.value), scopes: admin.checked ? ['admin'] : [] }),
      describe: (r) => [
        `create tenant "${r.name}"`,
        r.scopes.includes('admin') ? ' with the admin scope' : '',
        `, for ${r.zones.length ? `the zones ${r.zones.join(', ')}` : r.scopes.includes('admin') ? 'every zone' : 'no zone'}`,
        r.suffixes.length ? `, writing only under ${r.suffixes.join(', ')}` : '',
        '. Its bearer token is shown once, here, after it is created.',
      ],
      method: 'CreateTenant',
      verb: 'Create tenant',
      result: (a) =>
        h(
          'div',
          { 'data-testid': 'issued' },
          h('p', null, `Created tenant "${a.tenant.name}". Its bearer token:`),
          copyable(a.token, 'secret-token'),
          onceNote('the token'),
        ),
      refresh,
    });
  };

  const toggle = (t) =>
    writeDialog(page, {
      title: t.disabled ? `Enable tenant ${t.name}` : `Disable tenant ${t.name}`,
      testid: 'dialog-disable-tenant',
      read: () => ({ name: t.name, ...(t.disabled ? { enable: true } : {}) }),
      describe: () =>
        t.disabled
          ? `enable tenant "${t.name}": its token works again.`
          : `disable tenant "${t.name}": every call with its token fails authentication, at once; its records and their ownership stay.${mine(t) ? ' This is the tenant you are signed in as: the console will sign you out.' : ''}`,
      method: 'DisableTenant',
      verb: t.disabled ? 'Enable' : 'Disable',
      danger: !t.disabled,
      refresh,
    });

  const rotateToken = (t) => {
    const grace = h(
      'select',
      { id: 'rt-grace', 'data-testid': 'rt-grace' },
      GRACES.map(([v, text]) => h('option', { value: v }, text)),
    );
    writeDialog(page, {
      title: `Rotate the token of ${t.name}`,
      testid: 'dialog-rotate-token',
      fields: [
        field(
          'Grace for the old token',
          grace,
          'Clusters whose Secret still holds the old token keep working during the grace (external-dns treats a 401 as fatal). A grace still running ends.',
        ),
      ],
      read: () => ({ name: t.name, graceSeconds: Number(grace.value) }),
      describe: (r) =>
        `issue a new bearer token for tenant "${t.name}"; the old token ${graceText(r.graceSeconds)}. The new token is shown once, here.${mine(t) ? ' This is the tenant you are signed in as: sign in again with the new token.' : ''}`,
      method: 'RotateTenantToken',
      verb: 'Rotate token',
      danger: true,
      result: (a) =>
        h(
          'div',
          { 'data-testid': 'issued' },
          h(
            'p',
            null,
            `Rotated the token of "${a.tenant.name}"; ${a.tenant.previousTokenValidUntil ? `the old token still works until ${fmtTime(a.tenant.previousTokenValidUntil)}` : 'the old token no longer works'}. The new bearer token:`,
          ),
          copyable(a.token, 'secret-token'),
          onceNote('the token'),
        ),
      refresh,
    });
  };

  const threshold = (t) => {
    const percent = h('input', {
      id: 'th-percent',
      'data-testid': 'th-percent',
      type: 'text',
      inputmode: 'numeric',
      autocomplete: 'off',
      value: t.maxChangePercent ?? '',
      placeholder: "empty: the server's default",
    });
    writeDialog(page, {
      title: `Change threshold of ${t.name}`,
      testid: 'dialog-threshold',
      fields: [
        field(
          'Max change percent',
          percent,
          "0-100: a plan updating or deleting more than this share of the tenant's sets in a zone (of 10 or more) needs force. Empty: the server's DNSPLANE_MAX_CHANGE_PERCENT.",
        ),
      ],
      read: () => {
        const v = percent.value.trim();
        if (v !== '' && !/^-?\d+$/.test(v)) throw new Error(`maxChangePercent: must be a whole number 0-100, or empty for the server's default (got "${v}")`);
        return v === '' ? { name: t.name } : { name: t.name, maxChangePercent: Number(v) };
      },
      describe: (r) =>
        `set tenant "${t.name}"'s change threshold to ${r.maxChangePercent === undefined ? "the server's default (DNSPLANE_MAX_CHANGE_PERCENT)" : `${r.maxChangePercent}%`} (now: ${thresholdText(t)}).`,
      method: 'SetTenantMaxChangePercent',
      verb: 'Set threshold',
      refresh,
    });
  };

  const withdrawAfter = (t) => {
    const duration = h('input', {
      id: 'wa-duration',
      'data-testid': 'wa-duration',
      type: 'text',
      autocomplete: 'off',
      spellcheck: 'false',
      value: t.withdrawAfter ? withdrawAfterText(t) : '',
      placeholder: 'e.g. 5m; empty: off',
    });
    writeDialog(page, {
      title: `Withdraw after silence: ${t.name}`,
      testid: 'dialog-withdraw-after',
      fields: [
        field(
          'Withdraw after',
          duration,
          'When the tenant makes no authenticated call this long (e.g. 5m, 30s), its targets of shared record sets leave OVH — never the last target of a set; exclusive sets stay — and come back at its next call. Empty or off: never.',
        ),
      ],
      read: () => {
        const seconds = withdrawSeconds(duration.value);
        return seconds === undefined ? { name: t.name } : { name: t.name, withdrawAfter: `${seconds}s` };
      },
      describe: (r) =>
        r.withdrawAfter === undefined
          ? `turn off withdrawal for silence for tenant "${t.name}" (now: ${withdrawAfterText(t)}); what was withdrawn for its silence is restored.`
          : `withdraw tenant "${t.name}"'s targets of shared record sets after ${withdrawAfterText({ withdrawAfter: r.withdrawAfter })} without a call (now: ${withdrawAfterText(t)}).`,
      method: 'SetTenantWithdrawAfter',
      verb: 'Set',
      refresh,
    });
  };

  return { newTenant, toggle, rotateToken, threshold, withdrawAfter };
}
