/**
 * `dnsplane <command>`: the only place that reads process.env and argv. Each command lives in its
 * own file; add it to COMMANDS.
 */
import { SETTINGS } from '../config/config.js';
import { InvalidInputError } from '../dns/errors.js';
import type { CliIo, Command } from './command.js';
import { journalCommand } from './journal.js';
import { migrateCommand } from './migrate.js';
import { nsmCommand } from './nsm.js';
import { ovhSimCommand } from './ovh-sim.js';
import { serveCommand } from './serve.js';
import { tenantCommand } from './tenant.js';
import { planCommand } from './plan.js';
import { applyCommand } from './apply.js';
import { webhookCommand } from './webhook.js';
import { zoneCommand } from './zone.js';
import { secretsCommand } from './secrets.js';
import { healthCheckCommand } from './health-check.js';
import { ownershipCommand } from './ownership.js';
import { messageOf } from '../lib/error-message.js';
import { accountCommand } from './account.js';

const COMMANDS: Record<string, Command> = {
  serve: serveCommand,
  migrate: migrateCommand,
  tenant: tenantCommand,
  plan: planCommand,
  apply: applyCommand,
  journal: journalCommand,
  'ovh-sim': ovhSimCommand,
  nsm: nsmCommand,
  webhook: webhookCommand,
  zone: zoneCommand,
  secrets: secretsCommand,
  'health-check': healthCheckCommand,
  account: accountCommand,
  ownership: ownershipCommand,
};

function usage(): string {
  return `dnsplane — a central DNS control plane in front of the OVHcloud DNS API

Usage: dnsplane <command> [options]      dnsplane <command> --help

Commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(12)} ${c.summary}`)
  .join('\n')}

With neither DATABASE_URL nor OVH_* set, serve runs the demo: an embedded Postgres under
DNSPLANE_DATA_DIR and an in-process OVH simulator holding the demo zone example.test (also on a
DATABASE_URL with --demo or DNSPLANE_DEMO=true). DATABASE_URL without the three OVH_* credentials
is an error.

Configuration (environment):
${SETTINGS.map((s) => `  ${s.name.padEnd(26)} ${s.help}${s.default ? ` [${s.default}]` : ''}`).join('\n')}
`;
}

export async function main(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === 'help' || name === '--help' || name === '-h') {
    const topic = rest[0] ? COMMANDS[rest[0]] : undefined;
    io.out(topic ? (topic.helpFor?.(rest.slice(1)) ?? topic.help) : usage());
    return 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    io.err(`dnsplane: unknown command "${name}"\n`);
    io.err(usage());
    return 1;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.out(command.helpFor?.(rest) ?? command.help);
    return 0;
  }
  try {
    return await command.run(rest, io);
  } catch (e) {
    if (e instanceof InvalidInputError) io.err(`dnsplane ${name}: ${e.message}`);
    else if (e instanceof Error && String((e as { code?: unknown }).code ?? '').startsWith('ERR_PARSE_ARGS'))
      io.err(`dnsplane ${name}: ${e.message}\n\n${command.helpFor?.(rest) ?? command.help}`);
    else io.err(`dnsplane ${name}: ${messageOf(e)}`);
    return 1;
  }
}

const io: CliIo = {
  out: (line = '') => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
  isTty: Boolean(process.stdout.isTTY),
  stdin: async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
};

main(process.argv.slice(2), io).then(
  (code) => process.exit(code),
  (e: unknown) => {
    io.err(`dnsplane: ${messageOf(e)}`);
    process.exit(1);
  },
);
