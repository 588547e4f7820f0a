/**
 * What `dnsplane tenant ovh-key create|rotate` prints beside a new key: the four values a tool that
 * speaks the OVH API changes to move to dnsplane (OVH_ENDPOINT and the three keys), and each tool's
 * configuration in the form its own code reads. Pure: a key in, text out.
 *
 * - external-dns's in-tree OVH provider: --ovh-endpoint takes a URL (go-ovh: anything with a "/" is
 *   one); the three keys come from the environment (OVH_APPLICATION_KEY, …), here from a Secret.
 * - cert-manager-webhook-ovh (baarde's, and aureq's fork): the solver's config holds `endpoint`,
 *   `applicationKey`, `applicationSecretRef` and `consumerKey` (aureq's also takes refs for the keys).
 * - lego and Traefik (lego inside): OVH_ENDPOINT, OVH_APPLICATION_KEY, OVH_APPLICATION_SECRET,
 *   OVH_CONSUMER_KEY in the environment; OVH_ENDPOINT takes a URL.
 * - Caddy (caddy-dns/ovh over libdns/ovh): `endpoint`, `application_key`, `application_secret`,
 *   `consumer_key` in the `dns ovh` block.
 * - Terraform's OVH provider: `endpoint` (a URL), `application_key`, `application_secret`,
 *   `consumer_key`; it checks the credentials with GET /auth/details, which dnsplane answers.
 */
import { objectName, sh } from './text.js';

/** Where tools reach the served OVH API, and where that came from (for the note when it is a placeholder). */
export interface OvhApiEndpoint {
  url: string;
  /** "--endpoint", "DNSPLANE_OVH_API_ADVERTISE", "DNSPLANE_LISTEN", or "placeholder". */
  source: string;
}

export const PLACEHOLDER_ENDPOINT = 'https://REPLACE_ME_DNSPLANE_HOST/ovh/1.0';

export interface OvhKeyForConfig {
  applicationKey: string;
  applicationSecret: string;
  consumerKey: string;
  tenant: string;
  /** The tenant's zones ([] for an admin of every zone). */
  zones: string[];
}

export interface OvhKeyConfigs {
  env: string;
  externalDns: string;
  certManagerWebhookOvh: string;
  lego: string;
  traefik: string;
  caddy: string;
  terraform: string;
}

function env(k: OvhKeyForConfig, e: OvhApiEndpoint): string {
  return [`OVH_ENDPOINT=${sh(e.url)}`, `OVH_APPLICATION_KEY=${sh(k.applicationKey)}`, `OVH_APPLICATION_SECRET=${sh(k.applicationSecret)}`, `OVH_CONSUMER_KEY=${sh(k.consumerKey)}`].join('\n');
}

function secretCommand(namespace: string, name: string, k: OvhKeyForConfig): string {
  return [
    `kubectl -n ${namespace} create secret generic ${name} \\`,
    `  --from-literal=applicationKey=${sh(k.applicationKey)} \\`,
    `  --from-literal=applicationSecret=${sh(k.applicationSecret)} \\`,
    `  --from-literal=consumerKey=${sh(k.consumerKey)}`,
  ].join('\n');
}

function externalDns(k: OvhKeyForConfig, e: OvhApiEndpoint): string {
  const secret = objectName('dnsplane-ovh', k.tenant);
  const zones = k.zones.length > 0 ? k.zones : ['REPLACE_ME_ZONE'];
  const fromSecret = (envName: string, key: string) => [`  - name: ${envName}`, '    valueFrom:', '      secretKeyRef:', `        name: ${secret}`, `        key: ${key}`];
  return [
    '# The three keys in a Secret of external-dns\'s namespace:',
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

function certManagerWebhookOvh(k: OvhKeyForConfig, e: OvhApiEndpoint): string {
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

function lego(k: OvhKeyForConfig, e: OvhApiEndpoint): string {
  return [...env(k, e).split('\n').map((l) => `export ${l}`), `# lego --dns ovh --domains ${k.zones[0] ?? 'example.com'} --email REPLACE_ME@example.com run`].join('\n');
}

function traefik(k: OvhKeyForConfig, e: OvhApiEndpoint): string {
  return [
    '# Traefik container: the four values in its environment (lego inside Traefik reads them), and a resolver',
    ...env(k, e).split('\n'),
    '--certificatesresolvers.dnsplane.acme.dnschallenge.provider=ovh',
    '--certificatesresolvers.dnsplane.acme.email=REPLACE_ME@example.com',
    '--certificatesresolvers.dnsplane.acme.storage=/data/acme.json',
  ].join('\n');
}

function caddy(k: OvhKeyForConfig, e: OvhApiEndpoint): string {
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

function terraform(k: OvhKeyForConfig, e: OvhApiEndpoint): string {
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

export function ovhKeyConfigs(k: OvhKeyForConfig, e: OvhApiEndpoint): OvhKeyConfigs {
  return {
    env: env(k, e),
    externalDns: externalDns(k, e),
    certManagerWebhookOvh: certManagerWebhookOvh(k, e),
    lego: lego(k, e),
    traefik: traefik(k, e),
    caddy: caddy(k, e),
    terraform: terraform(k, e),
  };
}

const TITLES: Record<keyof OvhKeyConfigs, string> = {
  env: 'the four values to change (any tool that reads OVH_* from its environment)',
  externalDns: 'external-dns (--provider=ovh)',
  certManagerWebhookOvh: 'cert-manager-webhook-ovh (ClusterIssuer)',
  lego: 'lego (--dns ovh)',
  traefik: 'Traefik (ACME dnsChallenge, provider ovh)',
  caddy: 'Caddy (caddy-dns/ovh)',
  terraform: "Terraform (the OVH provider)",
};

/** Every tool's block, titled, for the terminal. */
export function renderOvhKeyConfigs(k: OvhKeyForConfig, e: OvhApiEndpoint): string[] {
  const configs = ovhKeyConfigs(k, e);
  const lines: string[] = [];
  if (e.source === 'placeholder') lines.push(`The endpoint below is a placeholder (${e.url}): pass --endpoint URL, or set DNSPLANE_OVH_API_ADVERTISE.`);
  else lines.push(`OVH_ENDPOINT: ${e.url} (from ${e.source}).`);
  for (const tool of Object.keys(TITLES) as Array<keyof OvhKeyConfigs>) lines.push('', `=== ${TITLES[tool]} ===`, configs[tool]);
  return lines;
}
