/**
 * What `dnsplane tenant tsig create|rotate` prints beside a new secret: ready-to-paste configuration for
 * the tools that speak DNS UPDATE with TSIG, each in the form its own code reads (checked against each
 * tool's sources and, where installed, the tool itself: test/cli/tsig.test.ts). Pure: a key in, text out.
 *
 * - cert-manager's rfc2136 solver: tsigAlgorithm HMACMD5, HMACSHA1, HMACSHA256 or HMACSHA512 only;
 *   the secret in a Secret (tsigSecretSecretRef), the key name made absolute by cert-manager itself.
 * - lego (RFC2136_* environment): the algorithm as miekg/dns names it, with its trailing dot; lego
 *   refuses hmac-md5 ("unsupported TSIG algorithm"; Debian 12's lego 4.9 still took it).
 * - certbot-dns-rfc2136's ini file: the server must be an IP address, and the algorithm in upper case
 *   (certbot looks it up as written, and anything it does not find silently becomes HMAC-MD5).
 * - external-dns's rfc2136 provider: --rfc2136-tsig-secret-alg in lower case as listed; it reads the
 *   zone by AXFR (--rfc2136-tsig-axfr); --rfc2136-batch-change-size fitting DNSPLANE_OVH_RATE
 *   (dnsUpdateBatchSize: its client gives up after 2 s). Not for an acme-only key, which may write
 *   only challenges.
 * - nsupdate: a BIND key file (`nsupdate -k FILE`).
 */
import { isIP } from 'node:net';
import type { TsigAlgorithm } from '../core/tsig-keys.js';
import { objectName, sh } from './text.js';

/** Where clients reach the DNS listener, and where that came from (for the note when it is a placeholder). */
export interface DnsServer {
  host: string;
  port: number;
  /** "--server", "DNSPLANE_DNS_ADVERTISE", "DNSPLANE_DNS_LISTEN", or "placeholder". */
  source: string;
}

export interface KeyForConfig {
  /** Lowercase, no trailing dot. */
  name: string;
  algorithm: TsigAlgorithm;
  /** base64. */
  secret: string;
  tenant: string;
  /** The tenant's zones ([] for an admin of every zone). */
  zones: string[];
  acmeOnly: boolean;
}

/**
 * The external-dns rfc2136 batch (record sets per UPDATE) answered well within miekg/dns's fixed 2 s
 * at this OVH rate: each record set is about one OVH call (one per target), plus the refresh, all
 * spaced by the rate limiter (the UPDATE waits for nothing else); 1.3 s of calls leaves 0.7 s for the
 * network, a zone's first sync, and other tenants' calls sharing the rate. 25 at the default 20/s.
 */
export function dnsUpdateBatchSize(ovhRate: number): number {
  return Math.max(1, Math.floor(1.3 * ovhRate) - 1);
}

export const DEFAULT_OVH_RATE = 20;

export const PLACEHOLDER_HOST = 'REPLACE_ME_DNS_HOST';
const PLACEHOLDER_IP = 'REPLACE_ME_DNS_IP';

/** Algorithms as each tool spells them; absent: the tool does not accept it. */
const CERT_MANAGER: Partial<Record<TsigAlgorithm, string>> = { 'hmac-md5': 'HMACMD5', 'hmac-sha1': 'HMACSHA1', 'hmac-sha256': 'HMACSHA256', 'hmac-sha512': 'HMACSHA512' };
const LEGO_ACCEPTS: readonly TsigAlgorithm[] = ['hmac-sha1', 'hmac-sha224', 'hmac-sha256', 'hmac-sha384', 'hmac-sha512'];

export interface ToolConfig {
  /** Why the tool cannot use this key, when it cannot; then there is no text. */
  unsupported?: string;
  text?: string;
}

export interface TsigConfigs {
  certManager: ToolConfig;
  lego: ToolConfig;
  certbot: ToolConfig;
  externalDns: ToolConfig;
  nsupdate: ToolConfig;
}

/** host:port, with brackets around an IPv6 address. */
export function hostPort(s: DnsServer): string {
  return `${isIP(s.host) === 6 ? `[${s.host}]` : s.host}:${s.port}`;
}

/** The key name clients send: absolute (trailing dot). */
function absolute(name: string): string {
  return `${name}.`;
}

function certManager(k: KeyForConfig, s: DnsServer): ToolConfig {
  const algorithm = CERT_MANAGER[k.algorithm];
  if (!algorithm) return { unsupported: `cert-manager accepts only ${Object.keys(CERT_MANAGER).join(', ')}: create a key with one of those for it (--algorithm hmac-sha256)` };
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
  if (k.zones.length > 0) {
    lines.push('        selector:', '          dnsZones:', ...k.zones.map((z) => `            - "${z}"`));
  }
  return { text: lines.join('\n') };
}

function lego(k: KeyForConfig, s: DnsServer): ToolConfig {
  if (!LEGO_ACCEPTS.includes(k.algorithm)) return { unsupported: `current lego accepts only ${LEGO_ACCEPTS.join(', ')} ("unsupported TSIG algorithm" for hmac-md5): create a key with one of those for it (--algorithm hmac-sha256)` };
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

function certbot(k: KeyForConfig, s: DnsServer): ToolConfig {
  const ip = isIP(s.host) !== 0;
  const lines = [
    '# rfc2136.ini (chmod 600); certbot certonly --dns-rfc2136 --dns-rfc2136-credentials rfc2136.ini -d …',
    ...(ip ? [] : [`# dns_rfc2136_server must be an IP address (certbot refuses a host name): the address of ${s.host}.`]),
    `dns_rfc2136_server = ${ip ? s.host : PLACEHOLDER_IP}`,
    `dns_rfc2136_port = ${s.port}`,
    `dns_rfc2136_name = ${absolute(k.name)}`,
    `dns_rfc2136_secret = ${k.secret}`,
    `dns_rfc2136_algorithm = ${k.algorithm.toUpperCase()}`,
  ];
  return { text: lines.join('\n') };
}

function externalDns(k: KeyForConfig, s: DnsServer, ovhRate: number): ToolConfig {
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

/** The key file alone (what `nsupdate -k FILE` reads). */
export function nsupdateKeyFile(k: Pick<KeyForConfig, 'name' | 'algorithm' | 'secret'>): string {
  return `key "${absolute(k.name)}" {\n\talgorithm ${k.algorithm};\n\tsecret "${k.secret}";\n};\n`;
}

function nsupdate(k: KeyForConfig, s: DnsServer): ToolConfig {
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

/** ovhRate: DNSPLANE_OVH_RATE, which external-dns's batch size must fit. */
export function tsigConfigs(k: KeyForConfig, s: DnsServer, ovhRate = DEFAULT_OVH_RATE): TsigConfigs {
  return { certManager: certManager(k, s), lego: lego(k, s), certbot: certbot(k, s), externalDns: externalDns(k, s, ovhRate), nsupdate: nsupdate(k, s) };
}

const TITLES: Record<keyof TsigConfigs, string> = {
  certManager: 'cert-manager (ClusterIssuer, rfc2136 solver)',
  lego: 'lego (--dns rfc2136)',
  certbot: 'certbot (certbot-dns-rfc2136)',
  externalDns: 'external-dns (--provider=rfc2136)',
  nsupdate: 'nsupdate (BIND key file)',
};

/** Every tool's block, titled, for the terminal. */
export function renderTsigConfigs(k: KeyForConfig, s: DnsServer, ovhRate = DEFAULT_OVH_RATE): string[] {
  const configs = tsigConfigs(k, s, ovhRate);
  const lines: string[] = [];
  if (s.source === 'placeholder') {
    lines.push(
      `The DNS server below is a placeholder (${hostPort(s)}): this environment says nowhere where clients reach dnsplane's DNS door. ` +
        'Pass --server HOST:PORT, or set DNSPLANE_DNS_ADVERTISE=HOST:PORT as the servers have it (in Kubernetes the dnsplane-dns Service, e.g. dnsplane-dns.dnsplane.svc.cluster.local:53; docs/kubernetes.md), and run this again.',
    );
  } else {
    lines.push(`DNS server: ${hostPort(s)} (from ${s.source}).`);
  }
  for (const tool of Object.keys(TITLES) as Array<keyof TsigConfigs>) {
    const c = configs[tool];
    lines.push('', `=== ${TITLES[tool]} ===`, c.text ?? `(not for this key: ${c.unsupported})`);
  }
  return lines;
}
