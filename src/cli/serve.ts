import { parseArgs } from 'node:util';
import { InvalidInputError } from '../dns/errors.js';
import { DEMO_TOKENS_FILE, demoTokens } from '../demo/demo.js';
import { DEMO_TSIG_FILE, demoTsigKey } from '../demo/dns.js';
import { applyHeapGrowth } from '../server/heap.js';
import { createLogger, DEMO_ZONE, startServer } from '../server/server.js';
import { logFormatOf } from '../config/config.js';
import { configFrom, type Command } from './command.js';

export const serveCommand: Command = {
  summary: 'start the API (Connect, gRPC, gRPC-Web) on DNSPLANE_LISTEN',
  help: `Usage: dnsplane serve [--listen HOST:PORT] [--demo] [--new-tokens]

Starts the API. Configuration comes from the environment (see dnsplane --help).

Demo mode (an in-process OVH simulator holding ${DEMO_ZONE}, an "admin" and a "demo" tenant, a
curl command to try) runs when nothing is configured (no DATABASE_URL and no OVH_* variables:
embedded Postgres under DNSPLANE_DATA_DIR), or when asked for with --demo or DNSPLANE_DEMO=true.
With DATABASE_URL set, serve needs the three OVH_* credentials, or --demo: it refuses to start,
before touching the database, rather than serve a real database from a simulator. The demo refuses
a database that already manages other zones, and never touches tenants it did not create.

The demo's tokens are kept in DNSPLANE_DATA_DIR/${DEMO_TOKENS_FILE} (mode 0600; the database has
only their hashes) and stay the same across restarts, like the simulator's DNS port.

  --demo         run the demo (the same as DNSPLANE_DEMO=true)
  --new-tokens   demo: issue new tokens for "admin" and "demo", and a new secret for the demo's TSIG key (the old ones stop working)

SIGTERM or SIGINT: stop accepting; requests under way finish, and applies that cannot finish in time
stop sending, roll back and answer Unavailable; the process exits within DNSPLANE_SHUTDOWN_TIMEOUT.`,
  async run(args, io) {
    const { values } = parseArgs({ args, options: { listen: { type: 'string' }, demo: { type: 'boolean' }, 'new-tokens': { type: 'boolean' } }, strict: true });
    const cfg = configFrom(io, { DNSPLANE_LISTEN: values.listen, DNSPLANE_DEMO: values.demo ? 'true' : undefined });
    if (values['new-tokens'] && cfg.ovh.mode !== 'simulator') {
      throw new InvalidInputError(
        '--new-tokens',
        "concerns the demo's tokens only (this start is not in demo mode); rotate other tenants with dnsplane tenant rotate NAME",
      );
    }
    const log = createLogger(cfg.logLevel, logFormatOf(cfg.logFormat, io.isTty));
    // The process's own: set here, before any zone is read, never by startServer (tests run many servers
    // in one process); said once the server runs (a start that refuses writes nothing to stdout).
    const heap = applyHeapGrowth(cfg.heapGrowthPercent);
    const server = await startServer(cfg, log);
    log.info(
      heap,
      heap.growth === 'v8'
        ? `heap: V8's own growth (up to 4× what is live before a full collection; ${heap.source})`
        : `heap: a full collection once the heap grows ${heap.growth}% past what is live (${heap.source})`,
    );
    try {
      io.out('');
      io.out(server.simulator ? 'dnsplane is running in demo mode (in-process OVH simulator).' : 'dnsplane is running.');
      io.out(`  API:       ${server.url}`);
      io.out(`  console:   ${server.url}/ui/${server.simulator ? '   (sign in with the admin token below)' : ''}`);
      io.out(`  database:  ${server.databaseLabel}`);
      io.out(`  OVH:       ${server.ovhLabel}`);
      if (server.dns) io.out(`  DNS door:  ${server.dns.host} port ${server.dns.port} (udp+tcp): UPDATE signed with TSIG, SOA/NS and in-zone queries, AXFR`);
      if (server.simulator) {
        const sim = server.simulator;
        const tokens = await demoTokens(server.ctx.pool, cfg.dataDir, { newTokens: values['new-tokens'] ?? false, log });
        // Made before the first line of the block is written, so the banner comes out whole: a reader
        // that stops at "Try it:" has already been given the nsupdate line's key.
        const key = server.dns && tokens.demo ? await demoTsigKey(server.ctx, cfg.dataDir, { newKey: values['new-tokens'] ?? false, log }) : undefined;
        io.out(
          `  DNS:       ${sim.dnsServers.map((s) => `${s.name} at 127.0.0.1 port ${s.port}`).join(', ')} (udp+tcp): the zone's name servers, each answering a refresh after its own lag (DNSPLANE_SIM_PROPAGATION)`,
        );
        io.out(`  data:      ${cfg.dataDir}`);
        io.out('');
        io.out(
          `Tokens (${tokens.kept ? 'the same as at the last start' : 'new'}; kept in ${DEMO_TOKENS_FILE} of the data dir; serve --new-tokens issues new ones):`,
        );
        if (tokens.admin) io.out(`  admin: ${tokens.admin}`);
        if (tokens.demo) io.out(`  demo:  ${tokens.demo}   (tenant "demo", zone ${DEMO_ZONE})`);
        for (const name of tokens.leftAlone) {
          io.out(`  ${name}: a tenant "${name}" exists that the demo did not create (or made before it marked its own); left alone, no token shown.`);
          io.out(`         Its token: dnsplane tenant rotate ${name} prints a new one (it works beside this server), or use a fresh DNSPLANE_DATA_DIR.`);
        }
        if (tokens.demo) {
          io.out('');
          io.out('Try it:');
          io.out(`  curl -s -H 'Authorization: Bearer ${tokens.demo}' -H 'Content-Type: application/json' \\`);
          io.out(`    ${server.url}/dnsplane.v1.ZoneService/Records -d '{"includeForeign":true}'`);
          io.out(`  dig @127.0.0.1 -p ${sim.dnsPort} ${DEMO_ZONE} NS`);
          if (server.dns) {
            io.out('');
            io.out(
              `DNS UPDATE, as cert-manager, lego and certbot send it, signed with the demo tenant's ACME-only key${key ? ` (kept in ${DEMO_TSIG_FILE} of the data dir)` : ''}:`,
            );
            if (!key) io.out('  dnsplane tenant tsig create demo --acme-only        # prints a key name and its secret once');
            io.out(
              `  printf 'server ${server.dns.host} ${server.dns.port}\\nupdate add _acme-challenge.${DEMO_ZONE} 60 TXT hello\\nsend\\n' | nsupdate -y ${key ? `${key.algorithm}:${key.name}:${key.secret}` : 'hmac-sha256:NAME:SECRET'}`,
            );
            io.out(`  dig @127.0.0.1 -p ${sim.dnsPort} _acme-challenge.${DEMO_ZONE} TXT    # what the simulator published`);
          }
        }
      }
      io.out('');
    } catch (e) {
      await server.close();
      throw e;
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
