/**
 * Process-wide trust of extra CAs (OVH_CA_FILE, the simulator's certificate) for the global https
 * agent, which is the only agent node-ovh uses.
 */
import https from 'node:https';
import tls from 'node:tls';

const extraCas = new Set<string>();

/**
 * Trusts more CAs for the process's global https agent (node-ovh cannot be given an agent). The
 * system roots stay trusted. NODE_EXTRA_CA_CERTS keeps working on its own when nothing is added here;
 * when something is, its contents must be passed too (config does that).
 *
 * As one secure context built once, not as the agent's `ca` option: the agent turns `ca` (here the
 * ~150 system roots and ours, ~200 KB of PEM) into its connection-pool key string several times per
 * request, and TLS parses every root again for each new connection — about 1 ms of CPU per OVH call.
 */
export function trustExtraCas(pems: string[]): void {
  let added = false;
  for (const pem of pems) {
    if (!extraCas.has(pem)) {
      extraCas.add(pem);
      added = true;
    }
  }
  if (added) {
    const options = https.globalAgent.options as https.AgentOptions & { secureContext?: tls.SecureContext };
    options.secureContext = tls.createSecureContext({ ca: [...tls.rootCertificates, ...extraCas] });
    delete options.ca;
  }
}
