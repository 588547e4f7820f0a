/**
 * What `dnsplane ovh-sim` runs: start the simulator, write its CA certificate, print how to use it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { OvhSimulator } from './simulator.js';
import type { SimOptions } from './types.js';

/** A value as one POSIX shell word. */
function shellQuote(value: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * Starts the simulator, writes its CA PEM to `caFile`, and prints the API URL, the CA file, the
 * credentials as `export` lines (the application secret included: it is the simulator's own), and a
 * `dig` hint for the DNS server. The caller stops the returned simulator.
 */
export async function runSimulator(opts: SimOptions & { caFile: string }, print: (line: string) => void): Promise<OvhSimulator> {
  const { caFile, ...simOptions } = opts;
  const sim = await OvhSimulator.start(simOptions);
  try {
    fs.mkdirSync(path.dirname(path.resolve(caFile)), { recursive: true });
    fs.writeFileSync(caFile, sim.caPem);
  } catch (err) {
    await sim.stop();
    throw err;
  }
  const ca = path.resolve(caFile);
  const c = sim.credentials;
  const dnsHost = sim.host.includes(':') ? sim.host : sim.host === '0.0.0.0' ? '127.0.0.1' : sim.host;
  const zone = sim.zones()[0] ?? 'example.test';
  print(`OVH API simulator: ${sim.apiUrl}/1.0`);
  print(`CA certificate:    ${ca}`);
  print('');
  print('# paste into a shell to point dnsplane (or any OVH client) at the simulator:');
  print(`export OVH_ENDPOINT=${shellQuote(sim.apiUrl)}`);
  print(`export OVH_APPLICATION_KEY=${shellQuote(c.applicationKey)}`);
  print(`export OVH_APPLICATION_SECRET=${shellQuote(c.applicationSecret)}`);
  print(`export OVH_CONSUMER_KEY=${shellQuote(c.consumerKey)}`);
  print(`export OVH_CA_FILE=${shellQuote(ca)}`);
  print(`export NODE_EXTRA_CA_CERTS=${shellQuote(ca)}`);
  // The zone's name servers (dns1/ns1.sim.test) resolve nowhere: dnsplane's prober asks them here.
  print(`export DNSPLANE_AUTHORITATIVE_SERVERS=${shellQuote(sim.dnsServers.map((s) => `${dnsHost}:${s.port}`).join(','))}`);
  print('');
  print(`DNS servers (published records only, each after its lag) on UDP and TCP: ${sim.dnsServers.map((s) => `${s.name} port ${s.port}`).join(', ')}:`);
  print(`  dig @${dnsHost} -p ${sim.dnsPort} ${zone} A`);
  return sim;
}
