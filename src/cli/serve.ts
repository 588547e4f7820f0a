import { parseArgs } from 'node:util';
import { createLogger, DEMO_ZONE, issueDemoTokens, startServer } from '../server.js';
import { configFrom, type Command } from './command.js';

export const serveCommand: Command = {
  summary: 'start the API (Connect, gRPC, gRPC-Web) on DNSPLANE_LISTEN',
  help: `Usage: dnsplane serve [--listen HOST:PORT]

Starts the API. Configuration comes from the environment (see dnsplane --help).
With no OVH_* variables set it runs the embedded default (embedded Postgres + in-process OVH
simulator holding ${DEMO_ZONE}) and prints an admin token, a demo tenant token and a curl command.
SIGTERM or SIGINT: stop accepting; requests under way finish, and applies that cannot finish in time
stop sending, roll back and answer Unavailable; the process exits within DNSPLANE_SHUTDOWN_TIMEOUT.`,
  async run(args, io) {
    const { values } = parseArgs({ args, options: { listen: { type: 'string' } }, strict: true });
    const cfg = configFrom(io, { DNSPLANE_LISTEN: values.listen });
    const log = createLogger(cfg.logLevel);
    const server = await startServer(cfg, log);
    if (server.simulator) {
      const tokens = await issueDemoTokens(server.ctx);
      const sim = server.simulator;
      io.out('');
      io.out('dnsplane is running on the embedded default (embedded Postgres + in-process OVH simulator).');
      io.out(`  API:            ${server.url}`);
      io.out(`  console:        ${server.url}/ui/   (sign in with the admin token below)`);
      io.out(`  OVH simulator:  ${sim.apiUrl}/1.0   DNS: 127.0.0.1 port ${sim.dnsPort} (udp+tcp)`);
      io.out(`  data:           ${cfg.dataDir}`);
      io.out('');
      io.out('Tokens (issued anew at each start in demo mode):');
      io.out(`  admin: ${tokens.admin}`);
      io.out(`  demo:  ${tokens.demo}   (tenant "demo", zone ${DEMO_ZONE})`);
      io.out('');
      io.out('Try it:');
      io.out(`  curl -s -H 'Authorization: Bearer ${tokens.demo}' -H 'Content-Type: application/json' \\`);
      io.out(`    ${server.url}/dnsplane.v1.ZoneService/Records -d '{"includeForeign":true}'`);
      io.out(`  dig @127.0.0.1 -p ${sim.dnsPort} ${DEMO_ZONE} NS`);
      io.out('');
    }
    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        log.info({ signal }, 'shutting down: finishing in-flight requests');
        resolve();
      };
      process.once('SIGTERM', () => stop('SIGTERM'));
      process.once('SIGINT', () => stop('SIGINT'));
    });
    // The last resort: whatever happens in close(), the process is gone by DNSPLANE_SHUTDOWN_TIMEOUT.
    const watchdog = setTimeout(() => {
      log.error({ timeoutMs: cfg.shutdownTimeoutMs }, 'shutdown did not finish within DNSPLANE_SHUTDOWN_TIMEOUT; exiting');
      process.exit(1);
    }, cfg.shutdownTimeoutMs);
    watchdog.unref();
    await server.close();
    clearTimeout(watchdog);
    return 0;
  },
};
