import { parseArgs } from 'node:util';
import { createTenant } from '../core/tenants.js';
import { InvalidInputError } from '../dns/errors.js';
import type { Command } from './command.js';
import { withDatabase } from './migrate.js';

const HELP = `Usage: dnsplane tenant create NAME --zone ZONE [--zone …] [--suffix SUFFIX …] [--admin]

Creates a tenant allowed to manage records in the given zones (and, with --suffix, only names
under those suffixes). --admin adds the admin scope; an admin with no --zone may use every zone.
The bearer token is printed once, as the last line; dnsplane keeps only its SHA-256.`;

export const tenantCommand: Command = {
  summary: 'manage tenants: create NAME --zone Z (prints the token as the last line)',
  help: HELP,
  async run(args, io) {
    const [sub, ...rest] = args;
    if (sub !== 'create') throw new InvalidInputError('tenant', `unknown subcommand "${sub ?? ''}"; see dnsplane tenant --help`);
    const { values, positionals } = parseArgs({
      args: rest,
      options: { zone: { type: 'string', multiple: true }, suffix: { type: 'string', multiple: true }, admin: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length !== 1) throw new InvalidInputError('NAME', 'exactly one tenant name is required');
    return withDatabase(io, async (db) => {
      const { tenant: t, token } = await createTenant(db.pool, {
        name: positionals[0]!,
        zones: values.zone ?? [],
        suffixes: values.suffix ?? [],
        admin: values.admin ?? false,
      });
      io.out(`created tenant "${t.name}"${t.scopes.length ? ` (scopes: ${t.scopes.join(', ')})` : ''}, zones: ${t.zones.join(', ') || '(all)'}`);
      io.out('its bearer token follows; it is shown only this once:');
      io.out(token);
      return 0;
    });
  },
};
