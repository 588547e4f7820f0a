/**
 * `dnsplane zone export ZONE`: a zone as an RFC 1035 zone file, from a running dnsplane's cache
 * (AdminService.ExportZone: an admin token; 0 OVH calls), on stdout or into a file.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { InvalidInputError } from '../dns/errors.js';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { AdminService } from '../gen/dnsplane/v1/admin_pb.js';
import { connectClient, resolveServer, SERVER_OPTIONS_HELP } from './client.js';
import type { CliIo, Command } from './command.js';
import { table } from './text.js';

const HELP = `Usage: dnsplane zone export ZONE [--owner] [--output-file FILE]
       dnsplane zone at ZONE (--generation N | --time T) [--output-file FILE]
       dnsplane zone protect ZONE NAME... [--suffix]
       dnsplane zone unprotect ZONE NAME...
       dnsplane zone protected [ZONE]

Prints ZONE as an RFC 1035 zone file, from dnsplane's cache at the zone's current generation: every
record, whoever owns it (and records of types dnsplane does not manage), as OVH stores them; the SOA
the DNS door serves (serial = the generation); a record without a TTL is at the zone default (3600).
No OVH call is made. Needs an admin token.

"dnsplane plan --zone-file FILE --as TENANT" reads such a file back as TENANT's desired state: a zone
exported and read back plans no change.

zone at: the zone as it was at generation N, or at time T (RFC 3339, e.g. 2026-12-03T14:00:00Z), in the
same form, from the journal: the cache with every apply since undone, newest first (what each touched
put back to what it held just before). Changes made outside dnsplane and read back since are named in
the header, not undone. To go back to it: "dnsplane plan --zone-file FILE --as TENANT", or
"dnsplane journal revert ID" for one apply.

zone protect: marks names of ZONE protected (absolute names, "@" for the apex; --suffix: each name and
every name below it). A plan that changes a record set there is refused, whatever its size and with
--force too, until an admin other than the one who asked approves it (dnsplane plan approve PLAN_ID).
zone unprotect lifts it; zone protected lists them. Each change is journaled.

  --owner               each record's owner as a comment: "; owner team1", "; owner team1 (shared)"
                        for a tenant's target of a shared set, "; no owner"
  --output-file FILE    write the zone file to FILE (mode 0644) instead of stdout
  --generation N        zone at: the zone at this generation (ListZones, the SOA serial of an export)
  --time T              zone at: the zone at this time
  --suffix              zone protect: the names and every name below them
${SERVER_OPTIONS_HELP}`;

/** zone protect / unprotect / protected, through AdminService. */
async function protection(
  sub: string,
  values: { suffix?: boolean; server?: string; 'token-file'?: string; [flag: string]: unknown },
  positionals: string[],
  io: CliIo,
): Promise<number> {
  for (const flag of ['owner', 'output-file', 'generation', 'time']) {
    if (values[flag] !== undefined)
      throw new InvalidInputError(`--${flag}`, `belongs to "dnsplane zone export" or "dnsplane zone at", not "dnsplane zone ${sub}"`);
  }
  const [zone, ...names] = positionals.slice(1);
  if (sub !== 'protected' && (zone === undefined || names.length === 0))
    throw new InvalidInputError('NAME', `a zone and at least one name are required: dnsplane zone ${sub} ZONE NAME...`);
  if (sub === 'protected' && names.length > 0) throw new InvalidInputError('arguments', `unexpected "${names[0]}": at most one ZONE`);
  if (values.suffix && sub !== 'protect') throw new InvalidInputError('--suffix', 'belongs to "dnsplane zone protect"');
  const { baseUrl, token } = resolveServer({ server: values.server, tokenFile: values['token-file'] }, io.env);
  const client = connectClient(AdminService, baseUrl, token);
  const res =
    sub === 'protect'
      ? await client.protectNames({ zone: zone!, names, suffix: values.suffix ?? false })
      : sub === 'unprotect'
        ? await client.unprotectNames({ zone: zone!, names })
        : await client.listProtectedNames({ zone: zone ?? '' });
  if (res.names.length === 0) {
    io.out(zone ? `no protected name in zone ${zone}` : 'no protected name');
    return 0;
  }
  const rows = [['ZONE', 'NAME', 'BELOW TOO', 'SINCE', 'BY']];
  for (const p of res.names)
    rows.push([p.zone, p.name, p.suffix ? 'yes' : 'no', p.createdAt ? timestampDate(p.createdAt).toISOString() : '-', p.createdBy || '-']);
  for (const line of table(rows)) io.out(line);
  return 0;
}

export const zoneCommand: Command = {
  summary:
    'a zone as a zone file: dnsplane zone export ZONE [--owner], or as it was: dnsplane zone at ZONE --generation N|--time T; protected names: dnsplane zone protect ZONE NAME...',
  help: HELP,
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      options: {
        owner: { type: 'boolean' },
        'output-file': { type: 'string' },
        generation: { type: 'string' },
        time: { type: 'string' },
        suffix: { type: 'boolean' },
        server: { type: 'string' },
        'token-file': { type: 'string' },
      },
      allowPositionals: true,
      strict: true,
    });
    const sub = positionals[0];
    if (sub === 'protect' || sub === 'unprotect' || sub === 'protected') return protection(sub, values, positionals, io);
    if (values.suffix) throw new InvalidInputError('--suffix', 'belongs to "dnsplane zone protect"');
    if (sub !== 'export' && sub !== 'at')
      throw new InvalidInputError(
        'subcommand',
        `must be "export", "at", "protect", "unprotect" or "protected", got ${sub === undefined ? 'none' : `"${sub}"`}`,
      );
    if (positionals.length !== 2) throw new InvalidInputError('ZONE', `exactly one zone is required: dnsplane zone ${sub} ZONE`);
    const at: { atGeneration?: bigint; atTime?: ReturnType<typeof timestampFromDate> } = {};
    if (sub === 'at') {
      if ((values.generation === undefined) === (values.time === undefined))
        throw new InvalidInputError('--generation', 'zone at needs exactly one of --generation N or --time T');
      if (values.owner) throw new InvalidInputError('--owner', 'owners are known for the zone as it is now only (dnsplane zone export --owner)');
      if (values.generation !== undefined) {
        if (!/^\d+$/.test(values.generation)) throw new InvalidInputError('--generation', `must be a generation number, got "${values.generation}"`);
        at.atGeneration = BigInt(values.generation);
      } else {
        const t = new Date(values.time!);
        if (!/^\d{4}-\d\d-\d\dT/.test(values.time!) || Number.isNaN(t.getTime()))
          throw new InvalidInputError('--time', `must be an RFC 3339 time like 2026-12-03T14:00:00Z, got "${values.time}"`);
        at.atTime = timestampFromDate(t);
      }
    } else if (values.generation !== undefined || values.time !== undefined) {
      throw new InvalidInputError(values.generation !== undefined ? '--generation' : '--time', 'belongs to "dnsplane zone at"');
    }
    const { baseUrl, token } = resolveServer({ server: values.server, tokenFile: values['token-file'] }, io.env);
    const res = await connectClient(AdminService, baseUrl, token).exportZone({ zone: positionals[1]!, includeOwners: values.owner ?? false, ...at });
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
    io.err(`dnsplane zone ${sub}: ${res.zone} at generation ${res.generation}: ${res.recordCount} records written to ${file}`);
    return 0;
  },
};
