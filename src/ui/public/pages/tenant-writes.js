// The Tenants page's writes (an admin's): create a tenant, disable or enable it, rotate its token
// (with a grace), set its change threshold and its withdraw-after; create, rotate and delete TSIG and OVH keys. Each opens
// write.js's dialog (form, confirm step, the RPC's answer) and redraws the page after success; a new
// token or secret is shown once, in that dialog, with the client configurations the CLI prints
// (client-configs.js).
import { fmtTime, h } from '../dom.js';
import { copyable, field, list, writeDialog } from '../write.js';
import { ipVersion, ovhKeyConfigBlocks, PLACEHOLDER_ENDPOINT, PLACEHOLDER_HOST, tsigConfigBlocks } from '../client-configs.js';

/** The graces a rotation may give the old token (or old secret): seconds, text. */
const gracesFor = (what) => [
  ['0', `none — the old ${what} stops at once`],
  ['600', '10 min'],
  ['3600', '1 h'],
  ['86400', '1 day'],
];
const GRACES = gracesFor('token');
/** The grace select of a key rotation, and its field. */
const graceField = (id, help) => {
  const select = h(
    'select',
    { id, 'data-testid': id },
    gracesFor('secret').map(([v, text]) => h('option', { value: v }, text)),
  );
  return { select, node: field('Grace for the old secret', select, help) };
};
/** What the rotation answered of the old secret's grace. */
const oldSecretText = (k, what, plural) =>
  k.oldSecretValidUntil
    ? `the old ${what} still ${plural ? 'work' : 'works'} until ${fmtTime(k.oldSecretValidUntil)}`
    : `the old ${what} no longer ${plural ? 'work' : 'works'}`;
const TSIG_ALGORITHMS = ['hmac-sha256', 'hmac-sha512', 'hmac-sha384', 'hmac-sha224', 'hmac-sha1', 'hmac-md5'];
const OVH_EXPIRIES = [
  ['0', 'never'],
  [String(30 * 86400), '30 days'],
  [String(90 * 86400), '90 days'],
  [String(365 * 86400), '1 year'],
];

const graceText = (s) => (s === 0 ? 'stops working at once' : `stays valid for ${s >= 3600 ? `${s / 3600} h` : `${s / 60} min`} more, then stops`);
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

/** "host", "host:port", "[v6]:port" or a bare IPv6 address -> { host, port, source }; empty: the placeholder. */
function dnsServerOf(value) {
  const v = value.trim();
  if (v === '') return { host: PLACEHOLDER_HOST, port: 53, source: 'placeholder' };
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(v) ?? (ipVersion(v) === 6 ? [v, v, undefined] : /^([^:]+)(?::(\d+))?$/.exec(v));
  const port = m && m[2] !== undefined ? Number(m[2]) : 53;
  if (!m || !Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`DNS server: must be HOST, HOST:PORT or [IPv6]:PORT (got "${v}")`);
  return { host: m[1], port, source: 'the console' };
}

/** The blocks of client configurations, each copyable. */
function configBlocks({ note, blocks }, testid) {
  return h(
    'div',
    { class: 'configs', 'data-testid': testid },
    h('p', { class: 'muted', 'data-testid': 'config-note' }, note),
    blocks.map((b, i) =>
      h(
        'details',
        { class: 'config', 'data-tool': b.tool, open: i === 0 },
        h('summary', null, b.title),
        b.text !== undefined ? copyable(b.text, `config-${b.tool}`) : h('p', { class: 'muted' }, `(not for this key: ${b.unsupported})`),
      ),
    ),
  );
}

const onceNote = (what) =>
  h(
    'p',
    { class: 'once' },
    h('strong', null, 'Shown once. '),
    `Copy ${what} now: dnsplane does not keep it readable and will not show it again; closing this box forgets it.`,
  );

/**
 * The writes, drawn into `page`. refresh() redraws the view; tenantOf(name) and zones() read what it
 * last loaded; who is the signed-in tenant (warned when a write concerns its own token).
 */
export function tenantWrites(page, { refresh, tenantOf, zones, who }) {
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

  const serverInput = () =>
    h('input', {
      id: 'tk-server',
      'data-testid': 'tk-server',
      type: 'text',
      autocomplete: 'off',
      spellcheck: 'false',
      placeholder: 'e.g. dns.example.com:53 (empty: a placeholder)',
    });
  const serverField = (input) =>
    field(
      'DNS server clients reach (for the configurations shown)',
      input,
      "Where cert-manager, lego, certbot, external-dns and nsupdate reach dnsplane's DNS listener. Not sent to the server.",
    );
  const tsigIssued = (verb, server) => (a) => {
    const k = a.key;
    const forConfig = {
      name: k.name,
      algorithm: k.algorithm,
      secret: a.secret,
      tenant: k.tenant,
      zones: tenantOf(k.tenant).zones ?? [],
      acmeOnly: Boolean(k.acmeOnly),
    };
    return h(
      'div',
      { 'data-testid': 'issued' },
      h(
        'p',
        null,
        `${verb} TSIG key "${k.name}." (${k.algorithm}, ${k.acmeOnly ? 'acme-only: _acme-challenge TXT records only' : 'acting as the tenant'}) for tenant "${k.tenant}"${verb === 'Rotated' ? `; ${oldSecretText(k, 'secret', false)}` : ''}. Its secret (base64):`,
      ),
      copyable(a.secret, 'secret-tsig'),
      onceNote('the secret'),
      configBlocks(tsigConfigBlocks(forConfig, server), 'tsig-configs'),
    );
  };

  const newTsigKey = (t) => {
    const name = h('input', {
      id: 'tk-name',
      'data-testid': 'tk-name',
      type: 'text',
      autocomplete: 'off',
      spellcheck: 'false',
      placeholder: `empty: ${t.name}-<8 hex>.dnsplane`,
    });
    const algorithm = h(
      'select',
      { id: 'tk-algorithm', 'data-testid': 'tk-algorithm' },
      TSIG_ALGORITHMS.map((a) => h('option', { value: a }, a)),
    );
    const acme = h('input', { id: 'tk-acme', 'data-testid': 'tk-acme', type: 'checkbox' });
    const server = serverInput();
    let dns;
    writeDialog(page, {
      title: `New TSIG key for ${t.name}`,
      testid: 'dialog-create-tsig',
      fields: [
        field('Key name', name, 'A DNS name, unique across tenants.'),
        field('Algorithm', algorithm, 'cert-manager takes hmac-md5, -sha1, -sha256 and -sha512; lego all but hmac-md5.'),
        h('div', { class: 'field check' }, acme, h('label', { for: 'tk-acme' }, 'acme-only (only _acme-challenge TXT records: enough for certificates)')),
        serverField(server),
      ],
      read: () => {
        dns = dnsServerOf(server.value);
        return {
          tenant: t.name,
          algorithm: algorithm.value,
          ...(name.value.trim() ? { name: name.value.trim() } : {}),
          ...(acme.checked ? { acmeOnly: true } : {}),
        };
      },
      describe: (r) =>
        `create a TSIG key ${r.name ? `"${r.name}" ` : ''}(${r.algorithm}${r.acmeOnly ? ', acme-only' : ''}) that acts as tenant "${t.name}" in DNS UPDATE, signed queries and zone transfers. Its secret is shown once, here.`,
      method: 'CreateTsigKey',
      verb: 'Create key',
      result: (a) => tsigIssued('Created', dns)(a),
      refresh,
    });
  };

  const rotateTsigKey = (k) => {
    const server = serverInput();
    const grace = graceField(
      'rk-grace',
      'Clients still signing with the old secret (a cert-manager Secret not updated yet) keep working during the grace, on every replica. A grace still running ends.',
    );
    let dns;
    writeDialog(page, {
      title: `Rotate TSIG key ${k.name}.`,
      testid: 'dialog-rotate-tsig',
      fields: [grace.node, serverField(server)],
      read: () => {
        dns = dnsServerOf(server.value);
        return { name: k.name, graceSeconds: Number(grace.select.value) };
      },
      describe: (r) =>
        `issue a new secret for TSIG key "${k.name}." (same name, algorithm and scope); the old secret ${graceText(r.graceSeconds)}, on every replica. The new secret is shown once, here.`,
      method: 'RotateTsigKey',
      verb: 'Rotate key',
      danger: true,
      result: (a) => tsigIssued('Rotated', dns)(a),
      refresh,
    });
  };

  const deleteTsigKey = (k) =>
    writeDialog(page, {
      title: `Delete TSIG key ${k.name}.`,
      testid: 'dialog-delete-tsig',
      read: () => ({ name: k.name }),
      describe: () => `delete TSIG key "${k.name}." of tenant "${k.tenant}": every client signing with it is refused, at once, on every replica.`,
      method: 'DeleteTsigKey',
      verb: 'Delete key',
      danger: true,
      refresh,
    });

  const endpointInput = () =>
    h('input', {
      id: 'ok-endpoint',
      'data-testid': 'ok-endpoint',
      type: 'text',
      autocomplete: 'off',
      spellcheck: 'false',
      value: `${location.origin}/ovh/1.0`,
    });
  const endpointOf = (input) => {
    const v = input.value.trim();
    return v === '' ? { url: PLACEHOLDER_ENDPOINT, source: 'placeholder' } : { url: v, source: 'the console' };
  };
  const ovhIssued = (verb, endpoint) => (a) => {
    const i = a.issued;
    const k = i.key;
    // The server's DNSPLANE_OVH_API_ADVERTISE wins over what the form said.
    const e = i.endpoint ? { url: i.endpoint, source: 'DNSPLANE_OVH_API_ADVERTISE' } : endpoint;
    const forConfig = {
      applicationKey: k.applicationKey,
      applicationSecret: i.applicationSecret,
      consumerKey: i.consumerKey,
      tenant: k.tenant,
      zones: tenantOf(k.tenant).zones ?? [],
    };
    return h(
      'div',
      { 'data-testid': 'issued' },
      h(
        'p',
        null,
        `${verb} OVH key ${k.applicationKey} for tenant "${k.tenant}"${k.expiresAt ? `, valid until ${fmtTime(k.expiresAt)}` : ''}${verb === 'Rotated' ? `; ${oldSecretText(k, 'secret and consumer key', true)}` : ''}.`,
      ),
      h(
        'dl',
        { class: 'facts' },
        h('dt', null, 'OVH_APPLICATION_KEY'),
        h('dd', { class: 'mono', 'data-testid': 'issued-application-key' }, k.applicationKey),
        h('dt', null, 'OVH_APPLICATION_SECRET'),
        h('dd', { class: 'mono', 'data-testid': 'secret-application-secret' }, i.applicationSecret),
        h('dt', null, 'OVH_CONSUMER_KEY'),
        h('dd', { class: 'mono', 'data-testid': 'secret-consumer-key' }, i.consumerKey),
      ),
      onceNote('the secret and the consumer key'),
      configBlocks(ovhKeyConfigBlocks(forConfig, e), 'ovh-configs'),
    );
  };

  const newOvhKey = (t) => {
    const expiry = h(
      'select',
      { id: 'ok-expiry', 'data-testid': 'ok-expiry' },
      OVH_EXPIRIES.map(([v, text]) => h('option', { value: v }, text)),
    );
    const endpoint = endpointInput();
    let e;
    writeDialog(page, {
      title: `New OVH key for ${t.name}`,
      testid: 'dialog-create-ovh',
      fields: [
        field('Consumer key expires', expiry),
        field(
          'Endpoint tools reach (for the configurations shown)',
          endpoint,
          "OVH_ENDPOINT: the served OVH API. The server's DNSPLANE_OVH_API_ADVERTISE wins when set. Not sent to the server.",
        ),
      ],
      read: () => {
        e = endpointOf(endpoint);
        return { tenant: t.name, ...(expiry.value !== '0' ? { expiresInSeconds: expiry.value } : {}) };
      },
      describe: (r) =>
        `create an OVH key (application key, secret, consumer key) that acts as tenant "${t.name}" against the OVH API dnsplane serves; ${r.expiresInSeconds ? `it expires in ${OVH_EXPIRIES.find(([v]) => v === r.expiresInSeconds)[1]}` : 'it never expires'}. The secret and the consumer key are shown once, here.`,
      method: 'CreateOvhKey',
      verb: 'Create key',
      result: (a) => ovhIssued('Created', e)(a),
      refresh,
    });
  };

  const rotateOvhKey = (k) => {
    const endpoint = endpointInput();
    const grace = graceField(
      'ro-grace',
      'Tools still calling with the old secret and consumer key keep working during the grace, on every replica. A grace still running ends.',
    );
    let e;
    writeDialog(page, {
      title: `Rotate OVH key ${k.applicationKey}`,
      testid: 'dialog-rotate-ovh',
      fields: [
        grace.node,
        field(
          'Endpoint tools reach (for the configurations shown)',
          endpoint,
          "The server's DNSPLANE_OVH_API_ADVERTISE wins when set. Not sent to the server.",
        ),
      ],
      read: () => {
        e = endpointOf(endpoint);
        return { applicationKey: k.applicationKey, graceSeconds: Number(grace.select.value) };
      },
      describe: (r) =>
        `issue a new application secret and consumer key for OVH key ${k.applicationKey} of tenant "${k.tenant}" (same application key, same expiry); the old ones ${r.graceSeconds === 0 ? 'stop working at once' : `stay valid for ${r.graceSeconds >= 3600 ? `${r.graceSeconds / 3600} h` : `${r.graceSeconds / 60} min`} more, then stop`}, on every replica. They are shown once, here.`,
      method: 'RotateOvhKey',
      verb: 'Rotate key',
      danger: true,
      result: (a) => ovhIssued('Rotated', e)(a),
      refresh,
    });
  };

  const deleteOvhKey = (k) =>
    writeDialog(page, {
      title: `Delete OVH key ${k.applicationKey}`,
      testid: 'dialog-delete-ovh',
      read: () => ({ applicationKey: k.applicationKey }),
      describe: () => `delete OVH key ${k.applicationKey} of tenant "${k.tenant}": every tool calling with it is refused, at once, on every replica.`,
      method: 'DeleteOvhKey',
      verb: 'Delete key',
      danger: true,
      refresh,
    });

  return { newTenant, toggle, rotateToken, threshold, withdrawAfter, newTsigKey, rotateTsigKey, deleteTsigKey, newOvhKey, rotateOvhKey, deleteOvhKey };
}
