// Types of client-configs.js (the one source of the client configurations; see its comment), for the
// TypeScript that imports it (src/cli/key-configs.ts). Not served.

export type TsigAlgorithm = 'hmac-md5' | 'hmac-sha1' | 'hmac-sha224' | 'hmac-sha256' | 'hmac-sha384' | 'hmac-sha512';

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

/** Where tools reach the served OVH API, and where that came from (for the note when it is a placeholder). */
export interface OvhApiEndpoint {
  url: string;
  /** "--endpoint", "DNSPLANE_OVH_API_ADVERTISE", "DNSPLANE_LISTEN", or "placeholder". */
  source: string;
}

export interface OvhKeyForConfig {
  applicationKey: string;
  applicationSecret: string;
  consumerKey: string;
  tenant: string;
  /** The tenant's zones ([] for an admin of every zone). */
  zones: string[];
}

/** One tool's configuration: its text, or why the tool cannot use this key. */
export interface ConfigBlock {
  tool: string;
  title: string;
  text?: string;
  unsupported?: string;
}

export const PLACEHOLDER_HOST: string;
export const PLACEHOLDER_ENDPOINT: string;
export const DEFAULT_OVH_RATE: number;
export function ipVersion(host: string): 0 | 4 | 6;
export function hostPort(s: DnsServer): string;
export function dnsUpdateBatchSize(ovhRate: number): number;
export function nsupdateKeyFile(k: Pick<KeyForConfig, 'name' | 'algorithm' | 'secret'>): string;
export function tsigConfigBlocks(k: KeyForConfig, s: DnsServer, ovhRate?: number): { note: string; blocks: ConfigBlock[] };
export function ovhKeyConfigBlocks(k: OvhKeyForConfig, e: OvhApiEndpoint): { note: string; blocks: Array<ConfigBlock & { text: string }> };
