// The client configurations shown beside a new TSIG secret or OVH key — the ONE source of them: the
// console loads this module as it is, and `dnsplane tenant tsig|ovh-key create|rotate` import it
// (src/cli/key-configs.ts, which adds only the CLI's note on a placeholder: the console has no
// --server flag). Each tool's block is in the form its own code reads, checked against each tool's
// sources and, where installed, the tool itself (test/cli/tsig-tools.test.ts, test/ovhapi/*). Types in
// client-configs.d.ts beside it (the console server does not serve it). Pure: a key in, text out (no
// DOM, no storage, no import).

export const PLACEHOLDER_HOST = 'REPLACE_ME_DNS_HOST';
const PLACEHOLDER_IP = 'REPLACE_ME_DNS_IP';
export const PLACEHOLDER_ENDPOINT = 'https://REPLACE_ME_DNSPLANE_HOST/ovh/1.0';

const V4_SEG = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])';
const V4 = new RegExp(`^${V4_SEG}(?:\\.${V4_SEG}){3}$`);

/** 4, 6 or 0, as node:net's isIP answers (an IPv6 address is what a URL accepts in brackets). */
export function ipVersion(host) {
  if (V4.test(host)) return 4;
  if (!host.includes(':')) return 0;
  try {
    return new URL(`http://[${host}]/`).hostname !== '' ? 6 : 0;
  } catch {
    return 0;
  }
}

/** A Kubernetes object name: lowercase letters, digits and "-", at most 63 characters. */
function objectName(prefix, name) {
  return `${prefix}-${name.toLowerCase().replace(/[^a-z0-9-]+/g, '-')}`.slice(0, 63).replace(/-+$/, '');
}

/** A value for a shell line, single-quoted (keys, URLs and DNS names hold no quote). */
const sh = (value) => `'${value}'`;

// --- TSIG ---

const CERT_MANAGER = { 'hmac-md5': 'HMACMD5', 'hmac-sha1': 'HMACSHA1', 'hmac-sha256': 'HMACSHA256', 'hmac-sha512': 'HMACSHA512' };
const LEGO_ACCEPTS = ['hmac-sha1', 'hmac-sha224', 'hmac-sha256', 'hmac-sha384', 'hmac-sha512'];

/** host:port, with brackets around an IPv6 address. server: { host, port, source }. */
export function hostPort(s) {
  return `${ipVersion(s.host) === 6 ? `[${s.host}]` : s.host}:${s.port}`;
}

const absolute = (name) => `${name}.`;

// cert-manager's rfc2136 solver: tsigAlgorithm HMACMD5, HMACSHA1, HMACSHA256 or HMACSHA512 only; the
// secret in a Secret (tsigSecretSecretRef), the key name made absolute by cert-manager itself.
function tsigCertManager(k, s) {
  const algorithm = CERT_MANAGER[k.algorithm];
  if (!algorithm)
    return {
      unsupported: `cert-manager accepts only ${Object.keys(CERT_MANAGER).join(', ')}: create a key with one of those for it (--algorithm hmac-sha256)`,
    };
  const secretName = objectName('dnsplane-tsig', k.name);
  const lines = [
    `# The TSIG secret in a Secret: in cert-manager's namespace for a ClusterIssuer (its "cluster resource`,
    `# namespace"), in the Issuer's own namespace for an Issuer.`,
    `kubectl -n cert-manager create secret generic ${secretName} --from-literal=tsig-secret=${sh(k.secret)}`,
    '',
    '# Then apply (REPLACE the e-mail; the staging server first is wise):',
    'apiVersion: cert-manager.io/v1',
    'kind: ClusterIssuer',
    'metadata:',
    `  name: ${objectName('dnsplane', k.tenant)}`,
    'spec:',
    '  acme:',
    '    server: https://acme-v02.api.letsencrypt.org/directory',
    '    email: REPLACE_ME@example.com',
    '    privateKeySecretRef:',
    `      name: ${objectName('dnsplane-acme', k.tenant)}`,
    '    solvers:',
    '      - dns01:',
    '          rfc2136:',
    `            nameserver: "${hostPort(s)}"`,
    `            tsigKeyName: "${absolute(k.name)}"`,
    `            tsigAlgorithm: ${algorithm}`,
    '            tsigSecretSecretRef:',
    `              name: ${secretName}`,
    '              key: tsig-secret',
  ];
  if (k.zones.length > 0) lines.push('        selector:', '          dnsZones:', ...k.zones.map((z) => `            - "${z}"`));
  return { text: lines.join('\n') };
}

// lego (RFC2136_* environment): the algorithm as miekg/dns names it, with its trailing dot; lego refuses
// hmac-md5 ("unsupported TSIG algorithm"; Debian 12's lego 4.9 still took it).
function tsigLego(k, s) {
  if (!LEGO_ACCEPTS.includes(k.algorithm))
    return {
      unsupported: `current lego accepts only ${LEGO_ACCEPTS.join(', ')} ("unsupported TSIG algorithm" for hmac-md5): create a key with one of those for it (--algorithm hmac-sha256)`,
    };
  return {
    text: [
      `export RFC2136_NAMESERVER=${sh(hostPort(s))}`,
      `export RFC2136_TSIG_KEY=${sh(absolute(k.name))}`,
      `export RFC2136_TSIG_SECRET=${sh(k.secret)}`,
      `export RFC2136_TSIG_ALGORITHM=${sh(`${k.algorithm}.`)}`,
      `# lego --dns rfc2136 --domains ${k.zones[0] ?? 'example.com'} --email REPLACE_ME@example.com run`,
    ].join('\n'),
  };
}

// certbot-dns-rfc2136's ini file: the server must be an IP address, and the algorithm in upper case
// (certbot looks it up as written, and anything it does not find silently becomes HMAC-MD5).
function tsigCertbot(k, s) {
  const ip = ipVersion(s.host) !== 0;
  return {
    text: [
      '# rfc2136.ini (chmod 600); certbot certonly --dns-rfc2136 --dns-rfc2136-credentials rfc2136.ini -d …',
      ...(ip ? [] : [`# dns_rfc2136_server must be an IP address (certbot refuses a host name): the address of ${s.host}.`]),
      `dns_rfc2136_server = ${ip ? s.host : PLACEHOLDER_IP}`,
      `dns_rfc2136_port = ${s.port}`,
      `dns_rfc2136_name = ${absolute(k.name)}`,
      `dns_rfc2136_secret = ${k.secret}`,
      `dns_rfc2136_algorithm = ${k.algorithm.toUpperCase()}`,
    ].join('\n'),
  };
}

/**
 * The external-dns rfc2136 batch (record sets per UPDATE) answered well within miekg/dns's fixed 2 s
 * at this OVH rate: each record set is about one OVH call (one per target), plus the refresh, all
 * spaced by the rate limiter; 1.3 s of calls leaves 0.7 s for the network, a zone's first sync, and
 * other tenants' calls sharing the rate. 25 at the default 20/s.
 */
export function dnsUpdateBatchSize(ovhRate) {
  return Math.max(1, Math.floor(1.3 * ovhRate) - 1);
}

/** DNSPLANE_OVH_RATE's default: the console does not know the server's (the CLI reads its environment). */
export const DEFAULT_OVH_RATE = 20;

// external-dns's rfc2136 provider: --rfc2136-tsig-secret-alg in lower case as listed; it reads the zone
// by AXFR (--rfc2136-tsig-axfr); --rfc2136-batch-change-size fitting DNSPLANE_OVH_RATE (its client gives
// up after 2 s). Not for an acme-only key, which may write only challenges.
function tsigExternalDns(k, s, ovhRate = DEFAULT_OVH_RATE) {
  if (k.acmeOnly) return { unsupported: 'this key is acme-only (it may write only _acme-challenge TXT records): external-dns needs a key without --acme-only' };
  const zones = k.zones.length > 0 ? k.zones : ['REPLACE_ME_ZONE'];
  return {
    text: [
      '# external-dns arguments (the secret may come from a Secret as EXTERNAL_DNS_RFC2136_TSIG_SECRET instead):',
      '- --provider=rfc2136',
      `- --rfc2136-host=${s.host}`,
      `- --rfc2136-port=${s.port}`,
      ...zones.map((z) => `- --rfc2136-zone=${z}`),
      `- --rfc2136-tsig-keyname=${absolute(k.name)}`,
      `- --rfc2136-tsig-secret=${k.secret}`,
      `- --rfc2136-tsig-secret-alg=${k.algorithm}`,
      '- --rfc2136-tsig-axfr',
      `# at most ${dnsUpdateBatchSize(ovhRate)} record sets per UPDATE: answered within external-dns's 2 s at DNSPLANE_OVH_RATE=${ovhRate} (a name with several targets counts one per target)`,
      `- --rfc2136-batch-change-size=${dnsUpdateBatchSize(ovhRate)}`,
    ].join('\n'),
  };
}

/** The key file alone (what `nsupdate -k FILE` reads). k: { name, algorithm, secret }. */
export function nsupdateKeyFile(k) {
  return `key "${absolute(k.name)}" {\n\talgorithm ${k.algorithm};\n\tsecret "${k.secret}";\n};\n`;
}

// nsupdate: a BIND key file (`nsupdate -k FILE`).
function tsigNsupdate(k, s) {
  const file = `${k.name}.key`;
  const zone = k.zones[0] ?? 'example.com';
  return {
    text: [
      `cat > ${file} <<'EOF'`,
      nsupdateKeyFile(k).trimEnd(),
      'EOF',
      `chmod 600 ${file}`,
      `nsupdate -k ${file} <<'EOF'`,
      `server ${s.host} ${s.port}`,
      `zone ${zone}`,
      `update add _acme-challenge.${zone}. 60 TXT "test"`,
      'send',
      'EOF',
    ].join('\n'),
  };
}

const TSIG_TOOLS = [
  ['certManager', 'cert-manager (ClusterIssuer, rfc2136 solver)', tsigCertManager],
  ['lego', 'lego (--dns rfc2136)', tsigLego],
  ['certbot', 'certbot (certbot-dns-rfc2136)', tsigCertbot],
  ['externalDns', 'external-dns (--provider=rfc2136)', tsigExternalDns],
  ['nsupdate', 'nsupdate (BIND key file)', tsigNsupdate],
];

/**
 * Each tool's block for a TSIG key: [{ tool, title, text?, unsupported? }], and the note on the
 * server first. k: { name, algorithm, secret, tenant, zones, acmeOnly }; s: { host, port, source };
 * ovhRate: DNSPLANE_OVH_RATE, which external-dns's batch size must fit.
 */
export function tsigConfigBlocks(k, s, ovhRate = DEFAULT_OVH_RATE) {
  const note =
    s.source === 'placeholder'
      ? `The DNS server below is a placeholder (${hostPort(s)}): replace it with where clients reach dnsplane's DNS listener (or give "DNS server" when creating or rotating a key).`
      : `DNS server: ${hostPort(s)} (from ${s.source}).`;
  return { note, blocks: TSIG_TOOLS.map(([tool, title, f]) => ({ tool, title, ...f(k, s, ovhRate) })) };
}

// --- OVH keys ---

function ovhEnv(k, e) {
  return [
    `OVH_ENDPOINT=${sh(e.url)}`,
    `OVH_APPLICATION_KEY=${sh(k.applicationKey)}`,
    `OVH_APPLICATION_SECRET=${sh(k.applicationSecret)}`,
    `OVH_CONSUMER_KEY=${sh(k.consumerKey)}`,
  ].join('\n');
}

function secretCommand(namespace, name, k) {
  return [
    `kubectl -n ${namespace} create secret generic ${name} \\`,
    `  --from-literal=applicationKey=${sh(k.applicationKey)} \\`,
    `  --from-literal=applicationSecret=${sh(k.applicationSecret)} \\`,
    `  --from-literal=consumerKey=${sh(k.consumerKey)}`,
  ].join('\n');
}

// external-dns's in-tree OVH provider: --ovh-endpoint takes a URL (go-ovh: anything with a "/" is one);
// the three keys come from the environment (OVH_APPLICATION_KEY, …), here from a Secret.
function ovhExternalDns(k, e) {
  const secret = objectName('dnsplane-ovh', k.tenant);
  const zones = k.zones.length > 0 ? k.zones : ['REPLACE_ME_ZONE'];
  const fromSecret = (envName, key) => [`  - name: ${envName}`, '    valueFrom:', '      secretKeyRef:', `        name: ${secret}`, `        key: ${key}`];
  return [
    "# The three keys in a Secret of external-dns's namespace:",
    secretCommand('external-dns', secret, k),
    '',
    '# external-dns container: args',
    '- --provider=ovh',
    `- --ovh-endpoint=${e.url}`,
    ...zones.map((z) => `- --domain-filter=${z}`),
    '# and env',
    'env:',
    ...fromSecret('OVH_APPLICATION_KEY', 'applicationKey'),
    ...fromSecret('OVH_APPLICATION_SECRET', 'applicationSecret'),
    ...fromSecret('OVH_CONSUMER_KEY', 'consumerKey'),
  ].join('\n');
}

// cert-manager-webhook-ovh (baarde's, and aureq's fork): the solver's config holds `endpoint`,
// `applicationKey`, `applicationSecretRef` and `consumerKey` (aureq's also takes refs for the keys).
function ovhCertManagerWebhook(k, e) {
  const secret = objectName('dnsplane-ovh', k.tenant);
  const lines = [
    `# The keys in a Secret: in cert-manager's namespace for a ClusterIssuer, in the Issuer's own for an Issuer.`,
    secretCommand('cert-manager', secret, k),
    '',
    '# Then apply (REPLACE the e-mail, and groupName with the one your webhook was installed with):',
    'apiVersion: cert-manager.io/v1',
    'kind: ClusterIssuer',
    'metadata:',
    `  name: ${objectName('dnsplane-ovh', k.tenant)}`,
    'spec:',
    '  acme:',
    '    server: https://acme-v02.api.letsencrypt.org/directory',
    '    email: REPLACE_ME@example.com',
    '    privateKeySecretRef:',
    `      name: ${objectName('dnsplane-ovh-acme', k.tenant)}`,
    '    solvers:',
    '      - dns01:',
    '          webhook:',
    '            groupName: REPLACE_ME.acme.example.com',
    '            solverName: ovh',
    '            config:',
    `              endpoint: ${e.url}`,
    `              applicationKey: ${k.applicationKey}`,
    '              applicationSecretRef:',
    `                name: ${secret}`,
    '                key: applicationSecret',
    `              consumerKey: ${k.consumerKey}`,
  ];
  if (k.zones.length > 0) lines.push('        selector:', '          dnsZones:', ...k.zones.map((z) => `            - "${z}"`));
  return lines.join('\n');
}

// lego and Traefik (lego inside): OVH_* in the environment; OVH_ENDPOINT takes a URL.
function ovhLego(k, e) {
  return [
    ...ovhEnv(k, e)
      .split('\n')
      .map((l) => `export ${l}`),
    `# lego --dns ovh --domains ${k.zones[0] ?? 'example.com'} --email REPLACE_ME@example.com run`,
  ].join('\n');
}

function ovhTraefik(k, e) {
  return [
    '# Traefik container: the four values in its environment (lego inside Traefik reads them), and a resolver',
    ...ovhEnv(k, e).split('\n'),
    '--certificatesresolvers.dnsplane.acme.dnschallenge.provider=ovh',
    '--certificatesresolvers.dnsplane.acme.email=REPLACE_ME@example.com',
    '--certificatesresolvers.dnsplane.acme.storage=/data/acme.json',
  ].join('\n');
}

// Caddy (caddy-dns/ovh over libdns/ovh): `endpoint`, `application_key`, `application_secret`,
// `consumer_key` in the `dns ovh` block.
function ovhCaddy(k, e) {
  return [
    '# Caddyfile, in a site block (Caddy built with github.com/caddy-dns/ovh); the values may come from {$ENV} too',
    'tls {',
    '\tdns ovh {',
    `\t\tendpoint ${e.url}`,
    `\t\tapplication_key ${k.applicationKey}`,
    `\t\tapplication_secret ${k.applicationSecret}`,
    `\t\tconsumer_key ${k.consumerKey}`,
    '\t}',
    '}',
  ].join('\n');
}

// Terraform's OVH provider: `endpoint` (a URL) and the three keys; it checks the credentials with
// GET /auth/details, which dnsplane answers.
function ovhTerraform(k, e) {
  return [
    '# The OVH provider (ovh_domain_zone_record resources); the same values may come from the OVH_* environment',
    'provider "ovh" {',
    `  endpoint           = "${e.url}"`,
    `  application_key    = "${k.applicationKey}"`,
    `  application_secret = "${k.applicationSecret}"`,
    `  consumer_key       = "${k.consumerKey}"`,
    '}',
  ].join('\n');
}

const OVH_TOOLS = [
  ['env', 'the four values to change (any tool that reads OVH_* from its environment)', ovhEnv],
  ['externalDns', 'external-dns (--provider=ovh)', ovhExternalDns],
  ['certManagerWebhookOvh', 'cert-manager-webhook-ovh (ClusterIssuer)', ovhCertManagerWebhook],
  ['lego', 'lego (--dns ovh)', ovhLego],
  ['traefik', 'Traefik (ACME dnsChallenge, provider ovh)', ovhTraefik],
  ['caddy', 'Caddy (caddy-dns/ovh)', ovhCaddy],
  ['terraform', 'Terraform (the OVH provider)', ovhTerraform],
];

/**
 * Each tool's block for an OVH key: [{ tool, title, text }], and the note on the endpoint first.
 * k: { applicationKey, applicationSecret, consumerKey, tenant, zones }; e: { url, source }.
 */
export function ovhKeyConfigBlocks(k, e) {
  const note =
    e.source === 'placeholder'
      ? `The endpoint below is a placeholder (${e.url}): replace it with where tools reach dnsplane (or set DNSPLANE_OVH_API_ADVERTISE on the servers).`
      : `OVH_ENDPOINT: ${e.url} (from ${e.source}).`;
  return { note, blocks: OVH_TOOLS.map(([tool, title, f]) => ({ tool, title, text: f(k, e) })) };
}
