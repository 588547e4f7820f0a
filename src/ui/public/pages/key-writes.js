// The Tenants page's writes to tenants' keys (an admin's): create, rotate (with a grace) and delete
// TSIG keys and OVH keys. Each opens write.js's dialog (form, confirm step, the RPC's answer) and
// redraws the page after success; a new secret is shown once, in that dialog, with the client
// configurations the CLI prints (client-configs.js).
import { fmtTime, h } from '../dom.js';
import { copyable, field, writeDialog } from '../write.js';
import { ipVersion, ovhKeyConfigBlocks, PLACEHOLDER_ENDPOINT, PLACEHOLDER_HOST, tsigConfigBlocks } from '../client-configs.js';
import { gracesFor, graceText, onceNote } from './secrets-shown.js';

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

/**
 * The key writes, drawn into `page`. refresh() redraws the view; tenantOf(name) reads the tenant it
 * last loaded (its zones, for the configurations shown).
 */
export function keyWrites(page, { refresh, tenantOf }) {
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

  return { newTsigKey, rotateTsigKey, deleteTsigKey, newOvhKey, rotateOvhKey, deleteOvhKey };
}
