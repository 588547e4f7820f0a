/**
 * What `dnsplane tenant tsig create|rotate` prints beside a new secret: ready-to-paste configuration for
 * the tools that speak DNS UPDATE with TSIG, each in the form its own code reads (checked against each
 * tool's sources and, where installed, the tool itself: test/cli/tsig.test.ts). The text itself is
 * src/ui/public/client-configs.js, the one source the console shows too; this adds the CLI's note.
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
import { DEFAULT_OVH_RATE, hostPort, tsigConfigBlocks, type DnsServer, type KeyForConfig } from '../ui/public/client-configs.js';

export { DEFAULT_OVH_RATE, PLACEHOLDER_HOST, dnsUpdateBatchSize, hostPort, nsupdateKeyFile } from '../ui/public/client-configs.js';
export type { DnsServer, KeyForConfig } from '../ui/public/client-configs.js';

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

/** Each tool's configuration by tool (the JSON of `--json`); ovhRate: DNSPLANE_OVH_RATE, which external-dns's batch size must fit. */
export function tsigConfigs(k: KeyForConfig, s: DnsServer, ovhRate = DEFAULT_OVH_RATE): TsigConfigs {
  const out: Record<string, ToolConfig> = {};
  for (const b of tsigConfigBlocks(k, s, ovhRate).blocks) out[b.tool] = b.text !== undefined ? { text: b.text } : { unsupported: b.unsupported ?? '' };
  return out as unknown as TsigConfigs;
}

/** Every tool's block, titled, for the terminal. */
export function renderTsigConfigs(k: KeyForConfig, s: DnsServer, ovhRate = DEFAULT_OVH_RATE): string[] {
  const { note, blocks } = tsigConfigBlocks(k, s, ovhRate);
  const lines = [
    s.source === 'placeholder'
      ? `The DNS server below is a placeholder (${hostPort(s)}): this environment says nowhere where clients reach dnsplane's DNS door. ` +
        'Pass --server HOST:PORT, or set DNSPLANE_DNS_ADVERTISE=HOST:PORT as the servers have it (in Kubernetes the dnsplane-dns Service, e.g. dnsplane-dns.dnsplane.svc.cluster.local:53; docs/kubernetes.md), and run this again.'
      : note,
  ];
  for (const b of blocks) lines.push('', `=== ${b.title} ===`, b.text ?? `(not for this key: ${b.unsupported})`);
  return lines;
}
