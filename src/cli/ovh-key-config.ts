/**
 * What `dnsplane tenant ovh-key create|rotate` prints beside a new key: the four values a tool that
 * speaks the OVH API changes to move to dnsplane (OVH_ENDPOINT and the three keys), and each tool's
 * configuration in the form its own code reads. The text itself is src/ui/public/client-configs.js,
 * the one source the console shows too; this adds the CLI's note.
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
import { ovhKeyConfigBlocks, type OvhApiEndpoint, type OvhKeyForConfig } from '../ui/public/client-configs.js';

export { PLACEHOLDER_ENDPOINT } from '../ui/public/client-configs.js';
export type { OvhApiEndpoint, OvhKeyForConfig } from '../ui/public/client-configs.js';

export interface OvhKeyConfigs {
  env: string;
  externalDns: string;
  certManagerWebhookOvh: string;
  lego: string;
  traefik: string;
  caddy: string;
  terraform: string;
}

/** Each tool's configuration by tool (the JSON of `--json`). */
export function ovhKeyConfigs(k: OvhKeyForConfig, e: OvhApiEndpoint): OvhKeyConfigs {
  return Object.fromEntries(ovhKeyConfigBlocks(k, e).blocks.map((b) => [b.tool, b.text])) as unknown as OvhKeyConfigs;
}

/** Every tool's block, titled, for the terminal. */
export function renderOvhKeyConfigs(k: OvhKeyForConfig, e: OvhApiEndpoint): string[] {
  const { note, blocks } = ovhKeyConfigBlocks(k, e);
  const lines = [e.source === 'placeholder' ? `The endpoint below is a placeholder (${e.url}): pass --endpoint URL, or set DNSPLANE_OVH_API_ADVERTISE.` : note];
  for (const b of blocks) lines.push('', `=== ${b.title} ===`, b.text);
  return lines;
}
