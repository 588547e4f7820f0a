import path from 'node:path';
import { parseArgs } from 'node:util';
import { runSimulator } from '../ovhsim/cli.js';
import { DEMO_ZONE } from '../server/server.js';
import { InvalidInputError } from '../dns/errors.js';
import { configFrom, type Command } from './command.js';

function port(value: string | undefined, field: string): number {
  if (value === undefined) return 0;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidInputError(field, `must be a port number 0-65535, got "${value}"`);
  return n;
}

export const ovhSimCommand: Command = {
  summary: 'run the OVH API simulator and its DNS server alone',
  help: `Usage: dnsplane ovh-sim [--listen HOST] [--port PORT] [--dns-port PORT] [--zone ZONE …]

Runs the OVH API simulator (HTTPS, signed requests, draft/refresh, the DNS API routes) and an
authoritative DNS server answering what was published by /refresh. Prints the API URL, the CA file,
credentials to export and the DNS port. State is kept in DNSPLANE_DATA_DIR/ovhsim.`,
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: { listen: { type: 'string' }, port: { type: 'string' }, 'dns-port': { type: 'string' }, zone: { type: 'string', multiple: true } },
      strict: true,
    });
    const dir = path.join(configFrom(io).dataDir, 'ovhsim');
    const zones = values.zone ?? [DEMO_ZONE];
    const sim = await runSimulator(
      {
        host: values.listen ?? '127.0.0.1',
        apiPort: port(values.port, '--port'),
        dnsPort: port(values['dns-port'], '--dns-port'),
        zones: Object.fromEntries(zones.map((z) => [z, []])),
        stateFile: path.join(dir, 'standalone-state.json'),
        caFile: path.join(dir, 'ca.pem'),
      },
      io.out,
    );
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', () => resolve());
      process.once('SIGINT', () => resolve());
    });
    await sim.stop();
    return 0;
  },
};
