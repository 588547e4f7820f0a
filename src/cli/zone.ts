/**
 * `dnsplane zone export ZONE`: a zone as an RFC 1035 zone file, from a running dnsplane's cache
 * (AdminService.ExportZone: an admin token; 0 OVH calls), on stdout or into a file.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { InvalidInputError } from '../dns/errors.js';
import { AdminService } from '../gen/dnsplane/v1/admin_pb.js';
import { connectClient, resolveServer, SERVER_OPTIONS_HELP } from './client.js';
import type { Command } from './command.js';

const HELP = `Usage: dnsplane zone export ZONE [--owner] [--output-file FILE]

Prints ZONE as an RFC 1035 zone file, from dnsplane's cache at the zone's current generation: every
record, whoever owns it (and records of types dnsplane does not manage), as OVH stores them; the SOA
the DNS door serves (serial = the generation); a record without a TTL is at the zone default (3600).
No OVH call is made. Needs an admin token.

"dnsplane plan --zone-file FILE --as TENANT" reads such a file back as TENANT's desired state: a zone
exported and read back plans no change.

  --owner               each record's owner as a comment: "; owner team1", "; owner team1 (shared)"
                        for a tenant's target of a shared set, "; no owner"
  --output-file FILE    write the zone file to FILE (mode 0644) instead of stdout
${SERVER_OPTIONS_HELP}`;

export const zoneCommand: Command = {
  summary: 'a zone as a zone file, from the cache: dnsplane zone export ZONE [--owner]',
  help: HELP,
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      options: { owner: { type: 'boolean' }, 'output-file': { type: 'string' }, server: { type: 'string' }, 'token-file': { type: 'string' } },
      allowPositionals: true,
      strict: true,
    });
    if (positionals[0] !== 'export') throw new InvalidInputError('subcommand', `must be "export", got ${positionals[0] === undefined ? 'none' : `"${positionals[0]}"`}`);
    if (positionals.length !== 2) throw new InvalidInputError('ZONE', 'exactly one zone is required: dnsplane zone export ZONE');
    const { baseUrl, token } = resolveServer({ server: values.server, tokenFile: values['token-file'] }, io.env);
    const res = await connectClient(AdminService, baseUrl, token).exportZone({ zone: positionals[1]!, includeOwners: values.owner ?? false });
    const file = values['output-file'];
    if (file === undefined) {
      io.out(res.zoneFile.replace(/\n$/, ''));
      return 0;
    }
    try {
      writeFileSync(file, res.zoneFile, { mode: 0o644 });
    } catch (e) {
      throw new InvalidInputError('--output-file', `cannot write "${file}": ${(e as Error).message}`);
    }
    io.err(`dnsplane zone export: ${res.zone} at generation ${res.generation}: ${res.recordCount} records written to ${file}`);
    return 0;
  },
};
