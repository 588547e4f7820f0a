/**
 * What `dnsplane tenant tsig|ovh-key create|rotate` prints beside a new key: each tool's configuration
 * by tool (the JSON of `--json`) and as titled blocks for the terminal. The text itself, and why each
 * line is as it is, is src/ui/public/client-configs.js — the one source the console shows too; this
 * adds only the CLI's note on a placeholder (the console has no --server or --endpoint flag).
 */
import {
  DEFAULT_OVH_RATE,
  hostPort,
  ovhKeyConfigBlocks,
  tsigConfigBlocks,
  type DnsServer,
  type KeyForConfig,
  type OvhApiEndpoint,
  type OvhKeyForConfig,
} from '../ui/public/client-configs.js';

export { PLACEHOLDER_ENDPOINT, PLACEHOLDER_HOST, dnsUpdateBatchSize, nsupdateKeyFile } from '../ui/public/client-configs.js';
export type { DnsServer, KeyForConfig, OvhApiEndpoint, OvhKeyForConfig } from '../ui/public/client-configs.js';

/** A TSIG tool's configuration, or why it cannot use this key (then there is no text). */
export interface ToolConfig {
  unsupported?: string;
  text?: string;
}

export type TsigConfigs = Record<'certManager' | 'lego' | 'certbot' | 'externalDns' | 'nsupdate', ToolConfig>;
export type OvhKeyConfigs = Record<'env' | 'externalDns' | 'certManagerWebhookOvh' | 'lego' | 'traefik' | 'caddy' | 'terraform', string>;

/** ovhRate: DNSPLANE_OVH_RATE, which external-dns's batch size must fit. */
export function tsigConfigs(k: KeyForConfig, s: DnsServer, ovhRate = DEFAULT_OVH_RATE): TsigConfigs {
  const { blocks } = tsigConfigBlocks(k, s, ovhRate);
  return Object.fromEntries(blocks.map((b) => [b.tool, b.text !== undefined ? { text: b.text } : { unsupported: b.unsupported ?? '' }])) as TsigConfigs;
}

export function ovhKeyConfigs(k: OvhKeyForConfig, e: OvhApiEndpoint): OvhKeyConfigs {
  return Object.fromEntries(ovhKeyConfigBlocks(k, e).blocks.map((b) => [b.tool, b.text])) as OvhKeyConfigs;
}

/** The note, then every tool's block, titled. */
function render(note: string, blocks: ReadonlyArray<{ title: string; text?: string; unsupported?: string }>): string[] {
  return [note, ...blocks.flatMap((b) => ['', `=== ${b.title} ===`, b.text ?? `(not for this key: ${b.unsupported})`])];
}

export function renderTsigConfigs(k: KeyForConfig, s: DnsServer, ovhRate = DEFAULT_OVH_RATE): string[] {
  const { note, blocks } = tsigConfigBlocks(k, s, ovhRate);
  const placeholder =
    `The DNS server below is a placeholder (${hostPort(s)}): this environment says nowhere where clients reach dnsplane's DNS door. ` +
    'Pass --server HOST:PORT, or set DNSPLANE_DNS_ADVERTISE=HOST:PORT as the servers have it (in Kubernetes the dnsplane-dns Service, e.g. dnsplane-dns.dnsplane.svc.cluster.local:53; docs/kubernetes.md), and run this again.';
  return render(s.source === 'placeholder' ? placeholder : note, blocks);
}

export function renderOvhKeyConfigs(k: OvhKeyForConfig, e: OvhApiEndpoint): string[] {
  const { note, blocks } = ovhKeyConfigBlocks(k, e);
  const placeholder = `The endpoint below is a placeholder (${e.url}): pass --endpoint URL, or set DNSPLANE_OVH_API_ADVERTISE.`;
  return render(e.source === 'placeholder' ? placeholder : note, blocks);
}
