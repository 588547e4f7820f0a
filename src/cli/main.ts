/**
 * `dnsplane <command>`: the only place that reads process.env and argv; hands them to loadConfig.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig, SETTINGS, type Config } from '../config.js';
import { createTenant } from '../core/tenants.js';
import { InvalidInputError } from '../dns/errors.js';
import { runSimulator } from '../ovhsim/cli.js';
import { createLogger, DEMO_ZONE, issueDemoTokens, startServer } from '../server.js';
import * as store from '../store/index.js';

const out = (line = '') => process.stdout.write(`${line}\n`);
const err = (line: string) => process.stderr.write(`${line}\n`);

const USAGE = `dnsplane — a central DNS control plane in front of the OVHcloud DNS API

Usage: dnsplane <command> [options]

Commands:
  serve                         start the API (Connect, gRPC, gRPC-Web) on DNSPLANE_LISTEN
  migrate                       apply database migrations and exit
  tenant create NAME --zone Z   create a tenant; prints its bearer token as the last line
  ovh-sim                       run the OVH API simulator and its DNS server alone
  help [command]                this text, or a command's

With no OVH_* credentials, serve runs on the embedded default: an embedded Postgres under
DNSPLANE_DATA_DIR and an in-process OVH simulator holding the demo zone ${DEMO_ZONE}.

Configuration (environment):
${SETTINGS.map((s) => `  ${s.name.padEnd(26)} ${s.help}${s.default ? ` [${s.default}]` : ''}`).join('\n')}
`;

const HELP: Record<string, string> = {
  serve: `Usage: dnsplane serve [--listen HOST:PORT]

Starts the API. Configuration comes from the environment (see dnsplane help).
With no OVH_* variables set it runs the embedded default and prints an admin token, a demo
tenant token and a curl command to try. SIGTERM or SIGINT: in-flight requests finish, then it exits.`,
  migrate: `Usage: dnsplane migrate

Applies the database migrations that are missing (DATABASE_URL, or the embedded Postgres under
DNSPLANE_DATA_DIR). Safe to run while servers start: migrations take a database-wide lock.`,
  tenant: `Usage: dnsplane tenant create NAME --zone ZONE [--zone ZONE …] [--suffix SUFFIX …] [--admin]

Creates a tenant allowed to manage records in the given zones (and, with --suffix, only names
under those suffixes). --admin adds the admin scope; an admin with no --zone may use every zone.
The bearer token is printed once, as the last line; dnsplane keeps only its SHA-256.`,
  'ovh-sim': `Usage: dnsplane ovh-sim [--listen HOST] [--port PORT] [--dns-port PORT] [--zone ZONE …]

Runs the OVH API simulator (HTTPS, signed requests, draft/refresh, the DNS API routes) and an
authoritative DNS server answering what was published by /refresh. Prints the API URL, the CA file,
credentials to export and the DNS port. State is kept in DNSPLANE_DATA_DIR/ovhsim.`,
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    const topic = rest[0];
    out(topic && HELP[topic] ? HELP[topic] : USAGE);
    return 0;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    out(HELP[command] ?? USAGE);
    return HELP[command] ? 0 : 1;
  }
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'migrate':
      return migrate();
    case 'tenant':
      return tenant(rest);
    case 'ovh-sim':
      return ovhSim(rest);
    default:
      err(`dnsplane: unknown command "${command}"\n`);
      err(USAGE);
      return 1;
  }
}

function config(overrides: Record<string, string | undefined> = {}): Config {
  return loadConfig({ ...process.env, ...Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined)) });
}

async function serve(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { listen: { type: 'string' } }, strict: true });
  const cfg = config({ DNSPLANE_LISTEN: values.listen });
  const log = createLogger(cfg.logLevel);
  const server = await startServer(cfg, log);
  if (server.simulator) {
    const tokens = await issueDemoTokens(server.ctx);
    const sim = server.simulator;
    out('');
    out('dnsplane is running on the embedded default (embedded Postgres + in-process OVH simulator).');
    out(`  API:            ${server.url}`);
    out(`  OVH simulator:  ${sim.apiUrl}/1.0   DNS: 127.0.0.1 port ${sim.dnsPort} (udp+tcp)`);
    out(`  data:           ${cfg.dataDir}`);
    out('');
    out('Tokens (issued anew at each start in demo mode):');
    out(`  admin: ${tokens.admin}`);
    out(`  demo:  ${tokens.demo}   (tenant "demo", zone ${DEMO_ZONE})`);
    out('');
    out('Try it:');
    out(`  curl -s -H 'Authorization: Bearer ${tokens.demo}' -H 'Content-Type: application/json' \\`);
    out(`    ${server.url}/dnsplane.v1.ZoneService/Records -d '{"includeForeign":true}'`);
    out('');
  }
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      log.info({ signal }, 'shutting down: finishing in-flight requests');
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  await server.close();
  return 0;
}

async function withDatabase<T>(fn: (db: store.Database) => Promise<T>): Promise<T> {
  const cfg = config();
  const db = await store.openDatabase({ databaseUrl: cfg.databaseUrl, dataDir: cfg.dataDir });
  try {
    await store.migrate(db.pool);
    return await fn(db);
  } finally {
    await db.close();
  }
}

async function migrate(): Promise<number> {
  const cfg = config();
  const db = await store.openDatabase({ databaseUrl: cfg.databaseUrl, dataDir: cfg.dataDir });
  try {
    const { applied } = await store.migrate(db.pool);
    out(applied.length ? `applied: ${applied.join(', ')}` : 'the database is up to date');
    return 0;
  } finally {
    await db.close();
  }
}

async function tenant(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'create') {
    err(HELP['tenant']!);
    return 1;
  }
  const { values, positionals } = parseArgs({
    args: rest,
    options: { zone: { type: 'string', multiple: true }, suffix: { type: 'string', multiple: true }, admin: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1) throw new InvalidInputError('NAME', 'exactly one tenant name is required');
  return withDatabase(async (db) => {
    const { tenant: t, token } = await createTenant(db.pool, {
      name: positionals[0]!,
      zones: values.zone ?? [],
      suffixes: values.suffix ?? [],
      admin: values.admin ?? false,
    });
    out(`created tenant "${t.name}"${t.scopes.length ? ` (scopes: ${t.scopes.join(', ')})` : ''}, zones: ${t.zones.join(', ') || '(all)'}`);
    out('its bearer token follows; it is shown only this once:');
    out(token);
    return 0;
  });
}

async function ovhSim(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { listen: { type: 'string' }, port: { type: 'string' }, 'dns-port': { type: 'string' }, zone: { type: 'string', multiple: true } },
    strict: true,
  });
  const cfg = config();
  const dir = path.join(cfg.dataDir, 'ovhsim');
  const zones = values.zone ?? [DEMO_ZONE];
  const sim = await runSimulator(
    {
      host: values.listen ?? '127.0.0.1',
      apiPort: values.port ? Number(values.port) : 0,
      dnsPort: values['dns-port'] ? Number(values['dns-port']) : 0,
      zones: Object.fromEntries(zones.map((z) => [z, []])),
      stateFile: path.join(dir, 'standalone-state.json'),
      caFile: path.join(dir, 'ca.pem'),
    },
    out,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  await sim.stop();
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    if (e instanceof InvalidInputError) err(`dnsplane: invalid configuration or arguments: ${e.message}`);
    else if (e instanceof Error && 'code' in e && String((e as { code: unknown }).code).startsWith('ERR_PARSE_ARGS')) err(`dnsplane: ${e.message}`);
    else err(`dnsplane: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  },
);
